"""What the sans-IO core asks its edges to do. Frozen, small, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToUpstream:
    """POST this message to the upstream session; `expects_response` for requests."""

    message: dict[str, Any]
    expects_response: bool = False
    answer_schema: dict[str, Any] | None = None
    """Set on a host's accepted form answer: policy checks the content against it before it is sent."""


@dataclass(frozen=True, slots=True)
class ToHost:
    """Write this message to the host on the stream being served."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CheckElicitation:
    """An `elicitation/create` from the server that policy must decide on before the host sees it."""

    message: dict[str, Any]
    mode: str
    offered: bool
    """False when the mode was not offered to this server: the gate must refuse it with -32602."""


@dataclass(frozen=True, slots=True)
class RouteCompletion:
    """`notifications/elicitation/complete` from the server: deliver only to the owner, via the registry."""

    message: dict[str, Any]
    elicitation_id: str


@dataclass(frozen=True, slots=True)
class CheckUrlRequired:
    """A -32042 error answering a host request: each URL elicitation in it must pass policy."""

    message: dict[str, Any]
    entries: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Dropped:
    """A message the core refused to pass on; the edge logs it (never its body)."""

    event: str
    reason: str
    fields: dict[str, Any] = field(default_factory=dict)


Command = ToUpstream | ToHost | CheckElicitation | RouteCompletion | CheckUrlRequired | Dropped
