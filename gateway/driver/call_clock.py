"""Timeouts that respect people: one host call's request clock, paused while a person answers.

`request_timeout_seconds` (per server) bounds the time a call spends waiting on the *server*.
While one of the call's server requests (an elicitation, or sampling, roots) is pending with
the host, that clock stops; the wait for the host is bounded by `sessions.elicitation_timeout_seconds`
instead, counted from when each request was sent.

The host's answer may reach any replica. The replica that takes it from the store appends its
key to the session's `answered` buffer (`note_answer`), which wakes the call's clock wherever it
runs. When a wait runs out, `drop_pending` decides atomically between "never answered" (the
entry is gone now: no late answer can get through) and "answered, its wake-up still on the way".
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

    def asked(self, host_request_id: Any) -> None:
        """The call sent the host a request: the request clock stops until it is answered."""
        if not self._outstanding:
            self._used += self._now() - self._running_since
        self._outstanding[pending_key(host_request_id)] = (host_request_id, self._now())
        self._changed.set()

    def _answered(self, key: str) -> None:
        if self._outstanding.pop(key, None) is not None and not self._outstanding:
            self._running_since = self._now()

    @property
    def paused(self) -> bool:
        return bool(self._outstanding)

    async def watch(self) -> Expiry:
        """Returns when the call must end (which bound ran out); otherwise runs until cancelled."""
        while True:
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
            left = self.request_timeout - self._used - (self._now() - self._running_since)
            if left <= 0:
                return "request_timeout"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    def _oldest_left(self) -> float:
        sent = min(at for _, at in self._outstanding.values())
        return sent + self.elicitation_timeout - self._now()

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
                oldest = min(self._outstanding, key=lambda k: self._outstanding[k][1])
                left = self._oldest_left()
                if left <= 0:
                    if not self.pending_in_store or await self.store.drop_pending(self.session_id, oldest):
                        # Never answered, and now it cannot be: the others of this call go too.
                        self.expired_ids = [host_id for host_id, _ in self._outstanding.values()]
                        for other in list(self._outstanding) if self.pending_in_store else ():
                            await self.store.drop_pending(self.session_id, other)
                        return "elicitation_timeout"
                    self._answered(oldest)  # taken by an answer whose wake-up is still on its way
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), min(left, _RECHECK))
        return None


async def bounded(call: Awaitable[str], clock: CallClock) -> str | Expiry:
    """The call's outcome, or which bound ran out first (the call is then cancelled and awaited)."""
    task = asyncio.ensure_future(call)
    watch = asyncio.ensure_future(clock.watch())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the call itself is cancelled (its host left and the grace ran out)
        task.cancel()
        watch.cancel()
        await asyncio.wait({task, watch})
        raise
    if task.done():
        watch.cancel()  # not awaited: the answer is out, the handler finishes at once
        return task.result()
    expiry = watch.result()
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and task.exception() is None:
        return task.result()  # it finished as it was being cancelled: its answer stands
    return expiry


def timeout_failure(server: str, why: str, settings: DriverSettings) -> UpstreamFailure:
    """What the host is told when a bound ran out (HTTP 504 when its reply had not started yet)."""
    if why == "request_timeout":
        return UpstreamFailure(REQUEST_TIMEOUT, f"server {server!r} did not answer within its request timeout "
                               f"({settings.request_timeout:g} s, not counting time the host took to answer); "
                               "the call was cancelled", status=504)
    return UpstreamFailure(ELICITATION_TIMEOUT, f"the host did not answer server {server!r}'s request within the "
                           f"elicitation timeout ({settings.elicitation_timeout:g} s); the call was cancelled",
                           status=504)
