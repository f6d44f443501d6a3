"""The aggregated endpoint /mcp: several real servers behind one host session, through the real gateway.

Behind it: the SDK test server over Streamable HTTP (`web`), as a stdio child (`local`) and over the
legacy HTTP+SSE transport (`oldsse`), the npm reference server (`everything`, TypeScript SDK), and a
low-level SDK server that pages its lists (`paged`). Hosts are the real SDK client in both eras.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import aiohttp
import anyio
import httpx2
import pytest
from gateway_harness import (
    HERE,
    REPO,
    AnsweringHost,
    Proc,
    free_port,
    gateway,
    running,
    stdio_spec,
    text_of,
    upstream_server,
)
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import PromptReference
from test_session_bounds import ask_and_drop, open_session

pytestmark = pytest.mark.anyio

EVERYTHING = REPO / "tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
ORIGIN_KEY = "dev.elicitation-gateway/origin"
TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        pytest.fail("node and tests/npm/node_modules are needed: `make test` installs them with npm ci")
    tmp = tmp_path_factory.mktemp("aggregate")
    with ExitStack() as stack:
        web = stack.enter_context(upstream_server(tmp, "web"))
        port = free_port()
        stack.enter_context(running([node, str(EVERYTHING), "streamableHttp"], port, tmp / "everything.log",
                                    env={"PORT": str(port)}))
        doomed = stack.enter_context(upstream_server(tmp, "doomed"))
        old = stack.enter_context(upstream_server(tmp, "oldsse", era="sse"))
        paged_port = free_port()
        stack.enter_context(running([sys.executable, str(HERE / "paged_server.py"), str(paged_port), "8"], paged_port,
                                    tmp / "paged.log"))
        servers = {
            "web": (web.base + "/mcp", {"modes": ["form"]}),
            "local": (stdio_spec(), {"modes": []}),  # this server may not elicit at all
            "everything": (f"http://127.0.0.1:{port}/mcp", {"modes": ["form", "url"]}),
            "doomed": (doomed.base + "/mcp", {"modes": ["form"]}),
            "paged": (f"http://127.0.0.1:{paged_port}/mcp", {"modes": []}),
            "oldsse": ({"url": f"{old.base}/sse", "transport": "sse"}, {"modes": ["form"]}),
        }
        gw = stack.enter_context(gateway(tmp, servers, extra={"aggregate": {"list_timeout_seconds": 15}}))
        yield {"gw": gw, "web": web, "doomed": doomed}


def Host() -> AnsweringHost:
    return AnsweringHost(delay=0.2)  # the servers' questions are open at once


async def all_pages(list_page: Any, key: str) -> list[Any]:
    items: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await list_page(cursor=cursor)
        items.extend(getattr(page, key))
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise AssertionError("pagination never ended")


async def test_tools_of_every_server_are_listed_under_their_server_names(env: dict[str, Proc]) -> None:
    async with Client(f"{env['gw'].base}/mcp", mode="legacy") as client:
        tools = await all_pages(client.list_tools, "tools")
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and all(TOOL_NAME.fullmatch(n) for n in names)
    for server in ("web", "local", "everything", "oldsse"):
        assert f"{server}__echo" in names
    echo = next(t for t in tools if t.name == "web__echo")
    assert echo.title == "[web] echo"


def ended_by_host(gw: Proc) -> dict[str, int]:
    """session.ended lines with reason host_delete, per server."""
    out: dict[str, int] = {}
    for line in gw.output().splitlines():
        if '"event":"session.ended"' in line and '"reason":"host_delete"' in line:
            server = json.loads(line)["server"]
            out[server] = out.get(server, 0) + 1
    return out


async def test_calls_are_routed_by_the_name_they_carry(env: dict[str, Proc]) -> None:
    before = ended_by_host(env["gw"])
    async with Client(f"{env['gw'].base}/mcp", mode="legacy") as client:
        assert text_of(await client.call_tool("web__echo", {"text": "via http"})) == "via http"
        assert text_of(await client.call_tool("local__echo", {"text": "via stdio"})) == "via stdio"
        assert "via node" in text_of(await client.call_tool("everything__echo", {"message": "via node"}))
        assert text_of(await client.call_tool("oldsse__echo", {"text": "via sse"})) == "via sse"
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nowhere__echo", {"text": "x"})
    assert unknown.value.error.code == -32602
    # the host's DELETE (the SDK sends it on close) ends the session of every server behind /mcp
    after = ended_by_host(env["gw"])
    for server in ("web", "local", "everything", "oldsse", "*"):
        assert after.get(server, 0) == before.get(server, 0) + 1, server


async def test_lists_are_merged_across_pages_of_every_server(env: dict[str, Proc]) -> None:
    async with Client(f"{env['gw'].base}/mcp", mode="legacy") as client:
        first = await client.list_tools()
        tools = await all_pages(client.list_tools, "tools")
        resources = await all_pages(client.list_resources, "resources")
        long_name = next(t.name for t in tools if t.name.startswith("paged__long_"))
        called = await client.call_tool(long_name, {})
        read = await client.read_resource("mcpgw://paged/memo://7")
    assert first.next_cursor is not None  # `paged` has more after its first page of 3
    paged = sorted(t.name for t in tools if t.name.startswith("paged__"))
    assert len(paged) == 8 and len(long_name) == 128 and TOOL_NAME.fullmatch(long_name)
    assert text_of(called) == "called long_" + "x" * 130  # the cut name reaches the server whole
    assert sorted(str(r.uri) for r in resources if str(r.uri).startswith("mcpgw://paged/")) == sorted(
        f"mcpgw://paged/memo://{i}" for i in range(8))
    assert read.contents[0].text == "body of memo://7"  # type: ignore[union-attr]


async def test_resources_of_the_reference_server_are_read_by_their_namespaced_uri(env: dict[str, Proc]) -> None:
    gw = env["gw"]
    async with Client(f"{gw.base}/servers/everything/mcp", mode="legacy") as direct:
        own = await all_pages(direct.list_resources, "resources")
    async with Client(f"{gw.base}/mcp", mode="legacy") as client:
        merged = await all_pages(client.list_resources, "resources")
        read = await client.read_resource(f"mcpgw://everything/{own[0].uri}")
        templates = await all_pages(client.list_resource_templates, "resource_templates")
    assert sorted(str(r.uri) for r in merged if str(r.uri).startswith("mcpgw://everything/")) == sorted(
        f"mcpgw://everything/{r.uri}" for r in own)
    assert read.contents and templates and all(str(t.uri_template).startswith("mcpgw://") for t in templates)


async def test_prompts_are_listed_and_got_through_their_server(env: dict[str, Proc]) -> None:
    async with Client(f"{env['gw'].base}/mcp", mode="legacy") as client:
        prompts = await all_pages(client.list_prompts, "prompts")
        simple = next(p for p in prompts if p.name.startswith("everything__") and not p.arguments)
        got = await client.get_prompt(simple.name)
    assert simple.title is not None and simple.title.startswith("[everything] ")
    assert got.messages


async def test_elicitations_from_two_servers_are_tagged_and_judged_by_their_own_policy(env: dict[str, Proc]) -> None:
    gw = env["gw"]
    host = Host()
    async with Client(f"{gw.base}/mcp", mode="legacy", elicitation_callback=host) as client:
        web, local, old = await asyncio.gather(
            client.call_tool("web__ask_name", {}), client.call_tool("local__ask_name", {}),
            client.call_tool("oldsse__ask_name", {}), return_exceptions=True)
        with pytest.raises(MCPError) as blocked:
            await client.call_tool("web__sign_in", {})
    for answered in (web, old):
        assert not isinstance(answered, BaseException) and json.loads(text_of(answered)) == {
            "action": "accept", "name": "Ada"}
    # `local` may not elicit: its request is refused by its own policy and never reaches the host
    assert isinstance(local, MCPError) and "not offered" in local.error.message
    assert "sensitive_fields" in blocked.value.error.message  # a password form, blocked by web's policy
    assert sorted((s.message.split("]")[0], s.meta[ORIGIN_KEY]["server"]) for s in host.seen) == [
        ("[oldsse", "oldsse"), ("[web", "web")]  # each tagged with its own server; none from `local`
    log = gw.output()
    assert '"server":"web"' in log and '"rules":["sensitive_fields"]' in log


async def test_list_changed_from_a_server_reaches_the_host(env: dict[str, Proc]) -> None:
    got = asyncio.Event()

    async def on_message(message: Any) -> None:
        if type(getattr(message, "root", message)).__name__ == "ToolListChangedNotification":
            got.set()

    async with Client(f"{env['gw'].base}/mcp", mode="legacy", message_handler=on_message) as client:
        await client.call_tool("web__echo", {"text": "open the web session"})
        await asyncio.sleep(0.5)  # the merged GET stream joins the web session
        assert text_of(await client.call_tool("web__announce", {})) == "announced"
        await asyncio.wait_for(got.wait(), 10)


async def test_a_modern_host_gets_the_same_merged_lists_and_routing(env: dict[str, Proc]) -> None:
    host = Host()
    async with Client(f"{env['gw'].base}/mcp", mode=MODERN, elicitation_callback=host) as client:
        names = {t.name for t in await all_pages(client.list_tools, "tools")}
        assert {"web__greet", "local__echo", "everything__echo"} <= names
        assert text_of(await client.call_tool("local__echo", {"text": "modern"})) == "modern"
        greeted = await client.call_tool("web__greet", {})
    assert text_of(greeted).startswith("Hello Ada")
    [seen] = host.seen
    assert seen.message.startswith("[web] ")


async def test_forged_answers_and_cursors_are_refused(env: dict[str, Proc]) -> None:
    gw = env["gw"]
    async with httpx2.AsyncClient(timeout=10) as http:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        init = await http.post(f"{gw.base}/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        headers["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        forged = await http.post(f"{gw.base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": "web__7", "result": {}})
        cursor = await http.post(f"{gw.base}/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "eyJub3doZXJlIjoieCJ9"}})
    assert forged.status_code == 400
    assert cursor.json()["error"]["code"] == -32602


async def test_a_server_that_dies_is_left_out_and_the_others_keep_serving(env: dict[str, Proc]) -> None:
    gw, doomed = env["gw"], env["doomed"]
    async with Client(f"{gw.base}/mcp", mode="legacy") as client:
        before = {t.name for t in await all_pages(client.list_tools, "tools")}
        assert "doomed__echo" in before
        doomed.process.kill()
        doomed.process.wait()
        after = {t.name for t in await all_pages(client.list_tools, "tools")}
        assert "doomed__echo" not in after and "web__echo" in after and "local__echo" in after
        assert text_of(await client.call_tool("web__echo", {"text": "still here"})) == "still here"
    async with httpx2.AsyncClient() as http:
        ready = (await http.get(f"{gw.base}/readyz")).json()
    assert ready["upstreams"]["doomed"]["up"] is False and ready["upstreams"]["web"]["up"] is True
    assert gw.logged('"event":"aggregate.server_left_out"')


async def read_events(stream: aiohttp.ClientResponse, until: Any) -> list[tuple[str | None, Any]]:
    """(event id, message) pairs from an SSE response until `until(message)` is true."""
    events: list[tuple[str | None, Any]] = []
    event_id = None
    with anyio.fail_after(10):
        async for raw in stream.content:
            line = raw.decode().strip()
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:") and line[5:].strip():
                events.append((event_id, json.loads(line[5:])))
                if until(events[-1][1]):
                    return events
    raise AssertionError("the stream ended first")


async def test_a_dropped_call_on_mcp_is_resumed_on_its_server_and_answered(env: dict[str, Proc]) -> None:
    url = f"{env['gw'].base}/mcp"
    async with aiohttp.ClientSession() as http:
        headers = await open_session(http, url)
        last_id, asked = await ask_and_drop(http, url, headers, 9, tool="web__ask_and_wait")
        assert last_id is not None and last_id.startswith("web~") and asked["id"].startswith("web__")
        async with http.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}) as s:
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
            async with http.post(url, json=answer, headers=headers) as r:
                assert r.status == 202
            resumed = await read_events(s, lambda m: m.get("id") == 9)
    assert resumed[-1][1]["result"]["content"][0]["text"] == "accept"
    assert not any(m.get("method") == "elicitation/create" for _, m in resumed)  # not asked twice


async def test_the_merged_get_stream_resumes_with_every_servers_position(env: dict[str, Proc]) -> None:
    url = f"{env['gw'].base}/mcp"
    announce = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "web__announce", "arguments": {}}}
    changed = "notifications/tools/list_changed"
    async with aiohttp.ClientSession() as http:
        headers = await open_session(http, url)
        get_headers = {**headers, "Accept": "text/event-stream"}
        async with http.post(url, json={**announce, "id": 1, "params": {"name": "web__echo", "arguments": {
                "text": "open"}}}, headers=headers) as r:
            assert r.status == 200
        async with http.get(url, headers=get_headers) as stream:
            await anyio.sleep(0.5)
            async with http.post(url, json=announce, headers=headers) as r:
                await r.read()
            [(first_id, _)] = await read_events(stream, lambda m: m.get("method") == changed)
        assert first_id is not None and first_id.startswith("m~")
        async with http.get(url, headers={**get_headers, "Last-Event-ID": first_id}) as stream:
            await anyio.sleep(0.5)
            async with http.post(url, json={**announce, "id": 3}, headers=headers) as r:
                await r.read()
            again = await read_events(stream, lambda m: m.get("method") == changed)
    assert len(again) == 1 and again[0][0] != first_id  # the first one is not replayed; the new one arrives


async def test_completions_and_subscriptions_reach_the_server_that_owns_the_name(env: dict[str, Proc]) -> None:
    updated: list[str] = []
    got = asyncio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if type(root).__name__ == "ResourceUpdatedNotification":
            updated.append(str(root.params.uri))
            got.set()

    async with Client(f"{env['gw'].base}/mcp", mode="legacy", message_handler=on_message) as client:
        done = await client.complete(PromptReference(type="ref/prompt", name="everything__completable-prompt"),
                                     {"name": "department", "value": "Eng"})
        assert done.completion.values == ["Engineering"]
        resources = await all_pages(client.list_resources, "resources")
        uri = next(str(r.uri) for r in resources if str(r.uri).startswith("mcpgw://everything/"))
        with pytest.warns(MCPDeprecationWarning):  # removed in 2026-07-28; still the 2025-11-25 way
            await client.subscribe_resource(uri)
        await client.call_tool("everything__toggle-subscriber-updates", {})
        await asyncio.wait_for(got.wait(), 15)  # the reference server sends updates every 5 s
    assert uri in updated


async def test_the_log_level_is_set_on_every_server(env: dict[str, Proc]) -> None:
    gw = env["gw"]
    async with Client(f"{gw.base}/mcp", mode="legacy") as client:
        with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28; still the 2025-11-25 way
            await client.set_logging_level("warning")
    lines = [json.loads(line) for line in gw.output().splitlines() if '"method":"logging/setLevel"' in line]
    assert {"web", "local", "everything", "oldsse"} <= {line["server"] for line in lines if line["outcome"] == "ok"}
