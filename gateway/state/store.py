"""The state interface shared by gateway replicas, and how to open one.

Two backends implement it with identical behaviour (one contract test suite
runs against both): `MemoryStateStore` for a single process, `RedisStateStore`
when several replicas must serve any request of any session.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

from gateway.state.memory_store import MemoryStateStore
from gateway.state.owner import Owner, OwnerKey
from gateway.state.redis_store import RedisStateStore
from gateway.state.ttl import DEFAULT_MAX_EVENT_BYTES

__all__ = [
    "MemoryStateStore",
    "Owner",
    "OwnerKey",
    "RedisStateStore",
    "StateStore",
    "open_state_store",
]

DEFAULT_PREFIX = "mcpgw:"


class StateStore(Protocol):
    """Every operation raises `StateUnavailable` when the backend is unreachable."""

    # -- host sessions: JSON records with a sliding TTL ---------------------------------
    async def put_session(self, session_id: str, record: dict[str, Any], ttl_s: float) -> None: ...

    async def get_session(self, session_id: str) -> dict[str, Any] | None: ...

    async def touch_session(self, session_id: str, ttl_s: float) -> bool:
        """Reset the TTL; False if the session does not exist (expired or deleted)."""
        ...

    async def delete_session(self, session_id: str) -> bool: ...

    async def load_session(
        self, session_id: str, ttl_s: float, take: str | None = None
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(record, pending) in one round trip: the TTL is refreshed, the session marked seen,
        and with `take` that pending server request is removed atomically (delivered once)."""
        ...

    async def count_sessions(self) -> int:
        """Live host sessions of every replica (the max_sessions bound)."""
        ...

    async def put_pending(
        self, session_id: str, key: str, value: dict[str, Any], max_pending: int, counted_as: str | None = None
    ) -> bool:
        """Remember a server request sent to the host; False if the session is gone or at the cap.
        `counted_as` (a server name): counted in `pending_counts` until it is taken, dropped or its
        session deleted (elicitations waiting for a person)."""
        ...

    async def append_decision(self, entry: bytes, keep: int) -> None:
        """Add an /admin decision summary (never values) to the shared list of the latest `keep`."""
        ...

    async def recent_decisions(self, limit: int) -> list[bytes]:
        """The latest decision summaries of every replica, newest first."""
        ...

    async def pending_counts(self) -> dict[str, int]:
        """Server requests counted by `put_pending`, per name, across every replica."""
        ...

    async def drop_pending(self, session_id: str, key: str) -> bool: ...

    async def take_idle(self, idle_s: float, limit: int = 100) -> list[tuple[str, dict[str, Any]]]:
        """Claim and delete up to `limit` sessions not seen for idle_s; each is claimed by one replica."""
        ...

    # -- URL-mode elicitation ownership --------------------------------------------------
    async def register_owner(self, key: OwnerKey, owner: Owner, ttl_s: float) -> None:
        """Record (or replace) the owner of a pending elicitation."""
        ...

    async def owner_of(self, key: OwnerKey) -> Owner | None:
        """The owner while the elicitation is pending; None once completed or unknown."""
        ...

    async def complete(self, key: OwnerKey, grace_s: float) -> Owner | None:
        """Atomically claim the completion: the owner to the first caller (on any
        replica), None to every replay; the record is forgotten after grace_s."""
        ...

    # -- events buffered while a host session has no stream open -------------------------
    async def append_event(
        self, host_session: str, payload: bytes, ttl_s: float, max_events: int = 1000,
        max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> str:
        """Buffer a payload, return its event id ("1", "2", ...; increasing per session), and wake
        the session's subscribers. Keeps the newest max_events within max_bytes (the newest one
        always); the buffer expires ttl_s after the last append."""
        ...

    async def events_after(self, host_session: str, last_event_id: str | None) -> list[tuple[str, bytes]]:
        """Buffered (id, payload) after last_event_id, oldest first; all of them when
        last_event_id is None, not an id issued here, or from an expired buffer."""
        ...

    async def drop_events(self, host_session: str) -> None:
        """Forget buffered payloads; ids keep increasing while the counter lives."""
        ...

    def subscribe(self, host_session: str) -> AbstractAsyncContextManager[asyncio.Event]:
        """An asyncio.Event set whenever any replica appends to this session's buffer."""
        ...

    # -- shared secrets and 2026-07-28 round records -----------------------------------
    async def shared_secret(self, name: str) -> bytes:
        """A random secret every replica shares (created by the first to ask)."""
        ...

    async def put_round(self, key: str, record: dict[str, Any], ttl_s: float) -> None: ...

    async def get_round(self, key: str) -> dict[str, Any] | None: ...

    # -- replicas: who is alive, so another replica can fail a dead one's streams cleanly --
    async def beat(self, replica: str, ttl_s: float) -> None: ...

    async def replica_alive(self, replica: str) -> bool: ...

    # -- lifecycle ----------------------------------------------------------------------
    async def ping(self) -> None: ...

    async def close(self) -> None: ...


def open_state_store(
    url: str | None, backend: Literal["memory", "redis"], prefix: str = DEFAULT_PREFIX
) -> StateStore:
    """Create the configured store. Does no I/O: call `ping()` to check reachability."""
    if backend == "memory":
        return MemoryStateStore()
    if backend == "redis":
        if not url:
            raise ValueError("state.backend 'redis' needs state.url, e.g. redis://127.0.0.1:6379/0")
        return RedisStateStore(url, prefix=prefix)
    raise ValueError(f"unknown state backend {backend!r}; expected 'memory' or 'redis'")
