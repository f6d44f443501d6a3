"""The recent elicitation decisions of this replica, for the /admin page: a bounded ring, no values.

Fed from the audit path (`ElicitationGate` calls `DecisionFeed.record` right after
the `elicitation.decision` log line). What is kept is what the audit log may
carry: server, mode, decision, rule ids, the engine's change summaries and reason
(both name rules and places, never values), and the requested form's property
names and count. No message text, no URL, no session id, no user, no answer.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.policy.engine import Decision

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
    def __init__(self, size: int = 500) -> None:
        self._ring: deque[DecisionEntry] = deque(maxlen=size)
        self.total = 0

    def record(self, server: str, mode: str, decision: Decision, params: Mapping[str, Any]) -> None:
        names = _field_names(params)
        self._ring.append(DecisionEntry(
            at=time.time(), server=server, mode=mode, decision=decision.decision, rules=decision.rules,
            changes=decision.changes, reason=decision.reason, enforced=decision.enforced,
            field_names=tuple(n[:MAX_NAME_LENGTH] for n in names[:MAX_FIELD_NAMES]), field_count=len(names),
        ))
        self.total += 1

    def latest(
        self, *, server: str | None = None, decision: str | None = None, limit: int = 100
    ) -> list[DecisionEntry]:
        """Newest first."""
        out: list[DecisionEntry] = []
        for entry in reversed(self._ring):
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
