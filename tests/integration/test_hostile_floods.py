"""Hostile servers that flood, send giant schemas or name other sessions' ids, through the real gateway.

Each attack is refused with a log line, and a well-behaved server behind the same gateway
(the real SDK server) keeps answering, as does the hostile server's next call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from gateway_harness import HERE, Proc, free_port, gateway, received_by, running, text_of, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, ErrorData, ListRootsResult

pytestmark = pytest.mark.anyio

MAX_PENDING = 8
POLICY = {"modes": ["form", "url"], "rate_limit": "1000/minute"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, Proc]]:
    tmp = tmp_path_factory.mktemp("floods")
    port = free_port()
    with running([sys.executable, str(HERE / "hostile_upstream.py"), str(port)], port, tmp / "hostile.log") as up:
        with upstream_server(tmp) as calm:
            servers = {"hostile": (up.base + "/mcp", POLICY), "calm": (calm.base + "/mcp", {"modes": ["form"]})}
            with gateway(tmp, servers, sessions={"max_pending_server_requests": MAX_PENDING}) as gw:
                yield up, gw


async def call(gw: Proc, scenario: str, seen: list[Any] | None = None, answer_after: float = 0.0) -> Any:
    """`answer_after`: the host holds every answer that long (so a burst cannot free pending slots)."""
    async def host(context: Any, params: Any) -> ElicitResult:
        if seen is not None:
            seen.append(params)
        await anyio.sleep(answer_after)
        return ElicitResult(action="decline")

    async def sample(context: Any, params: Any) -> Any:
        await anyio.sleep(answer_after)
        return ErrorData(code=-32601, message="no sampling here")

    async def roots(context: Any) -> Any:
        await anyio.sleep(answer_after)
        return ListRootsResult(roots=[])

    async with Client(f"{gw.base}/servers/hostile/mcp", mode="legacy", elicitation_callback=host,
                      sampling_callback=sample, list_roots_callback=roots) as client:
        try:
            return await client.call_tool(scenario, {})
        except MCPError as exc:
            return exc.error


received = received_by
text = text_of


async def calm_still_answers(gw: Proc) -> None:
    async with Client(f"{gw.base}/servers/calm/mcp", mode="legacy") as client:
        result = await client.call_tool("echo", {"text": "still here"})
    assert text(result) == "still here"


async def test_a_flood_of_server_requests_of_every_kind_is_capped_per_session(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    result = await call(gw, "flood_requests", answer_after=0.5)
    assert text(result) == "end"
    refusals = [m for m in await received(up) if isinstance(m.get("id"), int) and m["id"] >= 1000 and "error" in m
                and "too many requests pending" in m["error"]["message"]]
    # 60 requests arrive at once and the host holds its answers: only MAX_PENDING can wait, the rest are refused
    assert len(refusals) >= 60 - MAX_PENDING
    kinds = {m["id"] % 3 for m in refusals}
    assert kinds == {0, 1, 2}  # sampling, roots and elicitation requests alike
    assert gw.logged('"event":"upstream.request_refused"')
    await calm_still_answers(gw)


async def test_a_giant_schema_is_blocked_and_the_server_told(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    seen: list[Any] = []
    result = await call(gw, "giant_schema", seen)
    assert text(result) == "end" and seen == []
    [refusal] = [m for m in await received(up) if m.get("id") == 44]
    assert refusal["error"]["code"] == -32050 and "schema.invalid" in refusal["error"]["message"]
    await calm_still_answers(gw)


async def test_an_event_over_the_bound_fails_only_its_own_call(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    error = await call(gw, "oversized_event")
    assert error.code in (-32010, -32011, -32012, -32013)  # the gateway's upstream errors
    assert text(await call(gw, "busy")) == "end"  # the same server's next call works
    await calm_still_answers(gw)


async def test_a_notification_flood_is_cut_to_the_sessions_budget_and_logged(env: tuple[Proc, Proc]) -> None:
    """4000 notifications in one call: the host gets about max_notifications_per_second of them (200),
    the rest are dropped with a log line; the call's answer still arrives, and other servers serve on."""
    _, gw = env
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async with Client(f"{gw.base}/servers/hostile/mcp", mode="legacy", message_handler=on_message) as client:
        result = await client.call_tool("chatty", {})
    assert text(result) == "end"
    assert 150 <= len(notes) <= 1000
    assert gw.logged('"event":"upstream.notification_flood"')
    await calm_still_answers(gw)


async def test_notifications_naming_other_sessions_ids_and_tokens_are_dropped(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async with Client(f"{gw.base}/servers/hostile/mcp", mode="legacy", message_handler=on_message) as client:
        result = await client.call_tool("foreign_ids", {})
    assert text(result) == "end"
    assert not [n for n in notes if "progress" in repr(n).lower() or "cancel" in repr(n).lower()
                or "not-mine" in repr(n)]
    log = gw.output()
    assert '"event":"elicitation.complete_dropped"' in log
    assert log.count('"event":"upstream.') >= 2  # the progress and the cancellation, each with its own line


async def test_duplicate_keys_from_a_server_are_refused(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    seen: list[Any] = []
    error = await call(gw, "duplicate_keys", seen)
    assert seen == [] and error.code in (-32011, -32012)
    assert gw.logged('"event":"upstream.stream_failed"') and "malformed JSON" in gw.output()
    await calm_still_answers(gw)
