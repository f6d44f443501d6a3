"""StreamableHttpUpstream against a scripted raw aiohttp server: resumption, pools, releasing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from aiohttp import web
from raw_sse_server import event, hold_open, notification, raw_server, result, sse_open

from gateway.errors import (
    UPSTREAM_FAILED,
    UPSTREAM_STREAM_LOST,
    UPSTREAM_UNREACHABLE,
    UpstreamFailure,
    UpstreamSessionGone,
)
from gateway.upstream.resume import ResumePolicy
from gateway.upstream.streamable_http import StreamableHttpUpstream

pytestmark = pytest.mark.anyio

REQ = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}'
FAST = ResumePolicy(max_attempts=2, max_resumes=20, default_retry_seconds=0.01, max_retry_seconds=0.05)
PROGRESS = notification("notifications/progress", {"progressToken": 1, "progress": 0.5})
ASK = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {"message": "hi"}}


def upstream(url: str, **kw: Any) -> StreamableHttpUpstream:
    kw.setdefault("resume", FAST)
    return StreamableHttpUpstream("raw", url, {}, **kw)


async def collect(up: StreamableHttpUpstream, **kw: Any) -> tuple[list[Any], Any]:
    async with up.post(REQ, session_id="s-1", protocol_version="2025-11-25", **kw) as reply:
        return [m async for m in reply.messages], reply


async def test_post_reply_primed_and_closed_is_resumed_with_last_event_id() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if request.method == "POST":
            await resp.write(event(id="e1", retry=10) + event(PROGRESS, id="e2"))
            return resp  # closed before the answer
        assert request.headers["Last-Event-ID"] == "e2"
        await resp.write(event(id="e3") + event(ASK, id="e4") + event(result(7, {"ok": True}), id="e5"))
        return await hold_open(resp)  # a replayed stream stays open after the answer, as the SDK's does

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, reply = await collect(up)
            assert messages == [PROGRESS, ASK, result(7, {"ok": True})]
            assert (reply.resumed, reply.last_event_id, reply.retry_ms) == (1, "e5", 10)
            [get] = srv.gets()
            assert get["Mcp-Session-Id"] == "s-1"
            assert get["MCP-Protocol-Version"] == "2025-11-25"
            assert get["Accept"] == "text/event-stream"
            await srv.wait_connections(1)  # the held-open replay stream was closed, the POST's kept alive
            assert up.requests.in_use == 0
        finally:
            await up.close()


async def test_stream_that_breaks_mid_event_is_resumed() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if request.method == "POST":
            await resp.write(event(PROGRESS, id="e1") + b"data: {\"half")
            assert request.transport is not None
            request.transport.close()  # the connection breaks inside an event
            return resp
        await resp.write(event(result(7, "done"), id="e2"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, _reply = await collect(up)
            assert messages == [PROGRESS, result(7, "done")]
            assert srv.gets()[0]["Last-Event-ID"] == "e1"
        finally:
            await up.close()


async def test_no_event_id_means_no_resumption_as_before() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(PROGRESS))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, reply = await collect(up)
            assert messages == [PROGRESS] and reply.resumed == 0 and srv.gets() == []
        finally:
            await up.close()


async def test_answered_stream_is_not_resumed() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(id="p") + event(result(7, 1), id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, _ = await collect(up)
            assert messages == [result(7, 1)] and srv.gets() == []
        finally:
            await up.close()


async def test_bound_failed_reopens_in_a_row() -> None:
    """Tried: every GET answers 503. Expect max_attempts GETs, then a clear UpstreamFailure."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.Response(status=503)
        resp = await sse_open(request)
        await resp.write(event(id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            with pytest.raises(UpstreamFailure, match="ended before its answer; resuming with Last-Event-ID failed"):
                await collect(up)
            assert len(srv.gets()) == FAST.max_attempts
            assert up.requests.in_use == 0
        finally:
            await up.close()


async def test_bound_reopens_that_bring_nothing_new_count_as_failures() -> None:
    """Tried: every GET opens a stream and closes it at once with no new event id."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if request.method == "POST":
            await resp.write(event(id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            with pytest.raises(UpstreamFailure, match="failed in a row"):
                await collect(up)
            assert len(srv.gets()) == FAST.max_attempts
        finally:
            await up.close()


async def test_bound_total_reopens() -> None:
    """Tried: every GET brings a fresh event id and closes (progress forever). Expect max_resumes GETs."""
    count = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal count
        count += 1
        resp = await sse_open(request)
        await resp.write(event(id=f"e{count}"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url, resume=ResumePolicy(max_attempts=2, max_resumes=5, default_retry_seconds=0))
        try:
            with pytest.raises(UpstreamFailure, match="5 reopens"):
                await collect(up)
            assert len(srv.gets()) == 5
        finally:
            await up.close()


async def test_bound_server_retry_is_capped() -> None:
    """Tried: the server asks for a 10-minute retry. Expect the capped wait (50 ms)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if request.method == "POST":
            await resp.write(event(id="e1", retry=600_000))
        else:
            await resp.write(event(result(7, 1), id="e2"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            started = time.monotonic()
            messages, _ = await collect(up)
            assert messages == [result(7, 1)]
            assert time.monotonic() - started < 2
        finally:
            await up.close()


@pytest.mark.parametrize(("status", "error", "text"), [
    (405, UpstreamFailure, "does not allow resuming it"),
    (404, UpstreamSessionGone, "initialize again"),
])
async def test_resume_refused(status: int, error: type[Exception], text: str) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.Response(status=status)
        resp = await sse_open(request)
        await resp.write(event(id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            with pytest.raises(error, match=text):
                await collect(up)
        finally:
            await up.close()


async def test_resume_off_when_max_attempts_is_zero() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url, resume=ResumePolicy(max_attempts=0))
        try:
            messages, _reply = await collect(up)
            assert messages == [] and srv.gets() == []
        finally:
            await up.close()


async def test_standalone_stream_exposes_last_event_id_and_reopens_with_it() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if "Last-Event-ID" not in request.headers:
            await resp.write(event(id="g0", retry=250) + event(PROGRESS, id="g1") + b"id: g2\r\n\r\n")
        else:
            await resp.write(event(ASK, id="g3"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            async with up.open_stream(session_id="s-1", protocol_version="2025-11-25") as reply:
                assert [m async for m in reply.messages] == [PROGRESS]
            assert (reply.last_event_id, reply.retry_ms) == ("g2", 250)
            async with up.open_stream(
                session_id="s-1", protocol_version="2025-11-25", last_event_id=reply.last_event_id
            ) as again:
                assert [m async for m in again.messages] == [ASK]
            assert srv.gets()[1]["Last-Event-ID"] == "g2"
            assert again.last_event_id == "g3"
        finally:
            await up.close()


# -- pools --------------------------------------------------------------------


async def test_requests_do_not_queue_behind_streams_and_an_exhausted_pool_fails_fast() -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        if request.method == "GET":
            return await hold_open(resp)
        if b"slow" in await request.read():
            await release.wait()
        await resp.write(event(result(7, 1)))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url, max_connections=1, max_streams=3, acquire_timeout=0.2)
        try:
            async with up.open_stream(session_id="s-1", protocol_version=None), \
                    up.open_stream(session_id="s-1", protocol_version=None), \
                    up.open_stream(session_id="s-1", protocol_version=None):
                # Three idle streams fill the stream pool; a request still goes through at once.
                fast = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
                async with up.post(fast, session_id="s-1", protocol_version=None) as reply:
                    assert [m async for m in reply.messages] == [result(7, 1)]
                # A fourth stream fails fast with a clear message.
                started = time.monotonic()
                with pytest.raises(UpstreamFailure, match=r"all 3 stream connections stayed busy for 0\.2s"):
                    async with up.open_stream(session_id="s-1", protocol_version=None):
                        pass
                assert time.monotonic() - started < 1
                # One slow request holds the only request slot: the next fails fast.
                async with up.post(REQ, session_id="s-1", protocol_version=None) as slow:
                    with pytest.raises(UpstreamFailure, match="all 1 request connections stayed busy") as exc:
                        async with up.post(fast, session_id="s-1", protocol_version=None):
                            pass
                    assert exc.value.status == 503
                    release.set()
                    assert [m async for m in slow.messages] == [result(7, 1)]
            assert up.requests.in_use == 0 and up.streams.in_use == 0
        finally:
            await up.close()


# -- releasing ------------------------------------------------------------------


async def test_leaving_a_post_reply_early_closes_the_connection() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(PROGRESS, id="e1"))
        return await hold_open(resp)

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            async with up.post(REQ, session_id="s-1", protocol_version=None) as reply:
                assert await anext(reply.messages) == PROGRESS
                assert srv.connections == 1
            await srv.wait_connections(0)  # the server saw the client leave
            assert up.requests.in_use == 0
        finally:
            await up.close()


async def test_leaving_during_a_resume_wait_closes_everything() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(PROGRESS, id="e1", retry=10_000))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url, resume=ResumePolicy(max_retry_seconds=30))
        try:
            async def consume() -> None:
                async with up.post(REQ, session_id="s-1", protocol_version=None) as reply:
                    async for _ in reply.messages:
                        pass

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.2)  # now waiting the server's retry
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert up.requests.in_use == 0 and srv.gets() == []
        finally:
            await up.close()


async def test_leaving_a_standalone_stream_early_closes_the_connection() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(PROGRESS, id="g1"))
        return await hold_open(resp)

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            async with up.open_stream(session_id="s-1", protocol_version=None) as reply:
                assert await anext(reply.messages) == PROGRESS
                assert srv.connections == 1
            await srv.wait_connections(0)
            assert up.streams.in_use == 0
        finally:
            await up.close()


async def test_json_replies_reuse_their_connection() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(result(7, 1), headers={"Mcp-Session-Id": "s-1"})

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            for _ in range(5):
                async with up.post(REQ, session_id="s-1", protocol_version=None) as reply:
                    assert [m async for m in reply.messages] == [result(7, 1)]
            assert srv.connections == 1  # one keep-alive connection served all five
        finally:
            await up.close()


# -- replies outside the happy path ------------------------------------------------


async def test_large_json_body_in_many_pieces_is_read_whole() -> None:
    big = result(7, {"blob": "x" * 2_000_000})

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        raw = orjson.dumps(big)
        for i in range(0, len(raw), 65536):
            await resp.write(raw[i : i + 65536])
            await asyncio.sleep(0)
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, _ = await collect(up)
            assert messages == [big]
        finally:
            await up.close()


@pytest.mark.parametrize(("body", "ctype", "status", "code", "text"), [
    (b"x" * 5000, "application/json", 200, UPSTREAM_FAILED, "JSON body over 4096 bytes"),
    (b"{nope", "application/json", 200, UPSTREAM_FAILED, "malformed JSON"),
    (b"<html>", "text/html", 200, UPSTREAM_FAILED, "content type 'text/html'"),
    (b"oops", "text/plain", 500, UPSTREAM_FAILED, "answered HTTP 500"),
    (orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m" * 70_000}}),
     "application/json", 400, UPSTREAM_FAILED, "answered HTTP 400"),
])
async def test_bad_replies_are_upstream_failures(body: bytes, ctype: str, status: int, code: int, text: str) -> None:
    """Tried: an oversized JSON body (4 KiB bound), malformed JSON, an unknown content type, a bare 500,
    a JSON-RPC error body over the 64 KiB error-body bound (not relayed: the status is reported instead)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, status=status, headers={"Content-Type": ctype})

    async with raw_server(handler) as srv:
        up = upstream(srv.url, max_json_bytes=4096)
        try:
            with pytest.raises(UpstreamFailure, match=text) as exc:
                await collect(up)
            assert exc.value.code == code
        finally:
            await up.close()


async def test_jsonrpc_error_body_at_4xx_is_relayed() -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(error, status=400)

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            messages, reply = await collect(up)
            assert reply.status == 400 and messages == [error]
        finally:
            await up.close()


@pytest.mark.parametrize(("payload", "code", "text"), [
    (b"data: {broken\n\n", UPSTREAM_FAILED, "malformed JSON on its stream"),
    (b"data: yyyy\n" * 500 + b"\n", UPSTREAM_STREAM_LOST, "SSE event larger than 1024 bytes"),
    (b"id: " + b"i" * 9000 + b"\n", UPSTREAM_STREAM_LOST, "SSE id field longer than 8192 bytes"),
])
async def test_bad_sse_is_an_upstream_failure(payload: bytes, code: int, text: str) -> None:
    """Tried: malformed JSON in an event, 500 short data lines (1 KiB event bound set here), a 9000-byte id."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(payload)
        return await hold_open(resp)

    async with raw_server(handler) as srv:
        up = upstream(srv.url, max_event_bytes=1024 * 16 if b"id: " in payload else 1024)
        try:
            with pytest.raises(UpstreamFailure, match=text) as exc:
                await collect(up)
            assert exc.value.code == code
            await srv.wait_connections(0)  # the connection was closed, not left streaming
        finally:
            await up.close()


async def test_resume_answered_with_json_counts_as_a_failed_attempt() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.json_response({"not": "sse"})
        resp = await sse_open(request)
        await resp.write(event(id="e1"))
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            with pytest.raises(UpstreamFailure, match="2 failed in a row"):
                await collect(up)
            assert len(srv.gets()) == FAST.max_attempts
        finally:
            await up.close()


async def test_unreachable_server() -> None:
    async with raw_server(lambda request: hold_open(web.StreamResponse())) as srv:
        url = srv.url
    up = upstream(url)  # the server is gone: nothing listens on that port now
    try:
        with pytest.raises(UpstreamFailure, match="is unreachable") as exc:
            await collect(up)
        assert exc.value.code == UPSTREAM_UNREACHABLE
        assert up.requests.in_use == 0
    finally:
        await up.close()


async def test_standalone_stream_that_breaks_keeps_its_last_event_id() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_open(request)
        await resp.write(event(PROGRESS, id="g7") + b"data: {\"cut")
        assert request.transport is not None
        request.transport.close()
        return resp

    async with raw_server(handler) as srv:
        up = upstream(srv.url)
        try:
            async with up.open_stream(session_id="s-1", protocol_version=None) as reply:
                got = []
                with pytest.raises(UpstreamFailure, match="broke") as exc:
                    async for message in reply.messages:
                        got.append(message)
            assert exc.value.code == UPSTREAM_STREAM_LOST
            assert got == [PROGRESS] and reply.last_event_id == "g7"
        finally:
            await up.close()
