"""`logging.request_lines` thins the per-request `request` line of ok requests, and nothing else.

The real gateway process with the real SDK client and server: eight ok calls at a share of 0.25 must
leave exactly two ok `request` lines for `tools/call` while the metrics count all eight; a call to a
server nobody listens on (outcome upstream_error) and a blocked elicitation's decision are written
in full whatever the share.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from gateway_harness import AnsweringHost, Proc, free_port, gateway, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from test_operator_metrics_traces import scrape, value

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("request_lines")
    with upstream_server(tmp) as up:
        servers = {
            "main": (up.base + "/mcp", {"modes": ["form"], "sensitive_fields": "block"}),
            "dead": (f"http://127.0.0.1:{free_port()}/mcp", {}),  # nothing listens there
        }
        with gateway(tmp, servers, extra={"logging": {"format": "json", "request_lines": 0.25}}) as g:
            yield g


def lines(gw: Proc, event: str) -> list[dict[str, Any]]:
    out = []
    for line in gw.output().splitlines():
        if line.startswith("{") and f'"event":"{event}"' in line:
            out.append(json.loads(line))
    return out


def ok_call_lines(gw: Proc) -> int:
    return sum(1 for x in lines(gw, "request") if x["method"] == "tools/call" and x["outcome"] == "ok")


async def test_ok_lines_are_thinned_evenly_and_every_call_is_still_counted(gw: Proc) -> None:
    before_lines = ok_call_lines(gw)
    before_count = value(scrape(gw), "mcpgw_host_requests_total", server="main", method="tools/call", outcome="ok")
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy") as client:
        for n in range(8):
            await client.call_tool("echo", {"text": f"hi {n}"})
    after_count = value(scrape(gw), "mcpgw_host_requests_total", server="main", method="tools/call", outcome="ok")
    assert after_count - before_count == 8
    assert gw.logged('"event":"request"')
    assert ok_call_lines(gw) - before_lines == 2  # every fourth of eight


async def test_other_outcomes_and_decisions_are_always_written(gw: Proc) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    async with httpx2.AsyncClient() as http:  # nobody listens behind "dead": the gateway answers with an error
        reply = await http.post(f"{gw.base}/servers/dead/mcp", json=init,
                                headers={"Accept": "application/json, text/event-stream"})
    assert "error" in reply.json()
    assert gw.logged('"server":"dead"')
    assert any(x["server"] == "dead" and x["outcome"] != "ok" for x in lines(gw, "request"))

    host = AnsweringHost()
    decisions = len(lines(gw, "elicitation.decision"))
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy", elicitation_callback=host) as client:
        with pytest.raises(MCPError, match="blocked by gateway policy"):
            await client.call_tool("sign_in", {})
    assert gw.logged('"decision":"block"')
    assert len(lines(gw, "elicitation.decision")) == decisions + 1
    assert host.seen == []  # the password form never reached the host
