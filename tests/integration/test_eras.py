"""2026-07-28 on both hops and translation between the eras, through the real gateway.

Real SDK clients in `legacy` and `2026-07-28` modes, against real SDK servers that speak
only the handshake era or only 2026-07-28 (the SDK's own middleware refuses the other),
with `protocol: auto` in the gateway. Every pairing completes a form elicitation with the
origin tag and blocks a password request the host never sees.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import httpx2
import pytest
from gateway_harness import AnsweringHost, Proc, gateway, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ORIGIN_KEY = "dev.elicitation-gateway/origin"
POLICY = {"modes": ["form", "url"]}
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("eras")
    with ExitStack() as stack:
        old = stack.enter_context(upstream_server(tmp, "legacy-server", era="legacy"))
        new = stack.enter_context(upstream_server(tmp, "modern-server", era="modern"))
        servers = {"old": (old.base + "/mcp", POLICY), "new": (new.base + "/mcp", POLICY)}
        yield stack.enter_context(gateway(tmp, servers))


Host = AnsweringHost

def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


PAIRINGS = [("legacy", "old"), ("legacy", "new"), (MODERN, "old"), (MODERN, "new")]


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_every_pairing_completes_a_form_elicitation_with_the_origin_tag(gw: Proc, mode: str, server: str) -> None:
    host = Host()
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode, elicitation_callback=host) as client:
        result = await client.call_tool("greet", {})
    server_era = "2025-11-25" if server == "old" else MODERN
    assert text_of(result) == f"Hello Ada ({server_era})"
    [params] = host.seen
    assert params.message.startswith(f"[{server}] ")
    assert params.meta[ORIGIN_KEY] == {"server": server}


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_every_pairing_blocks_a_password_request(gw: Proc, mode: str, server: str) -> None:
    """The server learns it was blocked (its elicitation fails, or it is declined for it) and the
    call fails; the host never sees the question."""
    host = Host()
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode, elicitation_callback=host) as client:
        try:
            result = await client.call_tool("sign_in", {})
            outcome = text_of(result) if not result.is_error else "error"
        except MCPError as exc:
            outcome = exc.error.message
    assert host.seen == []
    assert outcome != "signed in"
    assert "password" not in outcome or "sensitive_fields" in outcome


# -- the protocol as a raw 2026-07-28 host sends it ------------------------------------------------------


def modern_call(rid: Any, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}, "_meta": meta, **extra}}


async def post_modern(http: httpx2.AsyncClient, gw: Proc, server: str, msg: dict[str, Any]) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": msg["method"], "Mcp-Name": msg["params"].get("name", "")}
    return await http.post(f"{gw.base}/servers/{server}/mcp", json=msg, headers=headers)


def answer_of(response: httpx2.Response) -> Any:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()][-1]
    return response.json()


@pytest.mark.parametrize("server", ["old", "new"])
async def test_a_retry_answers_only_what_the_host_was_asked_and_state_is_opaque(gw: Proc, server: str) -> None:
    async with httpx2.AsyncClient(timeout=15) as http:
        first = answer_of(await post_modern(http, gw, server, modern_call(1, "greet")))
        result = first["result"]
        assert result["resultType"] == "input_required"
        [(key, request)] = result["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"].startswith(f"[{server}] ")
        state = result["requestState"]
        answers = {key: {"action": "accept", "content": {"name": "Ada"}},
                   "never-asked": {"action": "accept", "content": {"name": "Mallory"}}}
        retry = modern_call(2, "greet", inputResponses=answers, requestState=state)
        done = answer_of(await post_modern(http, gw, server, retry))
    assert done["id"] == 2
    assert done["result"]["content"][0]["text"].startswith("Hello Ada")
    assert done["result"]["resultType"] == "complete"
    assert gw.logged('"event":"host.answer_dropped"')


@pytest.mark.parametrize("server", ["old", "new"])
async def test_a_tampered_request_state_is_refused_cleanly(gw: Proc, server: str) -> None:
    async with httpx2.AsyncClient(timeout=15) as http:
        first = answer_of(await post_modern(http, gw, server, modern_call(1, "greet")))
        key = next(iter(first["result"]["inputRequests"]))
        state = first["result"]["requestState"]
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        retry = modern_call(2, "greet", inputResponses={key: {"action": "accept", "content": {"name": "Ada"}}},
                            requestState=tampered)
        response = await post_modern(http, gw, server, retry)
    # the old server's state is the gateway's (it seals it); the new server's is the server's own
    assert response.status_code == 400
    error = answer_of(response)["error"]
    assert error["code"] == -32602 and "requestState" in error["message"]


async def test_discover_offers_2026_for_a_handshake_only_server(gw: Proc) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_call(0, "x")["params"]["_meta"]}}
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(f"{gw.base}/servers/old/mcp", json=msg, headers={
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "server/discover"})
    result = response.json()["result"]
    assert result["supportedVersions"] == [MODERN]
    assert "tools" in result["capabilities"]


async def test_routing_headers_that_disagree_with_the_body_are_refused(gw: Proc) -> None:
    msg = modern_call(1, "greet")
    async with httpx2.AsyncClient(timeout=10) as http:
        for wrong in ({"Mcp-Name": "sign_in"}, {"Mcp-Method": "tools/list"}, {"MCP-Protocol-Version": "2099-01-01"}):
            headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
                       "Mcp-Method": "tools/call", "Mcp-Name": "greet", **wrong}
            response = await http.post(f"{gw.base}/servers/new/mcp", json=msg, headers=headers)
            assert response.status_code == 400
            assert response.json()["error"]["code"] in (-32020, -32022)


async def test_a_modern_request_without_its_envelope_is_refused(gw: Proc) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(f"{gw.base}/servers/new/mcp", json=msg,
                                   headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_progress_reaches_the_host_in_every_pairing(gw: Proc, mode: str, server: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode) as client:
        result = await client.call_tool("slow_echo", {"text": "p", "seconds": 0.1}, progress_callback=on_progress)
    assert text_of(result) == "p"
    assert seen == [0.5]


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_a_host_cancelling_a_call_cancels_it_upstream(gw: Proc, mode: str, server: str) -> None:
    """Handshake-era hosts send notifications/cancelled; 2026-07-28 hosts close the request."""
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode) as client:
        before = json.loads(text_of(await client.call_tool("in_flight", {})))
        with anyio.move_on_after(0.5):
            await client.call_tool("slow_echo", {"text": "x", "seconds": 30})  # cancelled by the timeout scope
        with anyio.fail_after(10):
            while json.loads(text_of(await client.call_tool("in_flight", {})))["slow_cancelled"] == before["slow_cancelled"]:
                await anyio.sleep(0.2)


async def test_a_2026_url_request_reaches_a_handshake_host_with_an_id_and_a_completion(gw: Proc) -> None:
    """A modern server's URL input request, for a 2025-11-25 host: the gateway gives it an
    elicitationId (that revision needs one); accept means consent, and once the server has
    the retry, the host gets `notifications/elicitation/complete` for that id."""
    from mcp.types import ElicitCompleteNotification

    asked: list[Any] = []
    completed: list[str] = []

    async def consent(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept")

    async def on_message(message: Any) -> None:
        if isinstance(message, ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    async with Client(f"{gw.base}/servers/new/mcp", mode="legacy", elicitation_callback=consent,
                      message_handler=on_message) as client:
        result = await client.call_tool("url_consent", {"url": "https://auth.example.com/connect"})
        await anyio.sleep(0.2)
    assert text_of(result) == "url accept"
    [params] = asked
    assert params.mode == "url" and params.url == "https://auth.example.com/connect"
    assert params.message.startswith("[new] ")
    assert completed == [params.elicitation_id]


async def test_a_2026_url_request_to_a_host_without_url_mode_is_declined_for_it(gw: Proc) -> None:
    host = Host()  # the SDK declares both modes; a raw 2025-06-18 host below declares form only
    async with httpx2.AsyncClient(timeout=15) as http:
        url = f"{gw.base}/servers/new/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "r", "version": "1"}}}
        r = await http.post(url, json=init, headers={"Accept": "application/json, text/event-stream"})
        headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": r.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-06-18"}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "url_consent", "arguments": {"url": "https://auth.example.com/x"}}}
        r = await http.post(url, json=call, headers=headers)
    messages = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    assert not any(m.get("method") == "elicitation/create" for m in messages)
    assert messages[-1]["result"]["content"][0]["text"] == "url decline"
    assert host.seen == []


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_sampling_is_translated_in_every_pairing_for_a_host_that_declared_it(
    gw: Proc, mode: str, server: str
) -> None:
    from mcp.types import CreateMessageResult

    asked: list[Any] = []

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="old pond"), model="m")

    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode, sampling_callback=sample) as client:
        result = await client.call_tool("haiku", {})
    assert text_of(result) == "model said: old pond"
    assert len(asked) == 1


@pytest.mark.parametrize(("mode", "server"), PAIRINGS)
async def test_sampling_never_reaches_a_host_that_did_not_declare_it(gw: Proc, mode: str, server: str) -> None:
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode) as client:
        try:
            result = await client.call_tool("haiku", {})
            failed = result.is_error
        except MCPError:
            failed = True
    assert failed
