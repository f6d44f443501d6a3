"""LegacySseUpstream against a scripted raw HTTP+SSE server (2024-11-05): the edges the SDK server does not
reach on demand. Endpoint origin checks, bounds, and reconnecting a lost stream (the session's initialize
replayed). The SDK server itself is in the contract suite and the end-to-end tests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from gateway.errors import UPSTREAM_STREAM_LOST, UpstreamFailure, UpstreamSessionGone
from gateway.upstream.legacy_sse import LegacySseUpstream, origin
from gateway.upstream.restart import RestartPolicy

pytestmark = pytest.mark.anyio

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}'
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
FAST = RestartPolicy(backoff_base_seconds=0.01, backoff_max_seconds=0.05, max_attempts=3)


def call(rid: int, name: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name}})


@dataclass
class Sse:
    """GET /sse opens a session (an endpoint event, then whatever `out` receives); POST /messages/?s=N records the
    message, answers 202 and lets `react` put replies on the session's stream."""

    endpoint: Callable[[int, int], str] = lambda port, n: f"/messages/?s={n}"
    react: Callable[[Sse, int, Any], None] | None = None
    refuse_gets: int = 0
    """Answer GETs with this status (a 307 points at /elsewhere)."""
    silent: bool = False
    """Open the stream but send no endpoint event (a comment only)."""
    post_status: int = 202
    port: int = 0
    sessions: dict[int, asyncio.Queue[bytes | None]] = field(default_factory=dict)
    received: list[tuple[int, Any]] = field(default_factory=list)
    headers: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def send(self, n: int, message: Any) -> None:
        self.sessions[n].put_nowait(b"event: message\r\ndata: " + orjson.dumps(message) + b"\r\n\r\n")

    def raw(self, n: int, chunk: bytes) -> None:
        self.sessions[n].put_nowait(chunk)

    def close(self, n: int) -> None:
        self.sessions[n].put_nowait(None)

    async def get(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(("GET", dict(request.headers)))
        if self.refuse_gets:
            return web.Response(status=self.refuse_gets, headers={"Location": "/elsewhere"})
        n = next(self._ids)
        queue = self.sessions[n] = asyncio.Queue()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if self.silent:
            await resp.write(b": nothing yet\n\n")
        else:
            await resp.write(f"event: endpoint\r\ndata: {self.endpoint(self.port, n)}\r\n\r\n".encode())
        while (chunk := await queue.get()) is not None:
            await resp.write(chunk)
        return resp

    async def post(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(("POST", dict(request.headers)))
        n = int(request.query["s"])
        if n not in self.sessions:
            return web.Response(status=404)
        message = orjson.loads(await request.read())
        if self.post_status != 202:
            return web.Response(status=self.post_status)
        self.received.append((n, message))
        (self.react or answer)(self, n, message)
        return web.Response(status=202, text="Accepted")


def answer(server: Sse, n: int, message: Any) -> None:
    """initialize and tools/call answered; `hang` never answered."""
    if message.get("method") == "initialize":
        server.send(n, {"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2024-11-05"}})
    elif message.get("method") == "tools/call" and message["params"]["name"] != "hang":
        server.send(n, {"jsonrpc": "2.0", "id": message["id"], "result": {"session": n}})


@asynccontextmanager
async def serving(server: Sse) -> AsyncIterator[Sse]:
    app = web.Application()
    app.router.add_get("/sse", server.get)
    app.router.add_post("/messages/", server.post)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.port = runner.addresses[0][1]
    try:
        yield server
    finally:
        for queue in server.sessions.values():
            queue.put_nowait(None)
        await runner.cleanup()


@asynccontextmanager
async def connector(server: Sse, **kw: Any) -> AsyncIterator[LegacySseUpstream]:
    up = LegacySseUpstream("legacy", server.url, {"Authorization": "Bearer upstream-token"}, **kw)
    await up.start()
    try:
        yield up
    finally:
        await up.close()


async def initialize(up: LegacySseUpstream) -> str:
    async with up.post(INIT, session_id=None, protocol_version=None) as reply:
        [first, *_] = [m async for m in reply.messages]
        assert first["result"]["protocolVersion"] == "2024-11-05"
    assert reply.session_id is not None
    async with up.post(INITIALIZED, session_id=reply.session_id, protocol_version=None) as note:
        assert note.status == 202
    return reply.session_id


async def read(up: LegacySseUpstream, sid: str, body: bytes) -> list[Any]:
    async with up.post(body, session_id=sid, protocol_version=None) as reply:
        return [m async for m in reply.messages]


def test_origin_of_urls() -> None:
    assert origin("http://127.0.0.1/sse") == ("http", "127.0.0.1", 80)
    assert origin("HTTPS://Example.COM:443/x") == ("https", "example.com", 443)
    assert origin("http://user@example.com/x") is None
    assert origin("ftp://example.com/x") is None
    assert origin("http://[::1:bad/x") is None


@pytest.mark.parametrize("endpoint", [
    "http://127.0.0.2:{port}/messages/?s={n}",  # another host
    "http://127.0.0.1:1/messages/?s={n}",  # another port
    "https://127.0.0.1:{port}/messages/?s={n}",  # another scheme
    "//evil.example/messages/?s={n}",  # scheme-relative: another host
    "http://user@127.0.0.1:{port}/messages/?s={n}",  # credentials in the URL
    "javascript:alert(1)",
])
async def test_an_endpoint_on_another_origin_is_refused_and_nothing_is_posted(endpoint: str) -> None:
    async with serving(Sse(endpoint=lambda port, n: endpoint.format(port=port, n=n))) as server, \
            connector(server) as up:
        with capture_logs() as logs, pytest.raises(UpstreamFailure, match="named a message endpoint on another origin"):
            await initialize(up)
        assert server.received == [] and [v for v, _ in server.headers] == ["GET"]
        assert up.session_ids == []
    [refused] = [e for e in logs if e["event"] == "upstream.endpoint_refused"]
    assert "messages" not in refused["endpoint_origin"] and "s=" not in refused["endpoint_origin"]


async def test_a_later_endpoint_event_does_not_move_the_session() -> None:
    async with serving(Sse()) as server, connector(server) as up:
        sid = await initialize(up)
        server.raw(1, f"event: endpoint\ndata: http://127.0.0.1:{server.port}/messages/?s=99\n\n".encode())
        assert (await read(up, sid, call(1, "echo")))[-1]["result"] == {"session": 1}
        assert [n for n, _ in server.received] == [1, 1, 1]


async def test_other_event_types_and_data_that_is_not_json_are_skipped() -> None:
    def noisy(server: Sse, n: int, message: Any) -> None:
        if message.get("method") == "tools/call":
            server.raw(n, b"event: ping\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
            server.raw(n, b"data: not json\n\n")
        answer(server, n, message)

    async with serving(Sse(react=noisy)) as server, connector(server) as up:
        sid = await initialize(up)
        with capture_logs() as logs:
            assert await read(up, sid, call(1, "echo")) == [{"jsonrpc": "2.0", "id": 1, "result": {"session": 1}}]
    assert [e["event"] for e in logs] == ["upstream.sse_malformed"]


async def test_same_origin_endpoint_gets_messages_with_the_server_headers() -> None:
    absolute = "http://127.0.0.1:{port}/messages/?s={n}"
    async with serving(Sse(endpoint=lambda port, n: absolute.format(port=port, n=n))) as server, \
            connector(server) as up:
        sid = await initialize(up)
        assert (await read(up, sid, call(1, "echo")))[-1]["result"] == {"session": 1}
    assert [v for v, _ in server.headers] == ["GET", "POST", "POST", "POST"]
    assert all(h["Authorization"] == "Bearer upstream-token" for _, h in server.headers)
    assert not any({"Mcp-Session-Id", "MCP-Protocol-Version"} & set(h) for _, h in server.headers)
    assert server.headers[0][1]["Accept"] == "text/event-stream"


async def test_no_endpoint_event_in_time_fails_the_first_post() -> None:
    async with serving(Sse(silent=True)) as server, connector(server, connect_timeout=0.3) as up:
        with pytest.raises(UpstreamFailure, match=r"sent no endpoint event within 0\.3s"):
            await initialize(up)


@pytest.mark.parametrize("status", [503, 307])
async def test_a_get_answered_without_an_event_stream_fails_the_first_post(status: int) -> None:
    async with serving(Sse(refuse_gets=status)) as server, connector(server) as up:
        with pytest.raises(UpstreamFailure, match=f"answered its SSE GET with HTTP {status}"):
            await initialize(up)
        assert [v for v, _ in server.headers] == ["GET"]  # a redirect is not followed


async def test_bound_an_event_over_max_event_bytes_ends_the_stream_and_fails_calls_in_flight() -> None:
    """Tried: a 5000-byte data line with a 1024-byte event bound, while a call waits for its answer."""
    async with serving(Sse()) as server, connector(server, max_event_bytes=1024, restart=FAST) as up:
        sid = await initialize(up)
        async with up.post(call(1, "hang"), session_id=sid, protocol_version=None) as reply:
            server.raw(1, b"event: message\ndata: " + b"x" * 5000 + b"\n\n")
            with pytest.raises(UpstreamFailure, match="SSE line longer than 1024 bytes") as lost:
                async for _ in reply.messages:
                    pass
        assert lost.value.code == UPSTREAM_STREAM_LOST


async def test_a_lost_stream_is_reconnected_the_session_initialized_again_and_later_calls_work() -> None:
    async with serving(Sse()) as server, connector(server, restart=FAST) as up:
        sid = await initialize(up)
        async with up.post(call(1, "hang"), session_id=sid, protocol_version=None) as reply:
            server.close(1)  # the server drops the stream while the call waits
            with pytest.raises(UpstreamFailure, match="event stream of server 'legacy' ended") as lost:
                async for _ in reply.messages:
                    pass
        assert lost.value.code == UPSTREAM_STREAM_LOST
        assert (await read(up, sid, call(2, "echo")))[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"session": 2}}
        replayed = [m for n, m in server.received if n == 2]
        assert [m.get("method") for m in replayed] == ["initialize", "notifications/initialized", "tools/call"]
        assert orjson.dumps(replayed[0]) == orjson.dumps(orjson.loads(INIT))
        session = up.session(sid)
        assert session is not None and session.restarts == 1


async def test_bound_reconnects_give_up_after_max_attempts_and_the_session_is_gone() -> None:
    async with serving(Sse()) as server, connector(server, restart=FAST) as up:
        sid = await initialize(up)
        server.refuse_gets = 503
        server.close(1)
        async with asyncio.timeout(5):
            while up.session(sid) is not None:
                await asyncio.sleep(0.01)
        with pytest.raises(UpstreamSessionGone):
            await read(up, sid, call(2, "echo"))
        assert [v for v, _ in server.headers].count("GET") == 1 + FAST.max_attempts


@pytest.mark.parametrize("after", ["another version", "no answer"])
async def test_a_server_that_answers_initialize_differently_after_a_reconnect_is_given_up(after: str) -> None:
    def other_version(server: Sse, n: int, message: Any) -> None:
        if n > 1 and message.get("method") == "initialize":
            if after == "another version":
                server.send(n, {"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-03-26"}})
        else:
            answer(server, n, message)

    async with serving(Sse(react=other_version)) as server, \
            connector(server, restart=FAST, connect_timeout=0.2) as up:
        sid = await initialize(up)
        server.close(1)
        async with asyncio.timeout(5):
            while up.session(sid) is not None:
                await asyncio.sleep(0.01)
        assert len(server.sessions) == 1 + FAST.max_attempts


async def test_a_sessionless_request_that_is_not_initialize_gets_a_stream_of_its_own_closed_after() -> None:
    async with serving(Sse()) as server, connector(server) as up:
        async with up.post(call(7, "echo"), session_id=None, protocol_version=None) as reply:
            assert [m async for m in reply.messages][-1]["id"] == 7
        assert up.session_ids == []


async def test_server_messages_outside_a_call_reach_the_standalone_stream() -> None:
    async with serving(Sse()) as server, connector(server) as up:
        sid = await initialize(up)
        async with up.open_stream(session_id=sid, protocol_version=None) as stream:
            server.send(1, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            async with asyncio.timeout(2):
                first = await anext(stream.messages)
        assert first["method"] == "notifications/tools/list_changed"


async def test_a_post_refused_by_the_server_is_an_upstream_failure() -> None:
    async with serving(Sse()) as server, connector(server) as up:
        sid = await initialize(up)
        server.post_status = 400
        with pytest.raises(UpstreamFailure, match="answered HTTP 400 to a message"):
            await read(up, sid, call(3, "echo"))
