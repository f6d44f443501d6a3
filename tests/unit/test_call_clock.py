"""The call clock: the request timeout pauses while the host holds one of the call's requests; the
elicitation timeout bounds that wait; answers taken on another replica resume it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from gateway.core.host_side import pending_key
from gateway.driver.call_clock import CallClock, bounded, note_answer
from gateway.state.errors import StateUnavailable
from gateway.state.memory_store import MemoryStateStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def session(store: MemoryStateStore, *ids: int) -> None:
    await store.put_session("s1", {"s": "srv"}, 60)
    for i in ids:
        assert await store.put_pending("s1", pending_key(i), {"id": i, "m": "elicitation/create"}, 64)


async def slow(cancelled: asyncio.Event) -> str:
    """A call that would take 10 s; `cancelled` tells whether it was cancelled."""
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    return "late"


async def test_the_request_clock_stops_while_the_host_answers() -> None:
    store = MemoryStateStore()
    await session(store, 7)
    clock = CallClock(store, "s1", request_timeout=0.3, elicitation_timeout=10)
    started = time.monotonic()
    watch = asyncio.ensure_future(clock.watch())
    await asyncio.sleep(0.1)
    clock.asked(7)
    await asyncio.sleep(0.5)  # longer than the request timeout: paused, so nothing fires
    assert not watch.done() and clock.paused
    await store.load_session("s1", 60, pending_key(7))  # the answer is taken (on any replica) ...
    await note_answer(store, "s1", 7, 60)  # ... and the call's clock is told
    assert await asyncio.wait_for(watch, 2) == "request_timeout"
    assert time.monotonic() - started >= 0.3 + 0.5  # 0.1 before the ask + 0.2 after the answer, plus the pause


async def test_an_unanswered_request_expires_and_can_no_longer_be_answered() -> None:
    store = MemoryStateStore()
    await session(store, 1, 2)
    clock = CallClock(store, "s1", request_timeout=None, elicitation_timeout=0.2)
    clock.asked(1)
    clock.asked(2)
    assert await asyncio.wait_for(clock.watch(), 2) == "elicitation_timeout"
    assert sorted(clock.expired_ids) == [1, 2]
    _, late = await store.load_session("s1", 60, pending_key(1))
    assert late is None  # a late answer finds nothing to answer


async def test_an_answer_whose_wake_up_was_lost_counts_as_answered() -> None:
    store = MemoryStateStore()
    await session(store, 3)
    clock = CallClock(store, "s1", request_timeout=0.3, elicitation_timeout=0.2)
    clock.asked(3)
    await store.load_session("s1", 60, pending_key(3))  # taken, but no note_answer reached this replica
    started = time.monotonic()
    assert await asyncio.wait_for(clock.watch(), 2) == "request_timeout"  # not the elicitation timeout
    assert time.monotonic() - started >= 0.2 + 0.3 - 0.05


class CountingStore(MemoryStateStore):
    """Counts what a clock asks of the store while it follows answers."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.fail = fail

    def subscribe(self, host_session: str) -> Any:
        self.calls.append("subscribe")
        return super().subscribe(host_session)

    async def events_after(self, host_session: str, last_event_id: str | None) -> list[tuple[str, bytes]]:
        self.calls.append("events_after")
        return await super().events_after(host_session, last_event_id)

    async def drop_pending(self, session_id: str, key: str) -> bool:
        self.calls.append("drop_pending")
        if self.fail:
            raise StateUnavailable("down")
        return await super().drop_pending(session_id, key)


async def test_with_no_request_timeout_answers_are_not_followed_and_the_deadline_asks_the_store() -> None:
    store = CountingStore()
    await session(store, 1, 2)
    clock = CallClock(store, "s1", request_timeout=None, elicitation_timeout=0.2)
    watch = asyncio.ensure_future(clock.watch())
    clock.asked(1)
    await store.load_session("s1", 60, pending_key(1))  # answered (taken), with no note: none is written
    await asyncio.sleep(0.35)
    assert not watch.done() and not clock.paused  # past the deadline: the store said "answered"
    assert store.calls == ["drop_pending"]  # no subscription, no reads while the host answered
    clock.asked(2)  # never answered
    assert await asyncio.wait_for(watch, 2) == "elicitation_timeout"
    assert clock.expired_ids == [2]


