"""A host that leaves right after its answer was written: the call is counted as ok, not host_disconnected."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

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
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "ok"}) == 1
    assert value("mcpgw_host_requests_total", {**labels, "outcome": "host_disconnected"}) is None
