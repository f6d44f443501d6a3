"""Timeouts that respect people, through the real gateway, real SDK server and real SDK client.

- `request_timeout_seconds` bounds the server's time on a call: a call that takes longer ends
  with -32013 for the host, and the server gets `notifications/cancelled` (it observes it);
- the clock pauses while one of the call's elicitations waits for the person: an answer that
  takes longer than the request timeout still completes the call;
- `sessions.elicitation_timeout_seconds` bounds that wait: past it the call ends with -32014,
  the server's call is cancelled, and the host's late answer is refused.

The fast tests use a 1 s request timeout and a 2 s answer; the 10 s / 2 s case runs once, below.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_harness import Proc, gateway, stdio_spec, text_of, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
POLICY = {"modes": ["form"]}
REQUEST_TIMEOUT = 1.0
ANSWER_AFTER = 2.0
ELICITATION_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("timeouts")
    with upstream_server(tmp, "old", era="legacy") as old, upstream_server(tmp, "new", era="modern") as new:
        servers = {
            "old": ({"url": old.base + "/mcp", "request_timeout_seconds": REQUEST_TIMEOUT}, POLICY),
            "new": ({"url": new.base + "/mcp", "request_timeout_seconds": REQUEST_TIMEOUT}, POLICY),
            "stdio": ({**stdio_spec(), "request_timeout_seconds": REQUEST_TIMEOUT}, POLICY),
        }
        with gateway(tmp, servers, sessions={"elicitation_timeout_seconds": ELICITATION_TIMEOUT}) as p:
            yield p


def answer_after(seconds: float, seen: list[float] | None = None) -> Any:
    async def callback(context: Any, params: Any) -> ElicitResult:
        await anyio.sleep(seconds)
        if seen is not None:
            seen.append(seconds)
        return ElicitResult(action="accept", content={"name": "Ada"})

    return callback


async def in_flight(client: Client) -> dict[str, int]:
    counts: dict[str, int] = json.loads(text_of(await client.call_tool("in_flight", {})))
    return counts


async def wait_for_count(client: Client, key: str, above: int) -> None:
    with anyio.fail_after(10):
        while (await in_flight(client))[key] <= above:
            await anyio.sleep(0.1)


# Every pairing: the handshake-era ones pause the call's clock; for 2026-07-28 hosts the person
# answers between requests (input_required rounds), so no request clock runs while they answer.
PAIRINGS = [("legacy", "old"), ("legacy", "new"), (MODERN, "old"), (MODERN, "new")]


@pytest.mark.parametrize(("mode", "server"), [*PAIRINGS, ("legacy", "stdio")])
async def test_a_slow_answer_from_a_person_does_not_time_the_call_out(gw: Proc, mode: str, server: str) -> None:
    seen: list[float] = []
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode,
                      elicitation_callback=answer_after(ANSWER_AFTER, seen)) as client:
        started = time.monotonic()
        result = await client.call_tool("greet", {})  # elicits in either revision family
        assert text_of(result).startswith("Hello Ada")
        assert time.monotonic() - started >= ANSWER_AFTER > REQUEST_TIMEOUT
    assert seen == [ANSWER_AFTER]


@pytest.mark.parametrize(("mode", "server"), [*PAIRINGS, ("legacy", "stdio")])
async def test_a_server_slower_than_its_request_timeout_is_cancelled(gw: Proc, mode: str, server: str) -> None:
    async with Client(f"{gw.base}/servers/{server}/mcp", mode=mode) as client:
        before = await in_flight(client)
        started = time.monotonic()
        with pytest.raises(MCPError) as info:
            await client.call_tool("slow_echo", {"text": "x", "seconds": 30})
        elapsed = time.monotonic() - started
        assert info.value.error.code == -32013
        assert "request timeout" in info.value.error.message and repr(server) in info.value.error.message
        assert REQUEST_TIMEOUT <= elapsed < REQUEST_TIMEOUT + 3
        await wait_for_count(client, "slow_cancelled", before["slow_cancelled"])  # the server saw the cancellation
        assert text_of(await client.call_tool("echo", {"text": "still fine"})) == "still fine"
    assert gw.logged('"request.timed_out"')


async def test_an_unanswered_elicitation_ends_the_call_at_the_elicitation_timeout(gw: Proc) -> None:
    withdrawn: list[float] = []

    async def never_answers(context: Any, params: Any) -> ElicitResult:
        started = time.monotonic()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():  # the host's SDK got notifications/cancelled for it
            withdrawn.append(time.monotonic() - started)
            raise
        return ElicitResult(action="accept", content={"name": "too late"})

    async with Client(f"{gw.base}/servers/old/mcp", mode="legacy", elicitation_callback=never_answers) as client:
        before = await in_flight(client)
        started = time.monotonic()
        with pytest.raises(MCPError) as info:
            await client.call_tool("ask_and_wait", {})
        elapsed = time.monotonic() - started
        assert info.value.error.code == -32014
        assert "elicitation timeout" in info.value.error.message
        assert ELICITATION_TIMEOUT <= elapsed < ELICITATION_TIMEOUT + 3
        await wait_for_count(client, "cancelled", before["cancelled"])  # the server's call was cancelled
        assert text_of(await client.call_tool("echo", {"text": "next"})) == "next"
        assert len(withdrawn) == 1 and withdrawn[0] < ELICITATION_TIMEOUT + 2  # the host's form was withdrawn
    log = gw.output()
    assert '"reason":"elicitation_timeout"' in log


@pytest.mark.timeout(90)
async def test_a_ten_second_answer_under_a_two_second_request_timeout(tmp_path: Path) -> None:
    """The brief's case as stated (the one slow test here): 10 s for the person, 2 s for the server."""
    with upstream_server(tmp_path, "old", era="legacy") as old:
        servers = {"old": ({"url": old.base + "/mcp", "request_timeout_seconds": 2}, POLICY)}
        with gateway(tmp_path, servers) as gw:
            async with Client(f"{gw.base}/servers/old/mcp", mode="legacy",
                              elicitation_callback=answer_after(10)) as client:
                started = time.monotonic()
                result = await client.call_tool("ask_name", {})
                assert json.loads(text_of(result)) == {"action": "accept", "name": "Ada"}
                assert time.monotonic() - started >= 10


