"""One contract, four transports: Streamable HTTP (the real SDK server on loopback), legacy HTTP+SSE (the same
SDK server's `sse_app`), stdio (the same SDK server as a child process) and InMemoryUpstream (a small scripted
server). Raw JSON-RPC, as the gateway sends it."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from gateway_harness import HERE, Proc, upstream_server

from gateway.errors import UpstreamSessionGone
from gateway.upstream.connector import Upstream
from gateway.upstream.in_memory import InMemoryUpstream, JsonReply, SseReply, Status, UpstreamCall
from gateway.upstream.legacy_sse import LegacySseUpstream
from gateway.upstream.stdio import StdioUpstream
from gateway.upstream.streamable_http import StreamableHttpUpstream

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"


def rpc(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


INITIALIZE = rpc(1, "initialize", {
    "protocolVersion": VERSION,
    "capabilities": {"elicitation": {"form": {}}},
    "clientInfo": {"name": "contract", "version": "0"},
})
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class FakeServer:
    """Just enough MCP for the contract: sessions, `echo`, `ask_name` (elicits on the request's stream)."""

    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.answers: dict[Any, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    def __call__(self, call: UpstreamCall) -> JsonReply | SseReply | Status:
        body = call.body
        if call.verb == "POST" and body.get("method") == "initialize":
            sid = f"mem-{next(self._ids)}"
            self.sessions.add(sid)
            result = {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "fake"}}
            return SseReply([{"jsonrpc": "2.0", "id": body["id"], "result": result}], session_id=sid)
        if call.session_id not in self.sessions:
            return Status(404)
        if call.verb == "DELETE":
            self.sessions.discard(call.session_id)
            return Status(202)
        if call.verb == "GET":
            return Status(405)
        if "method" not in body:  # an answer to our request
            self.answers.pop(body["id"]).set_result(body["result"])
            return Status(202)
        if "id" not in body:
            return Status(202)
        name = body["params"]["name"]
        if name == "echo":
            return SseReply([_text_result(body["id"], body["params"]["arguments"]["text"])])
        return SseReply(self._ask(body["id"]))

    async def _ask(self, rid: Any) -> AsyncIterator[Any]:
        answered = self.answers[1] = asyncio.get_running_loop().create_future()
        params = {"mode": "form", "message": "What is your name?", "requestedSchema": {"type": "object"}}
        yield {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": params}
        answer = await answered
        yield _text_result(rid, json.dumps({"action": answer["action"], "name": answer["content"]["name"]}))


def _text_result(rid: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


@pytest.fixture(scope="module")
def sdk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    with upstream_server(tmp_path_factory.mktemp("contract")) as p:
        yield p


@pytest.fixture(scope="module")
def sdk_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    with upstream_server(tmp_path_factory.mktemp("contract_sse"), era="sse") as p:
        yield p


@pytest.fixture(params=["streamable_http", "legacy_sse", "stdio", "in_memory"])
async def up(request: pytest.FixtureRequest) -> AsyncIterator[Upstream]:
    upstream: Upstream
    if request.param == "streamable_http":
        proc: Proc = request.getfixturevalue("sdk_http")
        upstream = StreamableHttpUpstream("sdk", f"{proc.base}/mcp", {})
    elif request.param == "legacy_sse":
        proc = request.getfixturevalue("sdk_sse")
        upstream = LegacySseUpstream("sdk", f"{proc.base}/sse", {})
    elif request.param == "stdio":
        upstream = StdioUpstream("sdk", sys.executable, [str(HERE / "upstream_server.py"), "stdio"], {}, None)
    else:
        upstream = InMemoryUpstream("fake", FakeServer())
    await upstream.start()
    try:
        yield upstream
    finally:
        await upstream.close()


async def initialize(up: Upstream) -> str:
    async with up.post(INITIALIZE, session_id=None, protocol_version=None) as reply:
        messages = [m async for m in reply.messages]
    assert reply.session_id is not None
    [response] = [m for m in messages if m.get("id") == 1]
    assert response["result"]["protocolVersion"] == VERSION
    async with up.post(INITIALIZED, session_id=reply.session_id, protocol_version=VERSION) as note:
        assert note.status == 202 and [m async for m in note.messages] == []
    return reply.session_id


async def call_tool(up: Upstream, sid: str, rid: int, name: str, arguments: dict[str, Any]) -> list[Any]:
    body = rpc(rid, "tools/call", {"name": name, "arguments": arguments})
    async with up.post(body, session_id=sid, protocol_version=VERSION) as reply:
        return [m async for m in reply.messages]


async def test_initialize_and_a_notification_is_accepted_with_no_messages(up: Upstream) -> None:
    sid = await initialize(up)
    ping = b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
    async with up.post(ping, session_id=sid, protocol_version=VERSION) as reply:
        assert reply.status == 202 and [m async for m in reply.messages] == []


async def test_a_request_is_answered(up: Upstream) -> None:
    sid = await initialize(up)
    messages = await call_tool(up, sid, 2, "echo", {"text": "hello"})
    assert messages[-1]["id"] == 2
    assert messages[-1]["result"]["content"][0]["text"] == "hello"


async def test_a_server_request_arrives_on_the_request_stream_and_is_answered(up: Upstream) -> None:
    sid = await initialize(up)
    body = rpc(3, "tools/call", {"name": "ask_name", "arguments": {}})
    seen: list[Any] = []
    async with up.post(body, session_id=sid, protocol_version=VERSION) as reply:
        async for message in reply.messages:
            seen.append(message)
            if message.get("method") == "elicitation/create":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}
                async with up.post(orjson.dumps(answer), session_id=sid, protocol_version=VERSION) as ack:
                    assert ack.status == 202 and [m async for m in ack.messages] == []
    assert seen[0]["method"] == "elicitation/create"
    assert seen[0]["params"]["message"] == "What is your name?"
    assert json.loads(seen[-1]["result"]["content"][0]["text"]) == {"action": "accept", "name": "Bo"}


async def test_delete_ends_the_session(up: Upstream) -> None:
    sid = await initialize(up)
    await up.end_session(session_id=sid, protocol_version=VERSION)
    with pytest.raises(UpstreamSessionGone):
        await call_tool(up, sid, 4, "echo", {"text": "after delete"})


async def test_unknown_session_is_gone(up: Upstream) -> None:
    with pytest.raises(UpstreamSessionGone):
        await call_tool(up, "no-such-session", 5, "echo", {"text": "x"})


async def test_delete_of_an_unknown_session_is_quiet(up: Upstream) -> None:
    await up.end_session(session_id="no-such-session", protocol_version=VERSION)
