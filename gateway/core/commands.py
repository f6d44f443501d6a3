"""What the sans-IO core asks the driver to do. Frozen, small, no behaviour.

Every command that crosses to a server names its upstream, so one host session
can span several servers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToUpstream:
    """POST this message to `upstream` in the host session's upstream session."""

    upstream: str
    message: dict[str, Any]
    answer_schema: dict[str, Any] | None = None
    """Set on a host's accepted form answer: policy checks the content against it before it is sent."""


@dataclass(frozen=True, slots=True)
class ToHost:
    """Write this message to the host on the stream being served."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ForwardServerRequest:
    """A server request the host must answer: remember it (the store, so any replica takes
    the answer), then write `message` to the host."""

    upstream: str
    message: dict[str, Any]
    pending: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CheckElicitation:
    """An `elicitation/create` from a server that policy must decide on before the host sees it."""

    upstream: str
    message: dict[str, Any]
    mode: str
    offered: bool
    """False when the mode was not offered to this server: the gate must refuse it with -32602."""


@dataclass(frozen=True, slots=True)
class CheckUrlRequired:
    """A -32042 error answering a host request: each entry is URL mode, whatever it says, and must pass policy."""

    upstream: str
    message: dict[str, Any]
    entries: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class CheckInputRequired:
    """A 2026-07-28 `input_required` result: each input request must pass policy before the host sees it."""

    upstream: str
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RouteCompletion:
    """`notifications/elicitation/complete`: deliver only to the owner, via the registry."""

    upstream: str
    message: dict[str, Any]
    elicitation_id: str


@dataclass(frozen=True, slots=True)
class ForgetServerRequest:
    """The server cancelled a request it sent the host: drop the pending entry, then tell the host."""

    key: str
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnswerRound:
    """The host answered an input request of a 2026-07-28 server: it goes to the call's answer buffer."""

    buffer: str
    key: str
    method: str
    message: dict[str, Any]
    answer_schema: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Dropped:
    """A message the gateway refused to pass on; the driver logs it (never its body) and counts it."""

    event: str
    reason: str
    fields: dict[str, Any] = field(default_factory=dict)


Command = (
    ToUpstream | ToHost | ForwardServerRequest | CheckElicitation | CheckUrlRequired | CheckInputRequired
    | RouteCompletion | ForgetServerRequest | AnswerRound | Dropped
)
