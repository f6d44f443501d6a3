"""A host that leaves right after its answer was written: the call is counted as ok, not host_disconnected."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_session_driver import Responder, Server, SseReply, Stream, initialized, make_driver

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


async def test_an_answered_call_whose_host_leaves_counts_as_ok() -> None:
    driver, _, _ = make_driver(Server())
    rec, _ = await driver.load(await initialized(driver))
    stream = LeavesAfterTheAnswer()
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
    handler = stream.handler = asyncio.ensure_future(driver.host_request(rec, call, Responder(stream)))
    with pytest.raises(asyncio.CancelledError):
        await handler
    assert stream.messages()[-1]["id"] == 5
    value = driver.metrics.registry.get_sample_value
    labels = {"server": "crm", "method": "tools/call", "era": "2025"}
    # The call's own outcome is counted when the call ends, a moment after the handler.
    for _ in range(100):
        if value("mcpgw_host_requests_total", {**labels, "outcome": "ok"}) is not None:
            break
        await asyncio.sleep(0.01)
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "ok"}) == 1
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "host_disconnected"}) is None


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
    driver, _, _ = make_driver(ClosesWithoutAnswering())
    rec, _ = await driver.load(await initialized(driver))
    stream = LeavesAfterTheError()
    call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
    handler = stream.handler = asyncio.ensure_future(driver.host_request(rec, call, Responder(stream)))
    with pytest.raises(asyncio.CancelledError):
        await handler
    assert "error" in stream.messages()[-1]
    value = driver.metrics.registry.get_sample_value
    labels = {"server": "crm", "method": "tools/call", "era": "2025"}
    for _ in range(100):
        if value("mcpgw_host_requests_total", {**labels, "outcome": "upstream_stream_lost"}) is not None:
            break
        await asyncio.sleep(0.01)
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "upstream_stream_lost"}) == 1
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "ok"}) is None
