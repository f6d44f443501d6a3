"""The real gateway process in front of a real SDK server, driven by the real SDK client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_harness import Proc, free_port, gateway, sse_messages, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ORIGIN_KEY = "dev.elicitation-gateway/origin"
BOTH = {"modes": ["form", "url"]}


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy")


@pytest.fixture(scope="module")
def upstream(tmp_module: Path) -> Iterator[Proc]:
    with upstream_server(tmp_module) as p:
        yield p


@pytest.fixture(scope="module")
def gw(tmp_module: Path, upstream: Proc) -> Iterator[Proc]:
    url = upstream.base + "/mcp"
    servers = {
        "up": (url, BOTH),
        "formonly": (url, {"modes": ["form"]}),
        "silent": (url, {"modes": []}),
        "down": (f"http://127.0.0.1:{free_port()}/mcp", BOTH),
        "keyed": ({"url": url, "headers": {"X-Upstream-Key": "upstream-only-credential"}}, BOTH),
    }
    with gateway(tmp_module, servers) as p:
        yield p


def endpoint(gw: Proc, name: str) -> str:
    return f"{gw.base}/servers/{name}/mcp"


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def accept_with(content: dict[str, Any], seen: list[Any]) -> Any:
    async def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content=content)

    return callback


async def test_tools_list_and_call_pass_through(gw: Proc) -> None:
    async with Client(endpoint(gw, "up"), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"echo", "ask_name", "elicit_raw"} <= names
        assert text_of(await client.call_tool("echo", {"text": "héllo ✓"})) == "héllo ✓"


async def test_auto_mode_client_falls_back_to_initialize(gw: Proc) -> None:
    async with Client(endpoint(gw, "up")) as client:
        assert text_of(await client.call_tool("echo", {"text": "auto"})) == "auto"


async def test_form_elicitation_round_trip_carries_origin_tag(gw: Proc) -> None:
    seen: list[Any] = []
    async with Client(endpoint(gw, "up"), mode="legacy", elicitation_callback=await accept_with({"name": "Ann"}, seen)) as c:
        result = json.loads(text_of(await c.call_tool("ask_name", {})))
    assert result == {"action": "accept", "name": "Ann"}
    [params] = seen
    assert params.message == "[up] What is your name?"
    assert params.meta[ORIGIN_KEY] == {"server": "up"}


async def test_two_hosts_with_colliding_ids_never_see_each_others_answers(gw: Proc) -> None:
    """Both SDK clients number requests 1, 2, 3...; the upstream numbers its elicitations 1, 2... per session."""
    results: dict[str, list[str]] = {"a": [], "b": []}

    async def host(tag: str) -> None:
        seen: list[Any] = []
        cb = await accept_with({"name": f"name-{tag}"}, seen)
        async with Client(endpoint(gw, "up"), mode="legacy", elicitation_callback=cb) as client:
            for i in range(5):
                results[tag].append(text_of(await client.call_tool("echo", {"text": f"{tag}{i}"})))
                answer = json.loads(text_of(await client.call_tool("ask_name", {})))
                results[tag].append(answer["name"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(host, "a")
        tg.start_soon(host, "b")
    for tag in ("a", "b"):
        assert results[tag] == [x for i in range(5) for x in (f"{tag}{i}", f"name-{tag}")]


@pytest.mark.parametrize(
    ("server", "expected"),
    [("up", {"form": {}, "url": {}}), ("formonly", {"form": {}}), ("silent", None)],
)
async def test_upstream_sees_rewritten_capabilities(gw: Proc, server: str, expected: Any) -> None:
    async def cb(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async with Client(endpoint(gw, server), mode="legacy", elicitation_callback=cb) as client:
        seen = json.loads(text_of(await client.call_tool("client_caps", {})))
    assert seen["capabilities"].get("elicitation") == expected


async def test_url_mode_request_to_form_only_session_is_refused_with_32602(gw: Proc) -> None:
    called: list[Any] = []

    async def cb(context: Any, params: Any) -> ElicitResult:
        called.append(params)
        return ElicitResult(action="accept")

    params = {"mode": "url", "message": "Sign in", "url": "https://auth.example.com/x", "elicitationId": "e1"}
    async with Client(endpoint(gw, "formonly"), mode="legacy", elicitation_callback=cb) as client:
        out = json.loads(text_of(await client.call_tool("elicit_raw", {"params_json": json.dumps(params)})))
    assert out["error"]["code"] == -32602
    assert called == []


async def test_url_mode_refused_for_host_that_declared_form_only(gw: Proc) -> None:
    """A raw host (not the SDK, which always declares both) declaring only form."""
    url = endpoint(gw, "up")
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10) as http:
        init = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                       "clientInfo": {"name": "raw", "version": "1"}},
        }
        r = await http.post(url, json=init, headers=headers)
        assert r.status_code == 200
        headers["Mcp-Session-Id"] = r.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        params = {"mode": "url", "message": "m", "url": "https://a.example.com/", "elicitationId": "e2"}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "elicit_raw", "arguments": {"params_json": json.dumps(params)}}}
        r = await http.post(url, json=call, headers=headers)
        assert r.status_code == 200
        assert "elicitation/create" not in r.text  # the host never saw the request
        events = sse_messages(r.text)
        [response] = [e for e in events if e.get("id") == 2]
        inner = json.loads(response["result"]["content"][0]["text"])
        assert inner["error"]["code"] == -32602


async def test_unknown_session_is_404_and_missing_session_is_400(gw: Proc) -> None:
    url = endpoint(gw, "up")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        r = await http.post(url, json=body, headers={**headers, "Mcp-Session-Id": "not-a-session"})
        assert r.status_code == 404
        assert r.json()["error"]["code"] == -32600
        r = await http.post(url, json=body, headers=headers)
        assert r.status_code == 400
        r = await http.post(f"{gw.base}/servers/nope/mcp", json=body, headers=headers)
        assert r.status_code == 404


async def test_malformed_json_is_400_and_gateway_keeps_serving(gw: Proc) -> None:
    url = endpoint(gw, "up")
    async with httpx2.AsyncClient(timeout=10) as http:
        for junk in (b"{not json", b"\xff\xfe", b"", b'{"jsonrpc": "2.0", "id": 1, "method": '):
            r = await http.post(url, content=junk, headers={"Content-Type": "application/json"})
            assert r.status_code == 400, junk
            assert r.json()["error"]["code"] == -32700
        r = await http.post(url, content=b"x" * (5 * 1024 * 1024), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        r = await http.post(url, content=b"{}", headers={"Content-Type": "text/plain"})
        assert r.status_code == 415
    async with Client(url, mode="legacy") as client:
        assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"


async def test_bad_origin_is_403_and_loopback_origin_allowed(gw: Proc) -> None:
    url = endpoint(gw, "up")
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        r = await http.post(url, json=body, headers={**headers, "Origin": "https://evil.example"})
        assert r.status_code == 403
        r = await http.post(url, json=body, headers={**headers, "Origin": "http://localhost:3000"})
        assert r.status_code == 200
        assert r.json()["result"]["protocolVersion"] == "2025-06-18"


def mcp_error_in(exc: BaseException) -> MCPError:
    """The MCPError inside what the SDK raised (it may wrap it in exception groups)."""
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = mcp_error_in(inner)
        if found is not None:
            return found
    raise AssertionError(f"no MCPError in {exc!r}")


async def test_upstream_not_running_gives_clear_jsonrpc_error(gw: Proc) -> None:
    with pytest.raises(BaseException) as info:
        async with Client(endpoint(gw, "down"), mode="legacy") as client:
            await client.list_tools()
    error = mcp_error_in(info.value)
    assert "server 'down' is unreachable" in str(error)
    assert error.error.code == -32010


async def test_ping_is_answered_and_delete_ends_the_session(gw: Proc) -> None:
    url = endpoint(gw, "up")
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        init = {"jsonrpc": "2.0", "id": "i", "method": "initialize",
                "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
        r = await http.post(url, json=init, headers=headers)
        sid = r.headers["mcp-session-id"]
        assert r.json()["id"] == "i"
        headers["Mcp-Session-Id"] = sid
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers)
        assert r.json() == {"jsonrpc": "2.0", "id": 9, "result": {}}
        # 2025-03-26 batch: two requests answered on one stream
        batch = [{"jsonrpc": "2.0", "id": 10, "method": "ping"}, {"jsonrpc": "2.0", "id": 11, "method": "tools/list"}]
        r = await http.post(url, json=batch, headers=headers)
        ids = {m["id"] for m in sse_messages(r.text)}
        assert ids == {10, 11}
        r = await http.delete(url, headers=headers)
        assert r.status_code == 200
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 12, "method": "ping"}, headers=headers)
        assert r.status_code == 404
    assert gw.logged("session.ended")


async def test_standalone_get_stream_opens(gw: Proc) -> None:
    async with Client(endpoint(gw, "up"), mode="legacy") as client:
        # the SDK client opens the GET stream after initialize; a call still works alongside it
        assert text_of(await client.call_tool("echo", {"text": "with get"})) == "with get"
    assert '"method":"GET"' not in gw.output()  # GET is not logged as a JSON-RPC request


async def test_progress_notifications_are_relayed_with_host_token(gw: Proc) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(endpoint(gw, "up"), mode="legacy") as client:
        result = await client.call_tool("slow_echo", {"text": "p", "seconds": 0.1}, progress_callback=on_progress)
    assert text_of(result) == "p"
    assert seen == [0.5]


async def test_upstream_killed_mid_stream_fails_the_call_without_hanging(tmp_path: Path) -> None:
    with upstream_server(tmp_path, "victim") as victim, gateway(tmp_path, {"victim": (victim.base + "/mcp", BOTH)}) as g:
        with anyio.fail_after(20):
            async with Client(endpoint(g, "victim"), mode="legacy") as client:
                result = None
                with pytest.raises(MCPError) as info:
                    result = await client.call_tool("die_mid_stream", {})
                assert result is None
                assert info.value.error.code == -32012
        assert victim.process.wait(5) == 3
        assert g.logged('"outcome":"upstream_stream_lost"')


async def test_health_ready_and_metrics(gw: Proc) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{gw.base}/healthz")).json() == {"status": "ok"}
        ready = (await http.get(f"{gw.base}/readyz")).json()
        assert ready["status"] == "ready" and "up" in ready["servers"]
        async with Client(endpoint(gw, "up"), mode="legacy") as client:
            await client.call_tool("echo", {"text": "count me"})
        metrics = (await http.get(f"{gw.base}/metrics")).text
    assert 'mcpgw_host_requests_total{era="2025",method="tools/call",outcome="ok",server="up"}' in metrics


async def test_readyz_fails_when_state_unreachable(tmp_path: Path, upstream: Proc) -> None:
    state = {"backend": "redis", "url": f"redis://127.0.0.1:{free_port()}/0"}
    with gateway(tmp_path, {"up": (upstream.base + "/mcp", BOTH)}, state) as g:
        async with httpx2.AsyncClient(timeout=10) as http:
            r = await http.get(f"{g.base}/readyz")
            assert r.status_code == 503
            assert (await http.get(f"{g.base}/healthz")).status_code == 200


async def test_host_credential_never_sent_upstream_and_delete_ends_upstream_session(gw: Proc, upstream: Proc) -> None:
    host_headers = {"Authorization": "Bearer host-token-must-not-leak", "Cookie": "host=1"}
    async with httpx2.AsyncClient(timeout=10, headers=host_headers) as http:
        async with Client(endpoint(gw, "keyed"), mode="legacy") as client:
            seen = json.loads(text_of(await client.call_tool("request_headers", {})))
        assert seen["x-upstream-key"] == "upstream-only-credential"
        assert "authorization" not in seen and "cookie" not in seen
        # a raw host with credentials: nothing of them reaches the upstream either
        headers = {**host_headers, "Accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
        r = await http.post(endpoint(gw, "up"), json=init, headers=headers)
        headers["Mcp-Session-Id"] = r.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_headers", "arguments": {}}}
        r = await http.post(endpoint(gw, "up"), json=call, headers=headers)
        [data] = sse_messages(r.text)
        upstream_seen = json.loads(data["result"]["content"][0]["text"])
        assert "host-token-must-not-leak" not in json.dumps(upstream_seen)
        upstream_sid = upstream_seen["mcp-session-id"]
        assert upstream_sid != headers["Mcp-Session-Id"]  # the gateway issues its own session ids
        assert (await http.delete(endpoint(gw, "up"), headers=headers)).status_code == 200
        direct = await http.post(upstream.base + "/mcp", json=call, headers={
            "Accept": "application/json, text/event-stream", "Mcp-Session-Id": upstream_sid,
            "MCP-Protocol-Version": "2025-11-25"})
        assert direct.status_code == 404  # the upstream session ended with the host's


async def test_upstream_dies_while_host_answers_an_elicitation(tmp_path: Path) -> None:
    """The host is still thinking when the server dies: its call fails cleanly and its late answer is not lost in a hang."""
    answered: list[str] = []

    async def slow_answer(context: Any, params: Any) -> ElicitResult:
        await anyio.sleep(0.8)
        answered.append(params.message)
        return ElicitResult(action="accept", content={"name": "late"})

    with upstream_server(tmp_path, "victim2") as victim, gateway(tmp_path, {"v": (victim.base + "/mcp", BOTH)}) as g:
        with anyio.fail_after(20):
            async with Client(endpoint(g, "v"), mode="legacy", elicitation_callback=slow_answer) as client:
                with pytest.raises(MCPError) as info:
                    await client.call_tool("die_during_elicitation", {})
                assert info.value.error.code == -32012
                await anyio.sleep(1.0)  # the late answer is posted to a dead upstream: logged, no hang
        assert victim.process.wait(5) == 4
        assert answered == ["[v] Still there?"]
        async with httpx2.AsyncClient(timeout=5) as http:
            assert (await http.get(f"{g.base}/healthz")).status_code == 200

