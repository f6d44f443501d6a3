"""InMemoryUpstream: the handler's answers map to replies and errors exactly as the real connectors do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from gateway.core.raw_json import RawJson
from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure, UpstreamSessionGone
from gateway.upstream.connector import Upstream
from gateway.upstream.in_memory import Event, InMemoryUpstream, JsonReply, SseReply, Status, UpstreamCall

pytestmark = pytest.mark.anyio

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'


def ok(rid: Any, value: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value or {}}


async def read(up: Upstream, body: bytes, sid: str | None = "s1") -> tuple[Any, list[Any]]:
    async with up.post(body, session_id=sid, protocol_version="2025-11-25") as reply:
        return reply, [m async for m in reply.messages]


async def test_json_reply_carries_session_id_and_raw_json() -> None:
    up = InMemoryUpstream("mem", lambda call: JsonReply(ok(call.body["id"]), session_id="s1"))
    reply, messages = await read(up, INIT, sid=None)
    assert (reply.status, reply.session_id, reply.streaming) == (200, "s1", False)
    assert messages == [ok(1)] and type(messages[0]) is RawJson
    assert up.calls == [UpstreamCall("POST", orjson.loads(INIT), None, "2025-11-25")]


async def test_async_handler_and_accepted_notification() -> None:
    async def handler(call: UpstreamCall) -> Status:
        return Status(202)

    reply, messages = await read(InMemoryUpstream("mem", handler), b'{"jsonrpc":"2.0","method":"n"}')
    assert (reply.status, messages) == (202, [])


@pytest.mark.parametrize(("answer", "sid", "error", "text"), [
    (Status(404), "s1", UpstreamSessionGone, "initialize again"),
    (Status(404), None, UpstreamFailure, "answered HTTP 404"),
    (Status(503), "s1", UpstreamFailure, "answered HTTP 503"),
])
async def test_statuses_map_to_errors(answer: Status, sid: str | None, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        await read(InMemoryUpstream("mem", lambda call: answer), CALL, sid=sid)


async def test_handler_raising_os_error_is_unreachable() -> None:
    def handler(call: UpstreamCall) -> Status:
        raise ConnectionRefusedError

    with pytest.raises(UpstreamFailure) as exc:
        await read(InMemoryUpstream("mem", handler), CALL)
    assert exc.value.code == UPSTREAM_UNREACHABLE


async def test_get_405_is_a_reply_not_an_error() -> None:
    up = InMemoryUpstream("mem", lambda call: Status(405))
    async with up.open_stream(session_id="s1", protocol_version=None, last_event_id="e9") as reply:
        assert reply.status == 405 and [m async for m in reply.messages] == []
    assert up.calls[0].last_event_id == "e9"


async def test_sse_early_close_is_resumed_with_last_event_id() -> None:
    def handler(call: UpstreamCall) -> SseReply:
        if call.verb == "POST":
            return SseReply([Event(id="p1", retry=0), Event({"jsonrpc": "2.0", "method": "progress"}, id="p2")])
        assert call.last_event_id == "p2" and call.session_id == "s1"
        return SseReply([Event(ok(2), id="p3"), Event({"jsonrpc": "2.0", "method": "never read"}, id="p4")])

    up = InMemoryUpstream("mem", handler)
    reply, messages = await read(up, CALL)
    assert messages == [{"jsonrpc": "2.0", "method": "progress"}, ok(2)]
    assert (reply.resumed, reply.last_event_id) == (1, "p3")
    assert [c.verb for c in up.calls] == ["POST", "GET"]


async def test_sse_break_without_event_id_fails() -> None:
    up = InMemoryUpstream("mem", lambda call: SseReply([{"jsonrpc": "2.0", "method": "n"}], then="break"))
    with pytest.raises(UpstreamFailure) as exc:
        await read(up, CALL)
    assert exc.value.code == UPSTREAM_STREAM_LOST


async def test_resumption_is_bounded() -> None:
    """Tried: every GET answers 503 after a primed, closed POST stream."""

    def handler(call: UpstreamCall) -> SseReply | Status:
        return SseReply([Event(id="p1")]) if call.verb == "POST" else Status(503)

    up = InMemoryUpstream("mem", handler)
    with pytest.raises(UpstreamFailure, match="failed in a row"):
        await read(up, CALL)
    assert [c.verb for c in up.calls].count("GET") == up.resume.max_attempts


async def test_leaving_early_closes_the_handlers_stream() -> None:
    closed = []

    async def events() -> AsyncIterator[Any]:
        try:
            yield {"jsonrpc": "2.0", "method": "first"}
            yield {"jsonrpc": "2.0", "method": "second"}
        finally:
            closed.append(True)

    up = InMemoryUpstream("mem", lambda call: SseReply(events()))
    async with up.post(CALL, session_id="s1", protocol_version=None) as reply:
        assert up.open_replies == 1
        await anext(reply.messages)
    assert up.open_replies == 0 and closed == [True]


async def test_delete_reaches_the_handler() -> None:
    up = InMemoryUpstream("mem", lambda call: Status(202))
    await up.end_session(session_id="s1", protocol_version="2025-11-25")
    assert up.calls == [UpstreamCall("DELETE", None, "s1", "2025-11-25")]
