"""The recent elicitation decisions of every replica, for the /admin page: bounded, no values.

Fed from the audit path (`ElicitationGate` calls `DecisionFeed.record` right after
the `elicitation.decision` log line). What is kept is what the audit log may
carry: server, mode, decision, rule ids, the engine's change summaries and reason
(both name rules and places, never values), and the requested form's property
names and count. No message text, no URL, no session id, no user, no answer.

Each replica keeps its own ring (the page's fallback when the state store is down)
and publishes every entry to the store, where the latest `size` of all replicas are
kept (`StateStore.append_decision`), so the page shows the same on every replica.
Publishing runs in the background from a bounded queue: a decision never waits for it,
and entries are dropped (counted in `dropped`) rather than queued without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.policy.engine import Decision
from gateway.state.errors import StateUnavailable
from gateway.state.store import StateStore

DECISIONS = ("allow", "modify", "block")
MAX_FIELD_NAMES = 12
MAX_NAME_LENGTH = 64


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    at: float
    server: str
    mode: str
    decision: str
    rules: tuple[str, ...]
    changes: tuple[str, ...]
    reason: str
    enforced: bool
    field_names: tuple[str, ...]
    field_count: int


class DecisionFeed:
    def __init__(self, size: int = 500, store: StateStore | None = None) -> None:
        self.size = size
        self._ring: deque[DecisionEntry] = deque(maxlen=size)
        self.total = 0
        self.dropped = 0
        self._store = store
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=1000)
        self._publisher: asyncio.Task[None] | None = None

    def record(self, server: str, mode: str, decision: Decision, params: Mapping[str, Any]) -> None:
        names = _field_names(params)
        entry = DecisionEntry(
            at=time.time(), server=server, mode=mode, decision=decision.decision, rules=decision.rules,
            changes=decision.changes, reason=decision.reason, enforced=decision.enforced,
            field_names=tuple(n[:MAX_NAME_LENGTH] for n in names[:MAX_FIELD_NAMES]), field_count=len(names),
        )
        self._ring.append(entry)
        self.total += 1
        if self._store is not None:
            try:
                self._queue.put_nowait(orjson.dumps(dataclasses.asdict(entry)))
            except asyncio.QueueFull:
                self.dropped += 1

    def start(self) -> None:
        if self._store is not None and self._publisher is None:
            self._publisher = asyncio.create_task(self._publish(self._store))

    async def stop(self) -> None:
        if self._publisher is not None:
            self._publisher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._publisher
            self._publisher = None

    async def _publish(self, store: StateStore) -> None:
        while True:
            raw = await self._queue.get()
            try:
                await store.append_decision(raw, self.size)
            except StateUnavailable:
                self.dropped += 1

    async def shared(self) -> list[DecisionEntry] | None:
        """The latest decisions of every replica, oldest first; None when the store cannot say."""
        if self._store is None:
            return None
        try:
            raws = await self._store.recent_decisions(self.size)
        except StateUnavailable:
            return None
        out = []
        for raw in reversed(raws):
            with contextlib.suppress(ValueError, TypeError):
                fields = orjson.loads(raw)
                fields["rules"], fields["changes"] = tuple(fields["rules"]), tuple(fields["changes"])
                fields["field_names"] = tuple(fields["field_names"])
                out.append(DecisionEntry(**fields))
        return out

    def latest(
        self, *, server: str | None = None, decision: str | None = None, limit: int = 100,
        entries: list[DecisionEntry] | None = None,
    ) -> list[DecisionEntry]:
        """Newest first, from `entries` (oldest first) or this replica's ring."""
        out: list[DecisionEntry] = []
        for entry in reversed(entries if entries is not None else self._ring):
            if (server is None or entry.server == server) and (decision is None or entry.decision == decision):
                out.append(entry)
                if len(out) >= limit:
                    break
        return out

    def per_minute(
        self, entries: Iterable[DecisionEntry], *, minutes: int = 30, now: float | None = None
    ) -> list[dict[str, int]]:
        """Counts per decision for each of the last `minutes` minutes, oldest first."""
        now = time.time() if now is None else now
        end = int(now // 60)
        buckets = [dict.fromkeys(DECISIONS, 0) for _ in range(minutes)]
        for entry in entries:
            index = minutes - 1 - (end - int(entry.at // 60))
            if 0 <= index < minutes and entry.decision in buckets[index]:
                buckets[index][entry.decision] += 1
        return buckets

    def all(self) -> list[DecisionEntry]:
        return list(self._ring)


def _field_names(params: Mapping[str, Any]) -> list[str]:
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return []
    return [str(name) for name in props]
