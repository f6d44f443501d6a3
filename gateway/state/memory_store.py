"""In-process state store: the default for a single gateway process.

Mirrors RedisStateStore exactly (same contract tests). No operation awaits
while it mutates, so each one is atomic on the event loop, like a Lua script.
Expiry is lazy on access plus an amortised sweep, against an injectable clock
so TTL tests need no sleeps.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson

from gateway.state.owner import Owner, OwnerKey
from gateway.state.ttl import COUNTED, DEFAULT_MAX_EVENT_BYTES, check_max_events, grace_ms, parse_event_id, ttl_ms

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
class _SessionEntry:
    record: bytes
    pending: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class _OwnerRecord:
    owner: Owner
    completed: bool


class MemoryStateStore:
    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._sessions: dict[str, _Expiring[_SessionEntry]] = {}
        self._last_seen: dict[str, float] = {}
        self._event_bytes: dict[str, int] = {}
        self._wakeups: dict[str, set[asyncio.Event]] = {}
        self._replicas: dict[str, float] = {}
        self._secrets: dict[str, bytes] = {}
        self._rounds: dict[str, _Expiring[bytes]] = {}
        self._owners: dict[OwnerKey, _Expiring[_OwnerRecord]] = {}
        self._event_counters: dict[str, _Expiring[int]] = {}
        self._event_logs: dict[str, _Expiring[deque[tuple[int, bytes]]]] = {}
        self._mutations = 0
        self._pending_counts: collections.Counter[str] = collections.Counter()
        self._decisions: deque[bytes] = deque(maxlen=500)

    # -- expiry helpers ------------------------------------------------------------------
    def _alive(self, table: dict[Any, _Expiring[T]], key: Any) -> _Expiring[T] | None:
        entry = table.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self._clock():
            if table is self._sessions:
                self._forget_pending(entry)  # type: ignore[arg-type]
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
            self._rounds,
        )
        for table in tables:
            for key in [k for k, e in table.items() if e.expires_at <= now]:
                if table is self._sessions:
                    self._forget_pending(table[key])
                del table[key]

    # -- sessions ------------------------------------------------------------------------
    async def put_session(self, session_id: str, record: dict[str, Any], ttl_s: float) -> None:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        # Stored serialised so callers never share a mutable dict, as with Redis.
        entry = self._alive(self._sessions, session_id)
        pending = entry.value.pending if entry is not None else {}
        # A copy at its exact size: orjson's output buffer is over-allocated (about 4 KiB).
        self._sessions[session_id] = _Expiring(_SessionEntry(_exact(orjson.dumps(record)), pending), expires_at)
        self._last_seen[session_id] = self._clock()
        self._mutated()

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return None
        record: dict[str, Any] = orjson.loads(entry.value.record)
        return record

    async def load_session(
        self, session_id: str, ttl_s: float, take: str | None = None
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return None, None
        entry.expires_at = expires_at
        self._last_seen[session_id] = self._clock()
        raw = entry.value.pending.pop(take, None) if take is not None else None
        return orjson.loads(entry.value.record), self._uncount(raw)

    async def touch_session(self, session_id: str, ttl_s: float) -> bool:
        expires_at = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return False
        entry.expires_at = expires_at
        self._last_seen[session_id] = self._clock()
        return True

    async def delete_session(self, session_id: str) -> bool:
        self._last_seen.pop(session_id, None)
        entry = self._alive(self._sessions, session_id)
        if entry is None:
            return False
        self._forget_pending(entry)
        del self._sessions[session_id]
        return True

    async def count_sessions(self) -> int:
        return len(self._last_seen)

    async def put_pending(
        self, session_id: str, key: str, value: dict[str, Any], max_pending: int, counted_as: str | None = None
    ) -> bool:
        entry = self._alive(self._sessions, session_id)
        if entry is None or (key not in entry.value.pending and len(entry.value.pending) >= max_pending):
            return False
        if key not in entry.value.pending and counted_as is not None:
            self._pending_counts[counted_as] += 1
        stored = {**value, COUNTED: counted_as} if counted_as is not None else value
        entry.value.pending[key] = _exact(orjson.dumps(stored))
        return True

    async def drop_pending(self, session_id: str, key: str) -> bool:
        entry = self._alive(self._sessions, session_id)
        raw = entry.value.pending.pop(key, None) if entry is not None else None
        self._uncount(raw)
        return raw is not None

    async def append_decision(self, entry: bytes, keep: int) -> None:
        if self._decisions.maxlen != keep:
            self._decisions = deque(self._decisions, maxlen=keep)
        self._decisions.appendleft(entry)

    async def recent_decisions(self, limit: int) -> list[bytes]:
        return list(self._decisions)[:limit]

    async def pending_counts(self) -> dict[str, int]:
        return {name: n for name, n in self._pending_counts.items() if n > 0}

    def _uncount(self, raw: bytes | None) -> dict[str, Any] | None:
        value: dict[str, Any] | None = orjson.loads(raw) if raw is not None else None
        counted = value.pop(COUNTED, None) if value is not None else None
        if isinstance(counted, str) and self._pending_counts[counted] > 0:
            self._pending_counts[counted] -= 1
        return value

    def _forget_pending(self, entry: _Expiring[_SessionEntry] | None) -> None:
        for raw in entry.value.pending.values() if entry is not None else ():
            self._uncount(raw)

    async def take_idle(self, idle_s: float, limit: int = 100) -> list[tuple[str, dict[str, Any]]]:
        cutoff = self._clock() - idle_s
        taken: list[tuple[str, dict[str, Any]]] = []
        for sid in [s for s, seen in self._last_seen.items() if seen <= cutoff][:limit]:
            del self._last_seen[sid]
            entry = self._sessions.pop(sid, None)
            self._forget_pending(entry)
            if entry is not None:
                taken.append((sid, orjson.loads(entry.value.record)))
        return taken

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
        self, host_session: str, payload: bytes, ttl_s: float, max_events: int = 1000,
        max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
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
        log.value.append((event_id, _exact(payload)))
        size = self._event_bytes.get(host_session, 0) + len(payload)
        while len(log.value) > max_events or (size > max_bytes and len(log.value) > 1):
            size -= len(log.value.popleft()[1])
        self._event_bytes[host_session] = size
        self._mutated()
        for wake in self._wakeups.get(host_session, ()):
            wake.set()
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
        self._event_bytes.pop(host_session, None)

    @contextlib.asynccontextmanager
    async def subscribe(self, host_session: str) -> AsyncIterator[asyncio.Event]:
        """An event set whenever something is appended to this session's buffer (by any writer)."""
        wake = asyncio.Event()
        self._wakeups.setdefault(host_session, set()).add(wake)
        try:
            yield wake
        finally:
            waiters = self._wakeups.get(host_session)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._wakeups[host_session]

    # -- shared secrets and round records ---------------------------------------------
    async def shared_secret(self, name: str) -> bytes:
        return self._secrets.setdefault(name, secrets.token_bytes(32))

    async def put_round(self, key: str, record: dict[str, Any], ttl_s: float) -> None:
        self._rounds[key] = _Expiring(_exact(orjson.dumps(record)), self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000)
        self._mutated()

    async def get_round(self, key: str) -> dict[str, Any] | None:
        entry = self._alive(self._rounds, key)
        return None if entry is None else orjson.loads(entry.value)

    # -- replicas ------------------------------------------------------------------------
    async def beat(self, replica: str, ttl_s: float) -> None:
        self._replicas[replica] = self._clock() + ttl_ms(ttl_s, "ttl_s") / 1000

    async def replica_alive(self, replica: str) -> bool:
        return self._replicas.get(replica, 0.0) > self._clock()

    # -- lifecycle -----------------------------------------------------------------------
    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None


def _exact(data: bytes) -> bytes:
    return bytes(memoryview(data))
