"""What the 2026-07-28 handlers use of the session driver, as a protocol: they depend on this, not on the driver."""

from __future__ import annotations

from typing import Any, Protocol

from gateway.core.commands import CheckUrlRequired, Command, Dropped
from gateway.core.session_record import SessionRecord
from gateway.core.upstream_gate import StreamContext
from gateway.driver.contracts import DriverSettings, HostStream
from gateway.driver.upstream_profile import ProfileCache
from gateway.elicitation_gate import ElicitationGate
from gateway.policy.engine import Decision
from gateway.state.store import StateStore
from gateway.upstream.connector import Upstream


class DriverServices(Protocol):
    server: str
    replica: str
    upstream: Upstream
    store: StateStore
    settings: DriverSettings
    gate: ElicitationGate
    profiles: ProfileCache

    def classify(self, rec: SessionRecord, msg: Any, ctx: StreamContext) -> list[Command]: ...

    async def run(self, rec: SessionRecord, commands: list[Command], via: HostStream | None) -> list[dict[str, Any]]:
        """Carry out commands; the messages for the host on the stream being served."""
        ...

    async def decide(
        self, rec: SessionRecord, params: dict[str, Any], offered: bool, *, register_owner: bool = True
    ) -> Decision | None: ...

    async def police_url_required(self, rec: SessionRecord, check: CheckUrlRequired) -> dict[str, Any]: ...

    def dropped(self, rec: SessionRecord, c: Dropped) -> None: ...

    def request_done(self, method: str, started: float, outcome: str, host_version: str | None = None) -> None: ...
