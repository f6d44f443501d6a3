"""Bounds of the session model through the real gateway, with a bounded count and time.

What is tried: 2,000 idle host sessions (none may hold an upstream connection), hosts
that vanish in the middle of an elicitation (their upstream calls must be cancelled and
released), a host that drops its stream and resumes the call, and a server flooding a
session with requests the host never answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import anyio
import pytest
from gateway_harness import Proc, gateway, upstream_server
from mcp import Client
from mcp.types import TextContent
from test_replicas import _established_to

pytestmark = pytest.mark.anyio

POLICY = {"modes": ["form", "url"]}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "raw", "version": "1"}}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, Proc]]:
    tmp = tmp_path_factory.mktemp("bounds")
    with upstream_server(tmp) as up, gateway(
        tmp, {"up": (up.base + "/mcp", POLICY)}, sessions={"resume_grace_seconds": 1.0, "max_sessions": 5000}
    ) as gw:
        yield up, gw


def endpoint(gw: Proc) -> str:
    return f"{gw.base}/servers/up/mcp"


async def open_session(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    async with http.post(url, json=INIT, headers=HEADERS) as r:
        assert r.status == 200, await r.text()
        sid = r.headers["Mcp-Session-Id"]
    headers = {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    async with http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers) as r:
        assert r.status == 202
    return headers


async def in_flight(gw: Proc) -> dict[str, int]:
    async with Client(endpoint(gw), mode="legacy") as client:
        block = (await client.call_tool("in_flight", {})).content[0]
    assert isinstance(block, TextContent)
    out: dict[str, int] = json.loads(block.text)
    return out


async def test_two_thousand_idle_sessions_hold_no_upstream_connection_and_a_new_one_works(
    env: tuple[Proc, Proc],
) -> None:
    up, gw = env
    url = endpoint(gw)
    limit = asyncio.Semaphore(32)
    async with aiohttp.ClientSession() as http:

        async def one() -> None:
            async with limit:
                await open_session(http, url)

        with anyio.fail_after(120):
            await asyncio.gather(*(one() for _ in range(2000)))
    await anyio.sleep(0.5)
    # An idle session keeps nothing open upstream: only the pooled keep-alive connections remain.
    assert _established_to(up.port, gw.process.pid) <= 100
    async with Client(url, mode="legacy") as client:
        tools = await client.list_tools()
        assert any(t.name == "echo" for t in tools.tools)


async def ask_and_drop(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str], rid: int, tool: str = "ask_and_wait"
) -> tuple[str | None, dict[str, Any]]:
    """Call ask_and_wait, read until its elicitation arrives, then drop the connection.
    Returns the last event id seen and the elicitation."""
    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
    resp = await http.post(url, json=call, headers=headers)
    last_id = None
    async for raw in resp.content:
        line = raw.decode().strip()
        if line.startswith("id:"):
            last_id = line[3:].strip()
        if line.startswith("data:") and "elicitation/create" in line:
            resp.close()
            return last_id, json.loads(line[5:])
    raise AssertionError("no elicitation arrived")


async def _call_and_vanish(http: aiohttp.ClientSession, url: str) -> None:
    await ask_and_drop(http, url, await open_session(http, url), 2)  # the host vanishes without answering


async def test_hosts_that_vanish_mid_elicitation_have_their_upstream_calls_cancelled_and_released(
    env: tuple[Proc, Proc],
) -> None:
    _, gw = env
    before = await in_flight(gw)
    async with aiohttp.ClientSession() as http:
        with anyio.fail_after(30):
            await asyncio.gather(*(_call_and_vanish(http, endpoint(gw)) for _ in range(10)))
    # resume_grace is 1 s here: then each call is cancelled upstream and its stream released.
    with anyio.fail_after(15):
        while (now := await in_flight(gw))["ask_and_wait"] > before["ask_and_wait"]:
            await anyio.sleep(0.3)
    assert now["cancelled"] - before["cancelled"] == 10
    assert gw.output().count('"event":"request.cancelled_upstream"') >= 10


async def test_a_host_that_drops_its_stream_resumes_the_call_and_answers_the_elicitation(
    env: tuple[Proc, Proc],
) -> None:
    _, gw = env
    url = endpoint(gw)
    async with aiohttp.ClientSession() as http:
        headers = await open_session(http, url)
        last_id, asked = await ask_and_drop(http, url, headers, 7)  # drops right after the question arrived
        assert last_id is not None
        await anyio.sleep(0.2)
        # Resume (GET + Last-Event-ID), answer the question, and the call's result arrives on the resumed stream.
        resumed: list[Any] = []
        async with http.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}) as s:
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
            async with http.post(url, json=answer, headers=headers) as r:
                assert r.status == 202
            with anyio.fail_after(10):
                async for raw in s.content:
                    line = raw.decode().strip()
                    if line.startswith("data:") and line[5:].strip():
                        resumed.append(json.loads(line[5:]))
                        if resumed[-1].get("id") == 7:
                            break
        assert resumed[-1]["result"]["content"][0]["text"] == "accept"
        # The elicitation was not sent twice: the host had already received it before the drop.
        assert not any(m.get("method") == "elicitation/create" for m in resumed)


async def test_a_resumed_call_whose_grace_ran_out_gets_a_clear_error(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    url = endpoint(gw)
    async with aiohttp.ClientSession() as http:
        headers = await open_session(http, url)
        last_id, _ = await ask_and_drop(http, url, headers, 8)
        await anyio.sleep(2.5)  # past resume_grace (1 s): the call was cancelled upstream
        assert last_id is not None
        with anyio.fail_after(10):
            async with http.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}) as s:
                body = (await s.read()).decode()
        [error] = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]
        assert error["id"] == 8 and error["error"]["code"] == -32012
        assert "cancelled" in error["error"]["message"]


async def test_a_host_that_opens_its_get_stream_again_replaces_the_one_it_left(env: tuple[Proc, Proc]) -> None:
    """The gateway notices a GET stream whose host left only at its next write; a new GET for the same
    session must not be refused (409) meanwhile: it replaces the old one, and events reach it."""
    _, gw = env
    url = endpoint(gw)
    async with aiohttp.ClientSession() as http:
        headers = await open_session(http, url)
        get_headers = {**headers, "Accept": "text/event-stream"}
        first = await http.get(url, headers=get_headers)
        assert first.status == 200
        first.close()  # the host leaves without a word; no write has told the gateway yet
        for _ in range(3):  # reconnecting at once, several times
            async with http.get(url, headers=get_headers) as again:
                assert again.status == 200
        async with http.get(url, headers=get_headers) as stream:
            got = False
            for attempt in range(10):  # until the replica's upstream stream for this session is open again
                async with http.post(url, json={"jsonrpc": "2.0", "id": 5 + attempt, "method": "tools/call",
                                                "params": {"name": "announce", "arguments": {}}}, headers=headers) as r:
                    await r.read()
                with anyio.move_on_after(1):
                    async for raw in stream.content:
                        if b"notifications/tools/list_changed" in raw:
                            got = True
                            break
                if got:
                    break
            assert got, "no event reached the replacing GET stream"
