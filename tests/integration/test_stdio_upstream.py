"""A stdio upstream (the same SDK server, launched by the gateway) behind the HTTP endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Proc, gateway, stdio_spec
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("stdio")
    spec = {**stdio_spec(), "restart": {"backoff_base_seconds": 0.05, "backoff_max_seconds": 1}}
    with gateway(tmp, {"files": (spec, {"modes": ["form"]})}) as p:
        yield p


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_stdio_tools_and_elicitation_round_trip(gw: Proc) -> None:
    seen: list[Any] = []

    async def cb(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Bo"})

    async with Client(f"{gw.base}/servers/files/mcp", mode="legacy", elicitation_callback=cb) as client:
        assert text_of(await client.call_tool("echo", {"text": "over stdio"})) == "over stdio"
        caps = json.loads(text_of(await client.call_tool("client_caps", {})))
        assert caps["capabilities"]["elicitation"] == {"form": {}}
        answer = json.loads(text_of(await client.call_tool("ask_name", {})))
    assert answer == {"action": "accept", "name": "Bo"}
    assert seen[0].message == "[files] What is your name?"


async def test_two_hosts_get_two_processes(gw: Proc, tmp_path: Path) -> None:
    async with Client(f"{gw.base}/servers/files/mcp", mode="legacy") as a, Client(
        f"{gw.base}/servers/files/mcp", mode="legacy"
    ) as b:
        assert text_of(await a.call_tool("echo", {"text": "a"})) == "a"
        assert text_of(await b.call_tool("echo", {"text": "b"})) == "b"
    assert gw.output().count('"event":"session.created"') >= 2


async def test_a_crashed_process_is_restarted_and_serves_the_next_call(gw: Proc) -> None:
    """The call in flight gets -32012 at once; the next calls (an elicitation too) reach a new process, which the
    gateway initialized again with the session's own initialize; the crash's stderr line is in the JSON log."""

    async def cb(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Bo"})

    async with Client(f"{gw.base}/servers/files/mcp", mode="legacy", elicitation_callback=cb) as client:
        before = text_of(await client.call_tool("process_id", {}))
        with pytest.raises(MCPError) as crashed:
            await client.call_tool("crash", {"note": "about to crash: note-4711"})
        assert crashed.value.error.code == -32012 and "process exited" in crashed.value.error.message
        assert text_of(await client.call_tool("echo", {"text": "after the restart"})) == "after the restart"
        after = text_of(await client.call_tool("process_id", {}))
        answer = json.loads(text_of(await client.call_tool("ask_name", {})))
    assert after != before
    assert answer == {"action": "accept", "name": "Bo"}
    lines = [json.loads(line) for line in gw.output().splitlines() if line.startswith("{")]
    [stderr] = [e for e in lines if e["event"] == "upstream.stderr" and "note-4711" in e["line"]]
    assert stderr == {**stderr, "server": "files", "pid": int(before), "line": "about to crash: note-4711",
                      "truncated": False, "level": "info"}
    assert any(e["event"] == "upstream.channel_lost" and e["server"] == "files" for e in lines)
    assert any(e["event"] == "upstream.restarted" and e["server"] == "files" for e in lines)
