"""A stdio upstream (the same SDK server, launched by the gateway) behind the HTTP endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Proc, gateway, stdio_spec
from mcp import Client
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("stdio")
    with gateway(tmp, {"files": (stdio_spec(), {"modes": ["form"]})}) as p:
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