async def test_with_no_request_timeout_an_unreachable_store_at_the_deadline_expires_the_call() -> None:
    store = CountingStore()
    await session(store, 4)
    store.fail = True
    clock = CallClock(store, "s1", request_timeout=None, elicitation_timeout=0.1)
    clock.asked(4)
    assert await asyncio.wait_for(clock.watch(), 2) == "elicitation_timeout"  # cannot tell: fail closed


async def test_bounded_returns_the_calls_outcome_or_cancels_it() -> None:
    store = MemoryStateStore()
    fast = CallClock(store, "s1", request_timeout=1, elicitation_timeout=1)
    assert await bounded(asyncio.sleep(0.01, "ok"), fast) == "ok"
    cancelled = asyncio.Event()

    assert await bounded(slow(cancelled), CallClock(store, "s1", request_timeout=0.1, elicitation_timeout=1)) == (
        "request_timeout")
    assert cancelled.is_set()


async def test_bounded_hands_over_to_the_watch_when_the_call_asks_the_host() -> None:
    # Until the call asks the host something, a timer bounds it; the first host request pauses the request
    # clock, so a call that then waits longer than the request timeout is not cut off.
    store = MemoryStateStore()
    await session(store, 7)
    clock = CallClock(store, "s1", request_timeout=0.3, elicitation_timeout=10)

    async def asks_then_waits() -> str:
        await asyncio.sleep(0.1)
        clock.asked(7)
        await asyncio.sleep(0.5)
        return "ok"

    assert await bounded(asks_then_waits(), clock) == "ok"
    assert clock.on_pause is None  # the hook is withdrawn once the call is over


async def test_bounded_passes_the_callers_own_cancellation_on() -> None:
    # The handler's own cancellation (its host left) cancels the call and is raised, not read as a timeout.
    store = MemoryStateStore()
    clock = CallClock(store, "s1", request_timeout=5, elicitation_timeout=5)
    cancelled = asyncio.Event()

    outer = asyncio.ensure_future(bounded(slow(cancelled), clock))
    await asyncio.sleep(0.05)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert cancelled.is_set()


async def test_bounded_leaves_the_task_usable_after_a_bound_ran_out() -> None:
    # The bound cancels the caller's own task (no task per call): afterwards the task is not left
    # cancelling, so the handler can still await (write the timeout error to its host).
    store = MemoryStateStore()
    cancelled = asyncio.Event()
    assert await bounded(slow(cancelled), CallClock(store, "s1", request_timeout=0.05, elicitation_timeout=1)) == (
        "request_timeout")
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert await asyncio.sleep(0.01, "still runs") == "still runs"


async def test_bounded_lets_a_call_that_swallowed_the_cancellation_finish() -> None:
    # A call that catches the cancellation and returns: its outcome stands, and the task is not left cancelling.
    store = MemoryStateStore()

    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "finished anyway"
        return "slept"

    assert await bounded(stubborn(), CallClock(store, "s1", request_timeout=0.05, elicitation_timeout=1)) == (
        "finished anyway")
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_bounded_raises_when_the_caller_cancels_as_the_bound_runs_out() -> None:
    # Both at once (the caller's cancellation arrives while the bound's is being handled): the caller's
    # cancellation wins and is raised; the bound's is absorbed.
    store = MemoryStateStore()
    outer: list[asyncio.Future[str]] = []

    async def call() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            outer[0].cancel()
            raise
        return "late"

    outer.append(asyncio.ensure_future(bounded(call(), CallClock(store, "s1", request_timeout=0.05,
                                                                 elicitation_timeout=1))))
    with pytest.raises(asyncio.CancelledError):
        await outer[0]
