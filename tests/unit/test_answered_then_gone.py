"""A host that leaves right after its answer was written: the call counts with its own outcome (ok, or
upstream_stream_lost when the answer was that error), never host_disconnected."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.upstream.in_memory import SseReply

sys.path.insert(0, str(Path(__file__).parent))
from test_session_driver import Responder, Server, Stream, initialized, make_driver

pytestmark = pytest.mark.anyio


class LeavesAfterTheAnswer(Stream):
    """Records events; once the answer is written, the host's handler is cancelled (the host left)."""

    def __init__(self) -> None:
        super().__init__()
        self.handler: asyncio.Task[Any] | None = None

    async def write(self, payload: bytes, event_id: str | None) -> None:
        await super().write(payload, event_id)
        if b'"result"' in payload and self.handler is not None:
            self.handler.cancel()


async def counted(driver: Any, outcome: str, wait: bool = True) -> float | None:
    """Calls of tools/call counted with `outcome`; the call's own outcome is counted when the call ends, a
    moment after its handler, so this waits up to a second for it."""
    labels = {"server": "crm", "method": "tools/call", "era": "2025", "outcome": outcome}
    for _ in range(100 if wait else 1):
        found: float | None = driver.metrics.registry.get_sample_value("mcpgw_host_requests_total", labels)
        if found is not None or not wait:
            return found
        await asyncio.sleep(0.01)
    return None


async def call_and_leave(server: Server, stream: LeavesAfterTheAnswer) -> Any:
    """A tools/call whose host leaves as `stream` says; the driver, once the handler was cancelled."""
    driver, _, _ = make_driver(server)
    rec, _ = await driver.load(await initialized(driver))
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
    handler = stream.handler = asyncio.ensure_future(driver.host_request(rec, call, Responder(stream)))
    with pytest.raises(asyncio.CancelledError):
        await handler
    return driver


async def test_an_answered_call_whose_host_leaves_counts_as_ok() -> None:
    stream = LeavesAfterTheAnswer()
    driver = await call_and_leave(Server(), stream)
    assert stream.messages()[-1]["id"] == 5
    assert await counted(driver, "ok") == 1
    assert await counted(driver, "host_disconnected", wait=False) is None


class ClosesWithoutAnswering(Server):
    """A server whose stream for tools/call ends before any answer (the gateway answers the host with an error)."""

    async def __call__(self, call: Any) -> Any:
        if call.verb == "POST" and call.body.get("method") == "tools/call":
            async def nothing() -> Any:
                return
                yield  # an async generator that yields nothing

            return SseReply(nothing())
        return await super().__call__(call)


class LeavesAfterTheError(LeavesAfterTheAnswer):
    async def write(self, payload: bytes, event_id: str | None) -> None:
        await Stream.write(self, payload, event_id)
        if b'"error"' in payload and self.handler is not None:
            self.handler.cancel()


async def test_a_host_that_leaves_after_a_lost_stream_error_is_counted_with_the_calls_own_outcome() -> None:
    # The answer the host got was the gateway's error for a stream that ended unanswered: the call counts as
    # upstream_stream_lost, not ok (it used to count as ok whenever the host left right after its answer).
    stream = LeavesAfterTheError()
    driver = await call_and_leave(ClosesWithoutAnswering(), stream)
    assert "error" in stream.messages()[-1]
    assert await counted(driver, "upstream_stream_lost") == 1
    assert await counted(driver, "ok", wait=False) is None


async def test_the_host_request_span_is_told_the_answer_before_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    # The host's span ends with its handler; the call's own outcome is counted a moment later. What the span
    # says (method, outcome) must be set before the handler is gone: set after, it was lost (the traces test
    # saw a host span without `mcpgw.method` when the SDK client closed its stream quickly).
    from gateway import tracing
    from gateway.driver import session_driver

    stream = LeavesAfterTheAnswer()
    seen: list[dict[str, Any]] = []  # what was annotated while the host's handler (and its span) still ran

    def annotate(**attrs: Any) -> None:
        if stream.handler is not None and not stream.handler.done():
            seen.append(attrs)

    monkeypatch.setattr(session_driver.tracing, "annotate", annotate)
    assert session_driver.tracing is tracing
    driver, _, _ = make_driver(Server())
    rec, _ = await driver.load(await initialized(driver))
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
    handler = stream.handler = asyncio.ensure_future(driver.host_request(rec, call, Responder(stream)))
    with pytest.raises(asyncio.CancelledError):
        await handler
    assert await counted(driver, "ok") == 1  # the call's own outcome, counted after the handler
    assert {"method": "tools/call", "outcome": "ok", "era": "2025"} in seen
