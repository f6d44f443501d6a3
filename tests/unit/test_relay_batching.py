"""A request stream's relay writes what one upstream chunk held in one write, and never holds back an
event once the upstream has nothing more read: a slow server's events still reach the host at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_session_driver import Stream

from gateway.core.session_record import SessionRecord
from gateway.driver.contracts import DriverSettings
from gateway.driver.host_streams import RequestRelay, SessionBuffers
from gateway.state.memory_store import MemoryStateStore

pytestmark = pytest.mark.anyio

REC = SessionRecord("s1", "crm", "u", "2025-11-25", "2025-11-25", frozenset(), "up-1")


def _note(i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": i}}


async def _process(msg: Any, via: Any) -> list[dict[str, Any]]:
    return [msg]


def _relay() -> tuple[RequestRelay, Stream]:
    buffers = SessionBuffers("crm", MemoryStateStore(), DriverSettings(60, 60, 60, 5, 100, protocol="legacy"))
    relay = RequestRelay(buffers, REC, "crm", 7, "r1", _process, lambda _: None)
    stream = Stream()
    relay.attach(stream)
    return relay, stream


async def test_a_chunk_of_events_goes_out_in_one_write() -> None:
    relay, stream = _relay()
    chunks = [[_note(i) for i in range(5)], [_note(5), _note(6), {"jsonrpc": "2.0", "id": 7, "result": {}}]]
    left = 0

    async def messages() -> AsyncIterator[Any]:
        nonlocal left
        for chunk in chunks:
            for i, msg in enumerate(chunk):
                left = len(chunk) - i - 1
                yield msg

    assert await relay.run(messages(), lambda: left) == "ok"
    payloads = [p for p, _ in stream.events]
    assert payloads[0] == b""  # the priming event, written on its own at once
    assert len(payloads) == 1 + 8
    assert stream.writes == 3  # priming, then one write per upstream chunk
    ids = [e for _, e in stream.events]
    assert ids == sorted(set(ids), key=lambda e: int(e.rsplit(".", 1)[1]))  # every event its own id, in order


async def test_nothing_is_held_while_the_server_is_quiet() -> None:
    relay, stream = _relay()
    gate = asyncio.Event()

    async def messages() -> AsyncIterator[Any]:
        yield _note(1)
        await gate.wait()  # the server says nothing for a while
        yield {"jsonrpc": "2.0", "id": 7, "result": {}}

    task = asyncio.ensure_future(relay.run(messages(), lambda: 0))
    for _ in range(20):
        await asyncio.sleep(0)
    assert [p for p, _ in stream.events][1:] and b'"data":1' in stream.events[1][0]  # out before the answer
    gate.set()
    assert await task == "ok"


async def test_a_host_gone_mid_batch_leaves_every_event_for_the_resume() -> None:
    relay, stream = _relay()
    stream.fail_after = 3  # the priming event and two more reach the host, then it is gone
    notes = [_note(i) for i in range(6)]

    async def messages() -> AsyncIterator[Any]:
        for msg in notes:
            yield msg
        yield {"jsonrpc": "2.0", "id": 7, "result": {}}

    left = iter(range(6, -1, -1))
    assert await relay.run(messages(), lambda: next(left, 0)) == "ok"
    await asyncio.sleep(0.05)  # the ring goes to the store in a task of its own
    stored = await relay.buffers.store.events_after(relay.tag.buffer_key(REC.session_id), None)
    seqs = [int(p.split(b" ", 1)[0]) for _, p in stored]
    assert seqs == list(range(1, 9))  # priming, six notes, the answer: all in order for a host that resumes
