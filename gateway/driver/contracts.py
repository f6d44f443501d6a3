"""What the session driver and its edges agree on: the host-side stream and responder, and the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol


class HostGone(Exception):
    """The host's stream is closed: nothing more can be written to it."""


class HostStream(Protocol):
    async def write(self, payload: bytes, event_id: str | None) -> None:
        """One SSE event (empty payload: a priming event). Raises HostGone."""
        ...

    async def write_many(self, events: list[tuple[bytes, str | None]]) -> None:
        """Several events, in order, in as few writes as the stream can (a relay passes on what one upstream
        chunk held). Raises HostGone."""
        ...

    async def comment(self) -> None:
        """A keepalive comment. Raises HostGone."""
        ...


class Responder(Protocol):
    """How the driver answers the HTTP request it is serving."""

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None: ...

    async def stream(self, session_id: str) -> HostStream: ...


@dataclass(frozen=True)
class DriverSettings:
    session_ttl: float
    buffer_ttl: float
    owner_ttl: float
    completion_grace: float
    max_sessions: int
    max_pending: int = 64
    resume_grace: float = 10.0
    keepalive: float = 15.0
    max_events: int = 1000
    elicitation_timeout: float = 600.0
    request_timeout: float | None = None
    """The server's `request_timeout_seconds`: its time to answer one call, paused while a person answers."""
    max_notifications_per_second: float = 200.0
    protocol: Literal["auto", "legacy", "2026-07-28"] = "auto"
    generation: str | None = None
    """A hash of the server's config: sessions stored under another one are not this server's."""
    request_lines: float = 1.0
    """`logging.request_lines`: the share of `ok` request lines written."""


class OneByOne:
    """`write_many` for streams that handle each event on its own (they rename or capture it)."""

    async def write(self, payload: bytes, event_id: str | None) -> None:
        raise NotImplementedError

    async def write_many(self, events: list[tuple[bytes, str | None]]) -> None:
        for payload, event_id in events:
            await self.write(payload, event_id)
