"""The npm reference server `@modelcontextprotocol/server-everything` (TypeScript SDK) through the gateway."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import REPO, Proc, free_port, gateway, running
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

EVERYTHING = REPO / "tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
POLICY = {"modes": ["form", "url"], "url_mode": {"allowed_hosts": ["example.com", "modelcontextprotocol.io"]}}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        pytest.fail("node and tests/npm/node_modules are needed: `make test` installs them with npm ci")
    tmp = tmp_path_factory.mktemp("everything")
    port = free_port()
    with running([node, str(EVERYTHING), "streamableHttp"], port, tmp / "everything.log", env={"PORT": str(port)}):
        with gateway(tmp, {"everything": (f"http://127.0.0.1:{port}/mcp", POLICY)}) as g:
            yield g


async def test_url_elicitation_tool_of_the_reference_server(gw: Proc, tmp_path: Path) -> None:
    seen: list[Any] = []

    async def cb(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept")

    url = "https://example.com/consent?id=42"
    async with Client(f"{gw.base}/servers/everything/mcp", mode="legacy", elicitation_callback=cb) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "trigger-url-elicitation" in tools
        result = await client.call_tool("trigger-url-elicitation", {"url": url, "elicitationId": "ts-1"})
        block = result.content[0]
        assert isinstance(block, TextContent) and "completed the URL elicitation" in block.text
        # the error path: -32042 whose entry passes the URL policy reaches the host intact
        with pytest.raises(MCPError) as info:
            await client.call_tool("trigger-url-elicitation", {"url": url, "errorPath": True})
    [params] = seen
    assert params.url == url and params.elicitation_id == "ts-1"
    assert params.message.startswith("[everything] ")
    assert info.value.error.code == -32042
    [entry] = info.value.error.data["elicitations"]
    assert entry["url"] == "https://modelcontextprotocol.io"
