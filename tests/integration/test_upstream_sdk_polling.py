"""Resumption against the real SDK server with an event store (SSE polling, as in `server-sse-polling`):
its tools close their request's stream before answering; the connector reopens with Last-Event-ID."""

from __future__ import annotations

import re
import shutil
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import orjson
import pytest
from gateway_harness import HERE, Proc, free_port, running
from polling_server import RETRY_MS

from gateway.upstream.resume import ResumePolicy
from gateway.upstream.streamable_http import StreamableHttpUpstream

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"


def rpc(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


@pytest.fixture(scope="module")
def polling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    port = free_port()
    log = tmp_path_factory.mktemp("polling") / "polling.log"
    with running([sys.executable, str(HERE / "polling_server.py"), str(port)], port, log) as p:
        yield p


@pytest.fixture
async def session(polling: Proc) -> AsyncIterator[tuple[StreamableHttpUpstream, str]]:
    up = StreamableHttpUpstream("polling", f"{polling.base}/mcp", {}, resume=ResumePolicy(max_retry_seconds=1))
    init = rpc(1, "initialize", {
        "protocolVersion": VERSION,
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "polling-test", "version": "0"},
    })
    try:
        async with up.post(init, session_id=None, protocol_version=None) as reply:
            [response] = [m async for m in reply.messages]
        assert response["result"]["protocolVersion"] == VERSION
        assert reply.session_id is not None
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        async with up.post(note, session_id=reply.session_id, protocol_version=VERSION) as ack:
            assert ack.status == 202
        yield up, reply.session_id
    finally:
        await up.close()


async def test_reply_closed_before_the_answer_is_resumed(session: tuple[StreamableHttpUpstream, str]) -> None:
    up, sid = session
    body = rpc(2, "tools/call", {"name": "poll_then_answer", "arguments": {"text": "polled"}, "_meta": {
        "progressToken": "p"}})
    async with up.post(body, session_id=sid, protocol_version=VERSION) as reply:
        messages = [m async for m in reply.messages]
    assert reply.resumed == 1
    assert reply.retry_ms == RETRY_MS
    progress = [m["params"]["message"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == ["started", "sent while the client was away"]
    assert messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"] == "polled"
    assert up.requests.in_use == 0


async def test_server_request_after_the_close_arrives_on_the_resumed_stream(
    session: tuple[StreamableHttpUpstream, str],
) -> None:
    up, sid = session
    body = rpc(3, "tools/call", {"name": "poll_then_ask", "arguments": {}})
    seen: list[Any] = []
    async with up.post(body, session_id=sid, protocol_version=VERSION) as reply:
        async for message in reply.messages:
            seen.append(message)
            if message.get("method") == "elicitation/create":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}
                async with up.post(orjson.dumps(answer), session_id=sid, protocol_version=VERSION) as ack:
                    assert ack.status == 202
    assert reply.resumed >= 1
    assert [m.get("method") for m in seen] == ["elicitation/create", None]
    assert seen[-1]["result"]["content"][0]["text"] == "Bo"


async def test_through_the_gateway_a_polled_reply_reaches_the_host(
    polling: Proc, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The whole path: SDK client -> gateway -> polling SDK server; the answer is no longer lost (-32012)."""
    from gateway_harness import gateway
    from mcp import Client
    from mcp.types import TextContent

    tmp = tmp_path_factory.mktemp("polling-gw")
    with gateway(tmp, {"poll": (f"{polling.base}/mcp", {"modes": ["form"]})}) as gw:
        async with Client(f"{gw.base}/servers/poll/mcp", mode="legacy") as client:
            result = await client.call_tool("poll_then_answer", {"text": "through"})
        with urllib.request.urlopen(f"{gw.base}/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
    block = result.content[0]
    assert isinstance(block, TextContent) and block.text == "through"
    [reconnects] = re.findall(r'^mcpgw_upstream_reconnects_total\{server="poll"\} (\S+)$', metrics, re.M)
    assert float(reconnects) >= 1  # the resumed reply is counted


async def test_standalone_stream_closed_by_the_server_is_reopened_with_its_last_event_id(
    session: tuple[StreamableHttpUpstream, str],
) -> None:
    up, sid = session
    completions: list[str] = []
    async with up.open_stream(session_id=sid, protocol_version=VERSION) as stream:
        body = rpc(4, "tools/call", {"name": "standalone_poll", "arguments": {}})
        async with up.post(body, session_id=sid, protocol_version=VERSION) as reply:
            [m async for m in reply.messages]
        async for message in stream.messages:  # ends when the server closes it
            completions.append(message["params"]["elicitationId"])
    assert completions == ["first"]
    assert stream.last_event_id is not None  # (the SDK primes POST streams only: no retry here)
    await anyio.sleep(0.2)  # the second notice is stored while no stream is open
    async with up.open_stream(session_id=sid, protocol_version=VERSION, last_event_id=stream.last_event_id) as again:
        with anyio.fail_after(5):
            async for message in again.messages:
                completions.append(message["params"]["elicitationId"])
                break
    assert completions == ["first", "second"]


@pytest.fixture(scope="module")
def ts_polling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    if shutil.which("node") is None or not (HERE.parent / "npm" / "node_modules" / "@modelcontextprotocol").is_dir():
        pytest.skip("needs node and tests/npm/node_modules (make tests/npm/node_modules/.installed)")
    port = free_port()
    log = tmp_path_factory.mktemp("ts-polling") / "ts-polling.log"
    with running(["node", str(HERE / "ts_polling_server.mjs"), str(port)], port, log) as p:
        yield p


async def test_typescript_sdk_server_that_closes_before_answering_is_resumed(ts_polling: Proc) -> None:
    up = StreamableHttpUpstream("ts", f"{ts_polling.base}/mcp", {}, resume=ResumePolicy(max_retry_seconds=1))
    init = rpc(1, "initialize", {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "polling-test", "version": "0"},
    })
    try:
        async with up.post(init, session_id=None, protocol_version=None) as reply:
            [m async for m in reply.messages]
        sid = reply.session_id
        assert sid is not None
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        async with up.post(note, session_id=sid, protocol_version=VERSION) as ack:
            assert ack.status == 202
        body = rpc(2, "tools/call", {"name": "poll_then_answer", "arguments": {"text": "from ts"}})
        async with up.post(body, session_id=sid, protocol_version=VERSION) as call:
            messages = [m async for m in call.messages]
        assert call.resumed >= 1 and call.retry_ms == 50
        assert messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"] == "from ts"
    finally:
        await up.close()
