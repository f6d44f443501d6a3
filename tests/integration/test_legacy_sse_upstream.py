"""A legacy HTTP+SSE server (2024-11-05: the SDK's `sse_app`) behind the gateway, driven by the real SDK client:
`servers.<name>.transport: sse`. Tools, an elicitation the policy allows (tagged with its origin) and one it
blocks (a password form) that the host never sees."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from gateway_harness import HERE, AnsweringHost, Proc, free_port, gateway, running, text_of, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

ORIGIN_KEY = "dev.elicitation-gateway/origin"
PASSWORD_FORM = {
    "mode": "form", "message": "Sign in",
    "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("legacy_sse")
    with upstream_server(tmp, "sse_upstream", era="sse") as up:
        spec = {"url": f"{up.base}/sse", "transport": "sse"}
        with gateway(tmp, {"oldsse": (spec, {"modes": ["form"]})}) as p:
            yield p


def Host() -> AnsweringHost:
    return AnsweringHost("Bo")


async def test_tool_call_and_an_allowed_elicitation_carry_the_origin_tag(gw: Proc) -> None:
    host = Host()
    async with Client(f"{gw.base}/servers/oldsse/mcp", mode="legacy", elicitation_callback=host) as client:
        assert text_of(await client.call_tool("echo", {"text": "over legacy sse"})) == "over legacy sse"
        caps = json.loads(text_of(await client.call_tool("client_caps", {})))
        answer = json.loads(text_of(await client.call_tool("ask_name", {})))
    assert caps["capabilities"]["elicitation"] == {"form": {}}
    assert answer == {"action": "accept", "name": "Bo"}
    [params] = host.seen
    assert params.message == "[oldsse] What is your name?"
    assert params.meta[ORIGIN_KEY] == {"server": "oldsse"}


async def test_a_password_form_is_blocked_and_never_reaches_the_host(gw: Proc) -> None:
    host = Host()
    async with Client(f"{gw.base}/servers/oldsse/mcp", mode="legacy", elicitation_callback=host) as client:
        out = json.loads(text_of(await client.call_tool("elicit_raw", {"params_json": json.dumps(PASSWORD_FORM)})))
        with pytest.raises(MCPError, match="sensitive_fields"):  # the server's Resolve fails with the refusal
            await client.call_tool("sign_in", {})
    assert host.seen == []
    assert out["error"]["code"] == -32050 and "sensitive_fields" in out["error"]["message"]
    decisions = [json.loads(line) for line in gw.output().splitlines() if '"elicitation.decision"' in line]
    assert any(d["server"] == "oldsse" and d["decision"] == "block" and "sensitive_fields" in d["rules"]
               for d in decisions)


async def test_a_2026_07_28_host_is_translated_onto_the_handshake_era_the_sse_server_speaks(gw: Proc) -> None:
    """`protocol: auto` on a `transport: sse` server means `legacy`: the server is never probed for 2026-07-28
    (the SDK server would answer it), and a modern host's call runs there translated, elicitation included."""
    host = Host()
    async with Client(f"{gw.base}/servers/oldsse/mcp", mode="2026-07-28", elicitation_callback=host) as client:
        result = await client.call_tool("greet", {})
    assert text_of(result) == "Hello Bo (2025-11-25)"
    assert host.seen[0].meta[ORIGIN_KEY] == {"server": "oldsse"}


async def test_a_restarted_sse_server_is_reconnected_and_the_host_session_goes_on(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The SDK SSE server stops (its streams end) and comes back on the same port: the call after that works on
    the same host session, with an elicitation (the server got the session's initialize again)."""
    tmp = tmp_path_factory.mktemp("sse_restart")
    port = free_port()
    args = [sys.executable, str(HERE / "upstream_server.py"), str(port), "sse"]
    spec = {"url": f"http://127.0.0.1:{port}/sse", "transport": "sse",
            "restart": {"backoff_base_seconds": 0.2, "backoff_max_seconds": 1, "max_attempts": 20}}
    host = Host()
    with ExitStack() as first:
        first.enter_context(running(args, port, tmp / "sse-1.log"))
        with gateway(tmp, {"oldsse": (spec, {"modes": ["form"]})}) as gw:
            async with Client(f"{gw.base}/servers/oldsse/mcp", mode="legacy", elicitation_callback=host) as client:
                assert text_of(await client.call_tool("echo", {"text": "before"})) == "before"
                first.close()  # the server stops
                with running(args, port, tmp / "sse-2.log"):
                    assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"
                    answer = json.loads(text_of(await client.call_tool("ask_name", {})))
            assert answer == {"action": "accept", "name": "Bo"}
            log = gw.output()
            assert '"event":"upstream.channel_lost"' in log and '"event":"upstream.restarted"' in log
