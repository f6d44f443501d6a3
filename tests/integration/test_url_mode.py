"""URL mode end to end: ownership, completion routing, buffering while no stream is open, -32042."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_harness import Proc, gateway, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitCompleteNotification, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

POLICY = {"modes": ["form", "url"], "url_mode": {"allowed_hosts": ["auth.example.com", "*.login.example.org"]}}
GOOD_URL = "https://auth.example.com/connect?e=1"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("url")
    with upstream_server(tmp) as up, gateway(tmp, {"up": (up.base + "/mcp", POLICY)}) as g:
        yield g


def endpoint(gw: Proc) -> str:
    return f"{gw.base}/servers/up/mcp"


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


class Host:
    """An SDK client that accepts URL elicitations and records completions it receives."""

    def __init__(self) -> None:
        self.elicitations: list[Any] = []
        self.completions: list[str] = []
        self.got_completion = anyio.Event()

    async def elicit(self, context: Any, params: Any) -> ElicitResult:
        self.elicitations.append(params)
        return ElicitResult(action="accept")

    async def on_message(self, message: Any) -> None:
        if isinstance(message, ElicitCompleteNotification):
            self.completions.append(message.params.elicitation_id)
            self.got_completion.set()

    def client(self, gw: Proc) -> Client:
        return Client(endpoint(gw), mode="legacy", elicitation_callback=self.elicit, message_handler=self.on_message)


@pytest.mark.parametrize("complete", ["related", "standalone"])
async def test_only_the_owning_host_receives_the_completion(gw: Proc, complete: str) -> None:
    owner, other = Host(), Host()
    eid = f"same-id-{complete}"  # both hosts' flows could use it: ids are only unique per server
    async with owner.client(gw) as a, other.client(gw) as b:
        await b.call_tool("echo", {"text": "idle"})
        result = await a.call_tool("url_flow", {"url": GOOD_URL, "elicitation_id": eid, "complete": complete, "delay": 0.2})
        assert text_of(result) == "accept"
        with anyio.fail_after(5):
            await owner.got_completion.wait()
        await anyio.sleep(0.3)
    assert owner.completions == [eid]
    assert other.completions == []
    [params] = owner.elicitations
    assert params.url == GOOD_URL and params.elicitation_id == eid  # reach the host exactly as sent
    assert params.message == "[up] Please sign in"


async def test_forged_and_replayed_completions_are_dropped(gw: Proc) -> None:
    host = Host()
    async with host.client(gw) as c:
        await c.call_tool("url_flow", {"url": GOOD_URL, "elicitation_id": "real-1", "complete": "standalone", "delay": 0.1})
        with anyio.fail_after(5):
            await host.got_completion.wait()
        assert text_of(await c.call_tool("send_complete", {"elicitation_id": "real-1"})) == "sent"  # replay
        assert text_of(await c.call_tool("send_complete", {"elicitation_id": "never-issued"})) == "sent"  # forged
        await anyio.sleep(0.5)
    assert host.completions == ["real-1"]
    log = gw.output()
    assert log.count('"event":"elicitation.complete_dropped"') >= 2
    assert '"elicitation_id":"never-issued"' in log


async def test_completion_sent_while_owner_has_no_stream_arrives_on_reconnect(gw: Proc) -> None:
    """A raw host: no GET stream while the server completes; the notice waits and arrives on GET."""
    url = endpoint(gw)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10) as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
                           "clientInfo": {"name": "raw", "version": "1"}}}
        r = await http.post(url, json=init, headers=headers)
        headers["Mcp-Session-Id"] = r.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "url_later", "arguments": {"url": GOOD_URL, "elicitation_id": "later-1", "delay": 0.3}}}
        async with http.stream("POST", url, json=call, headers=headers) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data:") or not line[5:].strip():
                    continue
                msg = json.loads(line[5:])
                if msg.get("method") == "elicitation/create":
                    await http.post(url, json={"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept"}},
                                    headers=headers)
                if msg.get("id") == 2:
                    break
        await anyio.sleep(1.0)  # the server completes now; this host has no stream open
        assert gw.logged('"event":"outbox.buffered"')
        received: list[tuple[str | None, Any]] = []
        event_id = None
        with anyio.move_on_after(3):
            async with http.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("id:"):
                        event_id = line[3:].strip()
                    if line.startswith("data:") and line[5:].strip():
                        received.append((event_id, json.loads(line[5:])))
                        break
        [(eid, notice)] = received
        assert notice == {"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                          "params": {"elicitationId": "later-1"}}
        assert eid is not None
        # resuming after that event id replays nothing older
        got_more = False
        with anyio.move_on_after(1):
            async with http.stream("GET", url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": eid}) as s:
                async for line in s.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        got_more = True
                        break
        assert not got_more


async def test_url_required_keeps_good_entries_and_drops_bad_ones(gw: Proc) -> None:
    entries = [
        {"mode": "url", "message": "Connect your drive", "url": "https://auth.example.com/drive", "elicitationId": "ok-1"},
        {"mode": "url", "message": "Connect", "url": "https://auth.example.com.evil.io/x", "elicitationId": "bad-1"},
    ]
    async with Host().client(gw) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("url_required", {"entries_json": json.dumps(entries)})
    error = info.value.error
    assert error.code == -32042
    kept = error.data["elicitations"]
    assert [e["elicitationId"] for e in kept] == ["ok-1"]
    assert kept[0]["url"] == "https://auth.example.com/drive"
    assert kept[0]["_meta"]["dev.elicitation-gateway/origin"] == {"server": "up"}


async def test_url_required_with_only_bad_entries_becomes_a_clear_error(gw: Proc) -> None:
    entries = [{"mode": "url", "message": "m", "url": "http://auth.example.com/plain-http", "elicitationId": "bad-2"}]
    async with Host().client(gw) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("url_required", {"entries_json": json.dumps(entries)})
    assert info.value.error.code == -32050
    assert "refused" in info.value.error.message


async def test_url_required_owner_gets_its_completion(gw: Proc) -> None:
    host = Host()
    entries = [{"mode": "url", "message": "Connect", "url": "https://a.login.example.org/x", "elicitationId": "req-1"}]
    async with host.client(gw) as c:
        with pytest.raises(MCPError):
            await c.call_tool("url_required", {"entries_json": json.dumps(entries)})
        await c.call_tool("send_complete", {"elicitation_id": "req-1"})
        with anyio.fail_after(5):
            await host.got_completion.wait()
    assert host.completions == ["req-1"]


@pytest.mark.parametrize(
    "url",
    ["https://auth.example.com.evil.io/", "http://auth.example.com/", "https://аuth.example.com/", "javascript:alert(1)",
     "https://user:pw@auth.example.com/", "https://127.0.0.1/"],
)
async def test_blocked_url_targets_never_reach_the_host(gw: Proc, url: str) -> None:
    host = Host()
    async with host.client(gw) as c:
        with pytest.raises(MCPError) as info:  # the SDK server re-raises the gateway's refusal as the tool's error
            await c.call_tool("url_flow", {"url": url, "elicitation_id": "x", "complete": "none", "delay": 0})
    assert host.elicitations == []
    assert "rule url_mode.target" in info.value.error.message


def test_completion_routing_is_logged_without_values(gw: Proc) -> None:
    log = gw.output()
    assert '"event":"elicitation.completed"' in log


async def test_redis_backend_routes_completions(tmp_path: Path) -> None:
    state = {"backend": "redis", "url": "redis://127.0.0.1:6379/15", "key_prefix": f"mcpgw-test-{uuid.uuid4().hex}:"}
    with upstream_server(tmp_path) as up, gateway(tmp_path, {"up": (up.base + "/mcp", POLICY)}, state) as g:
        host = Host()
        async with host.client(g) as c:
            await c.call_tool("url_flow", {"url": GOOD_URL, "elicitation_id": "r-1", "complete": "standalone", "delay": 0.1})
            with anyio.fail_after(5):
                await host.got_completion.wait()
            await c.call_tool("send_complete", {"elicitation_id": "r-1"})
            await anyio.sleep(0.3)
        assert host.completions == ["r-1"]


async def test_completion_sent_on_another_session_reaches_nobody(gw: Proc) -> None:
    """Host A owns 'cross-1'; the server (or someone forging) sends its completion on host B's session."""
    a, b = Host(), Host()
    async with a.client(gw) as ca, b.client(gw) as cb:
        assert text_of(await ca.call_tool("url_flow", {"url": GOOD_URL, "elicitation_id": "cross-1", "complete": "none", "delay": 0})) == "accept"
        await cb.call_tool("send_complete", {"elicitation_id": "cross-1"})
        await anyio.sleep(0.5)
        # the rightful completion on A's own session still arrives once
        await ca.call_tool("send_complete", {"elicitation_id": "cross-1"})
        with anyio.fail_after(5):
            await a.got_completion.wait()
    assert b.completions == []
    assert a.completions == ["cross-1"]


async def test_url_required_to_a_host_without_url_mode_is_refused(gw: Proc) -> None:
    """A host that declared no URL mode cannot act on -32042: it gets the gateway's error instead."""
    entries = [{"mode": "url", "message": "Connect", "url": "https://auth.example.com/ok", "elicitationId": "no-url-1"}]
    async with Client(endpoint(gw), mode="legacy") as client:  # no elicitation callback: no elicitation capability
        with pytest.raises(MCPError) as info:
            await client.call_tool("url_required", {"entries_json": json.dumps(entries)})
    assert info.value.error.code == -32050
