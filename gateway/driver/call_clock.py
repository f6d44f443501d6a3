"""Timeouts that respect people: one host call's request clock, paused while a person answers.

`request_timeout_seconds` (per server) bounds the time a call spends waiting on the *server*.
While one of the call's server requests (an elicitation, or sampling, roots) is pending with
the host, that clock stops; the wait for the host is bounded by `sessions.elicitation_timeout_seconds`
instead, counted from when each request was sent.

The host's answer may reach any replica. The replica that takes it from the store appends its
key to the session's `answered` buffer (`note_answer`), which wakes the call's clock wherever it
runs. When a wait runs out, `drop_pending` decides atomically between "never answered" (the
entry is gone now: no late answer can get through) and "answered, its wake-up still on the way".
With no request timeout (the default) there is no clock to resume: nothing is written or followed per
answer, and the store is asked once, at the oldest request's deadline, whether it was answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from gateway.core.host_side import pending_key
from gateway.driver.contracts import DriverSettings
from gateway.errors import ELICITATION_TIMEOUT, REQUEST_TIMEOUT, UpstreamFailure
from gateway.state.errors import StateUnavailable
from gateway.state.store import StateStore

Expiry = Literal["request_timeout", "elicitation_timeout"]

_RECHECK = 5.0  # re-read the answered buffer this often too: a wake-up lost while Redis reconnects only delays
_ANSWERED_KEEP = 64  # answers kept per session; a call reads them within moments


def answered_key(session_id: str) -> str:
    return f"{session_id}/answered"


async def note_answer(store: StateStore, session_id: str, host_request_id: Any, ttl_s: float) -> None:
    """The host answered one of the session's server requests: wake the call that asked, on any replica."""
    with contextlib.suppress(StateUnavailable):
        await store.append_event(answered_key(session_id), pending_key(host_request_id).encode(), ttl_s,
                                 _ANSWERED_KEEP)


class CallClock:
    def __init__(
        self, store: StateStore, session_id: str, request_timeout: float | None, elicitation_timeout: float,
        now: Callable[[], float] = time.monotonic, *, pending_in_store: bool = True,
    ) -> None:
        """`session_id` names the `answered` buffer (and the pending entries, if `pending_in_store`:
        without them, a wait that runs out is simply expired)."""
        self.store = store
        self.pending_in_store = pending_in_store
        self.session_id = session_id
        self.request_timeout = request_timeout
        self.elicitation_timeout = elicitation_timeout
        self._now = now
        self._used = 0.0
        self._running_since = now()
        self._outstanding: dict[str, tuple[Any, float]] = {}  # pending key -> (host-facing id, sent at)
        self._position: str | None = None
        self._changed = asyncio.Event()
        self.expired_ids: list[Any] = []
        """Host-facing ids of the requests still pending when the clock ran out."""
        self.on_pause: Callable[[], None] | None = None
        """Called when the call sends the host a request (`bounded` starts the full watch then)."""

    def asked(self, host_request_id: Any) -> None:
        """The call sent the host a request: the request clock stops until it is answered."""
        if not self._outstanding:
            self._used += self._now() - self._running_since
        self._outstanding[pending_key(host_request_id)] = (host_request_id, self._now())
        self._changed.set()
        if self.on_pause is not None:
            self.on_pause()

    def request_left(self) -> float:
        """Seconds left of the request timeout while the clock runs (no host request outstanding)."""
        assert self.request_timeout is not None
        return self.request_timeout - self._used - (self._now() - self._running_since)

    def _answered(self, key: str) -> None:
        if self._outstanding.pop(key, None) is not None and not self._outstanding:
            self._running_since = self._now()

    @property
    def paused(self) -> bool:
        return bool(self._outstanding)

    async def watch(self) -> Expiry:
        """Returns when the call must end (which bound ran out); otherwise runs until cancelled."""
        while True:
            if self._outstanding and self.request_timeout is None and self.pending_in_store:
                expired = await self._await_deadline()
                if expired is not None:
                    return expired
                continue
            if self._outstanding:
                try:
                    expired = await self._await_answers()
                except StateUnavailable:  # cannot tell answered from not: wait, unless the bound is past
                    if self._oldest_left() <= 0:
                        self.expired_ids = [host_id for host_id, _ in self._outstanding.values()]
                        return "elicitation_timeout"
                    await asyncio.sleep(min(_RECHECK, self._oldest_left()))
                    continue
                if expired is not None:
                    return expired
                continue
            self._changed.clear()
            if self.request_timeout is None:
                await self._changed.wait()
                continue
            left = self.request_left()
            if left <= 0:
                return "request_timeout"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    def _oldest_left(self) -> float:
        sent = min(at for _, at in self._outstanding.values())
        return sent + self.elicitation_timeout - self._now()

    async def _await_deadline(self) -> Expiry | None:
        """With no request timeout there is no clock to resume, so answers need not be followed (no subscription,
        no reads per answer: the common case costs the store nothing). At the oldest request's deadline the store
        decides (`drop_pending`, atomic): never answered, and now it cannot be; or answered (its entry taken)."""
        while self._outstanding:
            left = self._oldest_left()
            if left > 0:
                await asyncio.sleep(left)
                continue
            try:
                expired = await self._at_deadline()
            except StateUnavailable:  # cannot tell answered from not, and the bound is past: fail closed
                return await self._expire()
            if expired is not None:
                return expired
        return None

    async def _at_deadline(self) -> Expiry | None:
        """The oldest request's bound is past: the store decides atomically (`drop_pending`) whether it was never
        answered (and now cannot be: the call expires) or was taken by an answer (it no longer pauses the call)."""
        oldest = min(self._outstanding, key=lambda k: self._outstanding[k][1])
        if not self.pending_in_store or await self.store.drop_pending(self.session_id, oldest):
            return await self._expire()
        self._answered(oldest)
        return None

    async def _expire(self) -> Expiry:
        """Every request of this call still outstanding goes with the oldest one, which was never answered."""
        self.expired_ids = [host_id for host_id, _ in self._outstanding.values()]
        for other in list(self._outstanding) if self.pending_in_store else ():
            with contextlib.suppress(StateUnavailable):
                await self.store.drop_pending(self.session_id, other)
        return "elicitation_timeout"

    async def _await_answers(self) -> Expiry | None:
        key = answered_key(self.session_id)
        async with self.store.subscribe(key) as wake:
            while self._outstanding:
                wake.clear()
                for event_id, payload in await self.store.events_after(key, self._position):
                    self._position = event_id
                    self._answered(payload.decode())
                if not self._outstanding:
                    return None
                left = self._oldest_left()
                if left <= 0:
                    # (Taken by an answer whose wake-up is still on its way: the clock goes on.)
                    expired = await self._at_deadline()
                    if expired is not None:
                        return expired
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), min(left, _RECHECK))
        return None