async def test_a_host_cancelling_while_its_person_thinks_cancels_the_call_upstream(gw: Proc) -> None:
    """A handshake-era host gives up (notifications/cancelled) while an elicitation is pending: the
    server's call is cancelled at once, not left waiting for the elicitation timeout."""
    async with Client(f"{gw.base}/servers/old/mcp", mode="legacy", elicitation_callback=answer_after(30)) as client:
        before = await in_flight(client)
        with anyio.move_on_after(1):
            await client.call_tool("ask_and_wait", {})
        started = time.monotonic()
        await wait_for_count(client, "cancelled", before["cancelled"])
        assert time.monotonic() - started < ELICITATION_TIMEOUT - 1


async def test_a_2026_host_that_abandons_a_round_frees_the_held_call_at_the_elicitation_timeout(gw: Proc) -> None:
    """A 2026-07-28 host has no request open while its person answers, so nothing tells the gateway it
    gave up: the call held on a handshake-era server ends at the elicitation timeout, and is cancelled there."""
    async with Client(f"{gw.base}/servers/old/mcp", mode=MODERN, elicitation_callback=answer_after(30)) as client:
        before = await in_flight(client)
        started = time.monotonic()
        with anyio.move_on_after(1):
            await client.call_tool("ask_and_wait", {})
        await wait_for_count(client, "cancelled", before["cancelled"])
        assert time.monotonic() - started >= ELICITATION_TIMEOUT


@pytest.mark.redis
async def test_an_answer_taken_on_another_replica_restarts_the_calls_clock(tmp_path: Path) -> None:
    """Replicas A and B on Redis: the call runs on A, its elicitation is answered on B after longer
    than the request timeout (paused: fine), then the server works on for 5 s: A's clock, woken
    through the store, runs again and ends the call with -32013 about 1 s after the answer."""
    import uuid

    import httpx2
    from gateway_harness import sse_messages

    state = {"backend": "redis", "url": "redis://127.0.0.1:6379/15", "key_prefix": f"mcpgw-test-{uuid.uuid4().hex}:"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "raw", "version": "1"}}}
    with upstream_server(tmp_path, "old", era="legacy") as old:
        servers = {"old": ({"url": old.base + "/mcp", "request_timeout_seconds": REQUEST_TIMEOUT}, POLICY)}
        with gateway(tmp_path, servers, state, name="a") as a, gateway(tmp_path, servers, state, name="b") as b:
            async with httpx2.AsyncClient(timeout=30) as http:
                r = await http.post(f"{a.base}/servers/old/mcp", json=init, headers=headers)
                headers["Mcp-Session-Id"] = r.headers["mcp-session-id"]
                await http.post(f"{a.base}/servers/old/mcp", headers=headers,
                                json={"jsonrpc": "2.0", "method": "notifications/initialized"})
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "ask_then_work", "arguments": {"seconds": 5}}}
                answered_at = 0.0
                async with http.stream("POST", f"{a.base}/servers/old/mcp", json=call, headers=headers) as stream:
                    buffer = ""
                    async for chunk in stream.aiter_text():
                        buffer += chunk
                        if not buffer.endswith("\n\n"):
                            continue
                        messages, buffer = sse_messages(buffer), ""
                        for message in messages:
                            if message.get("method") == "elicitation/create":
                                await anyio.sleep(REQUEST_TIMEOUT + 0.5)  # the person thinks: paused
                                answer = {"jsonrpc": "2.0", "id": message["id"],
                                          "result": {"action": "accept", "content": {"name": "Ada"}}}
                                r = await http.post(f"{b.base}/servers/old/mcp", json=answer, headers=headers)
                                assert r.status_code == 202
                                answered_at = time.monotonic()
                            elif message.get("id") == 2:
                                final = message
                                break
                        else:
                            continue
                        break
            assert answered_at
            assert final["error"]["code"] == -32013, final
            assert time.monotonic() - answered_at < 4  # not the server's 5 s: the clock ran again after B took the answer
            # The log line is written just after the error goes out: give the process a moment to write it.
            for _ in range(40):
                if '"request.timed_out"' in a.output():
                    break
                await anyio.sleep(0.05)
            assert a.logged('"request.timed_out"')
