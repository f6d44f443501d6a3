"""The typed view of one elicitation that every policy stage reads, and what a stage returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.errors import ELICITATION_BLOCKED


@dataclass(frozen=True, slots=True)
class ElicitationView:
    """One `elicitation/create` as policy sees it: the params as they stand after earlier stages."""

    server: str
    params: Mapping[str, Any]

    @property
    def mode(self) -> str:
        mode = self.params.get("mode", "form")
        return mode if isinstance(mode, str) else repr(mode)

    @property
    def message(self) -> str:
        msg = self.params.get("message")
        return msg if isinstance(msg, str) else ""

    @property
    def requested_schema(self) -> Mapping[str, Any]:
        schema = self.params.get("requestedSchema")
        return schema if isinstance(schema, Mapping) else {}

    @property
    def url(self) -> Any:
        return self.params.get("url")

    def with_params(self, params: Mapping[str, Any]) -> ElicitationView:
        return ElicitationView(self.server, params)


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Modify:
    rule: str
    params: dict[str, Any]
    changes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Deny:
    rule: str
    reason: str
    """Names the rule and the place (field name, category); never a value."""
    code: int = ELICITATION_BLOCKED
    data: dict[str, Any] | None = None
    where: str | None = None
    """Path of the part of the params that made the rule fire (e.g. `requestedSchema.properties.pw`)."""


Verdict = Allow | Modify | Deny
Stage = Callable[[ElicitationView], Verdict]

ALLOW = Allow()