async def bounded(call: Awaitable[str], clock: CallClock) -> str | Expiry:
    """The call's outcome, or which bound ran out first (the call is then cancelled and awaited).

    The call runs in the caller's task, and a bound that runs out cancels that task, as `asyncio.timeout`
    does (no task per call). Most calls never ask the host anything: until one does, a timer bounds the
    call; the first host request starts `clock.watch`, which then keeps both bounds.
    """
    task = asyncio.current_task()
    assert task is not None, "bounded runs in a task"
    loop = task.get_loop()
    ended: list[Expiry | BaseException] = []
    finished = False
    watch: asyncio.Future[Expiry] | None = None
    timer: asyncio.TimerHandle | None = None

    def end(why: Expiry | BaseException) -> None:
        if not ended and not finished:
            ended.append(why)
            task.cancel()

    def on_timer() -> None:
        nonlocal timer
        left = clock.request_left()
        if left > 0:
            timer = loop.call_later(left, on_timer)
        else:
            timer = None
            end("request_timeout")

    def on_watch(done: asyncio.Future[Expiry]) -> None:
        if not done.cancelled():
            failure = done.exception()
            end(done.result() if failure is None else failure)

    def on_pause() -> None:
        nonlocal watch, timer
        if watch is None:
            if timer is not None:
                timer.cancel()
                timer = None
            watch = asyncio.ensure_future(clock.watch())
            watch.add_done_callback(on_watch)

    if clock.request_timeout is not None:
        timer = loop.call_later(clock.request_left(), on_timer)
    clock.on_pause = on_pause
    try:
        # If this handler is cancelled (its host left and the grace ran out), the call is cancelled with it.
        outcome = await call
    except asyncio.CancelledError:
        # Ours only if nobody else cancelled the task as well (then their cancellation goes on).
        if not ended or task.uncancel() > 0:
            raise
        why = ended[0]
        if isinstance(why, BaseException):
            raise why from None
        return why
    else:
        if ended:
            task.uncancel()  # the call swallowed our cancellation and finished: its outcome stands
        return outcome
    finally:
        finished = True
        clock.on_pause = None
        if timer is not None:
            timer.cancel()
        if watch is not None:
            watch.remove_done_callback(on_watch)
            watch.cancel()  # not awaited: the answer is out, the handler finishes at once


def timeout_failure(server: str, why: str, settings: DriverSettings) -> UpstreamFailure:
    """What the host is told when a bound ran out (HTTP 504 when its reply had not started yet)."""
    if why == "request_timeout":
        return UpstreamFailure(REQUEST_TIMEOUT, f"server {server!r} did not answer within its request timeout "
                               f"({settings.request_timeout:g} s, not counting time the host took to answer); "
                               "the call was cancelled", status=504)
    return UpstreamFailure(ELICITATION_TIMEOUT, f"the host did not answer server {server!r}'s request within the "
                           f"elicitation timeout ({settings.elicitation_timeout:g} s); the call was cancelled",
                           status=504)
