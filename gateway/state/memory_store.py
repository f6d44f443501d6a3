"""In-process state store: the default for a single gateway process.

Mirrors RedisStateStore exactly (same contract tests). No operation awaits
while it mutates, so each one is atomic on the event loop, like a Lua script.
Expiry is lazy on access plus an amortised sweep, against an injectable clock
so TTL tests need no sleeps.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from gateway.state.owner import Owner, OwnerKey
from gateway.state.ttl import check_max_events, grace_ms, parse_event_id, ttl_ms

Clock = Callable[[], float]
T = TypeVar("T")

# Sweep expired entries once mutations reach this many (or the table size, if
# larger): keeps memory bounded for sessions nobody reads again, at O(1) amortised.
_SWEEP_EVERY = 256


@dataclass(slots=True)
class _Expiring(Generic[T]):
    value: T
    expires_at: float


@dataclass(slots=True)
class _OwnerRecord:
    owner: Owner
    completed: bool


class MemoryStateStore:
    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._sessions: dict[str, _Expiring[bytes]] = {}
        self._owners: dict[OwnerKey, _Expiring[_OwnerRecord]] = {}
        self._event_counters: dict[str, _Expiring[int]] = {}
        self._event_logs: dict[str, _Expiring[deque[tuple[int, bytes]]]] = {}
        self._mutations = 0

    # -- expiry helpers ------------------------------------------------------------------
    def _alive(self, table: dict[Any, _Expiring[T]], key: Any) -> _Expiring[T] | None:
        entry = table.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self._clock():
            del table[key]
            return None
        return entry

    def _mutated(self) -> None:
        self._mutations += 1
        size = len(self._sessions) + len(self._owners) + len(self._event_counters)
        if self._mutations < max(_SWEEP_EVERY, size):
            return
        self._mutations = 0
        now = self._clock()
        tables: tuple[dict[Any, Any], ...] = (
            self._sessions,
            self._owners,
            self._event_counters,
            self._event_logs,
        )
        for table in tables:
            for key in [k for k, e in table.items() if e.expires_at <= now]:
                del table[key]

    # -- sessions ------------------------------------------------------------------------
    async def put_session(self, session_id: str, record: dict[str, Any], ttl_s: float) -> None:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        # Stored serialised so callers never share a mutable dict, as with Redis.
        self._sessions[session_id] = _Expiring(orjson.dumps(record), expires_at)
        self._mutated()

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return None
        record: dict[str, Any] = orjson.loads(entry.value)
        return record

    async def touch_session(self, session_id: str, ttl_s: float) -> bool:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return False
        entry.expires_at = expires_at
        return True

    async def delete_session(self, session_id: str) -> bool:
        if self._alive(self._sessions, session_id) is None:
            return False
        del self._sessions[session_id]
        return True

    # -- ownership -----------------------------------------------------------------------
    async def register_owner(self, key: OwnerKey, owner: Owner, ttl_s: float) -> None:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        self._owners[key] = _Expiring(_OwnerRecord(owner, completed=False), expires_at)
        self._mutated()

    async def owner_of(self, key: OwnerKey) -> Owner | None:
        entry = self._alive(self._owners, key)
        if entry is None or entry.value.completed:
            return None
        return entry.value.owner

    async def complete(self, key: OwnerKey, grace_s: float) -> Owner | None:
        grace = grace_ms(grace_s) / 1000
        entry = self._alive(self._owners, key)
        if entry is None or entry.value.completed:
            return None
        entry.value.completed = True
        entry.expires_at = self._clock() + grace
        return entry.value.owner

    # -- buffered events -----------------------------------------------------------------
    async def append_event(
        self, host_session: str, payload: bytes, ttl_s: float, max_events: int = 1000
    ) -> str:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        check_max_events(max_events)
        counter = self._alive(self._event_counters, host_session)
        event_id = 1 if counter is None else counter.value + 1
        self._event_counters[host_session] = _Expiring(event_id, expires_at)
        log = self._alive(self._event_logs, host_session)
        if log is None:
            log = self._event_logs[host_session] = _Expiring(deque(), expires_at)
        log.expires_at = expires_at
        log.value.append((event_id, bytes(payload)))
        while len(log.value) > max_events:
            log.value.popleft()
        self._mutated()
        return str(event_id)

    async def events_after(self, host_session: str, last_event_id: str | None) -> list[tuple[str, bytes]]:
        log = self._alive(self._event_logs, host_session)
        if log is None:
            return []
        after = parse_event_id(last_event_id)
        counter = self._alive(self._event_counters, host_session)
        if after is not None and counter is not None and after > counter.value:
            after = None  # an id from before the counter expired: everything here is newer
        return [(str(n), p) for n, p in log.value if after is None or n > after]

    async def drop_events(self, host_session: str) -> None:
        self._event_logs.pop(host_session, None)

    # -- lifecycle -----------------------------------------------------------------------
    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None
