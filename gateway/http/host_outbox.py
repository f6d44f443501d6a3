"""Where a host session's messages go when they belong to no open request stream.

The gateway keeps its own standalone stream to the upstream for every session,
so a server message (above all `notifications/elicitation/complete`) is never
lost while the host has no GET stream open: it is buffered in the state store
with an event id and replayed when the host reconnects (`Last-Event-ID`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gateway.core.raw_json import encode
from gateway.logs import get_logger
from gateway.state.errors import StateUnavailable
from gateway.state.store import StateStore

log = get_logger("gateway.outbox")

Emit = Callable[[dict[str, Any]], Awaitable[None]]
WriteFrame = Callable[[bytes, str | None], Awaitable[None]]


class HostOutbox:
    def __init__(self, server: str, session_id: str, store: StateStore, buffer_ttl: float) -> None:
        self.server = server
        self.session_id = session_id
        self._store = store
        self._ttl = buffer_ttl
        self._attached: WriteFrame | None = None
        self.request_streams: dict[str, Emit] = {}
        """URL-mode elicitationId -> the host request stream that carried it, while that stream is open."""

    @property
    def attached(self) -> bool:
        return self._attached is not None

    async def attach(self, write: WriteFrame, last_event_id: str | None) -> None:
        """A host GET stream opened: replay what was buffered after `last_event_id`, then go live."""
        for event_id, payload in await self._store.events_after(self.session_id, last_event_id):
            await write(payload, event_id)
        self._attached = write

    def detach(self, write: WriteFrame) -> None:
        if self._attached is write:
            self._attached = None

    async def send(self, msg: dict[str, Any]) -> None:
        """To the host's GET stream if open, else into the buffer (fail: logged, never raised)."""
        payload = encode(msg)
        if self._attached is not None:
            try:
                await self._attached(payload, None)
                return
            except (ConnectionResetError, RuntimeError):
                self._attached = None
        try:
            event_id = await self._store.append_event(self.session_id, payload, self._ttl)
        except StateUnavailable:
            log.error("outbox.buffer_failed", server=self.server, session=self.session_id)
            return
        log.info("outbox.buffered", server=self.server, session=self.session_id, event_id=event_id,
                 method=msg.get("method"))

    async def send_completion(self, elicitation_id: str, msg: dict[str, Any]) -> str:
        """The request stream that carried the elicitation if still open, else as `send`. Returns the route."""
        emit = self.request_streams.get(elicitation_id)
        if emit is not None:
            try:
                await emit(msg)
                return "request_stream"
            except (ConnectionResetError, RuntimeError):
                self.request_streams.pop(elicitation_id, None)
        route = "standalone_stream" if self.attached else "buffered"
        await self.send(msg)
        return route

    def forget_stream(self, emit: Emit) -> None:
        for eid in [e for e, s in self.request_streams.items() if s is emit]:
            del self.request_streams[eid]

    async def close(self) -> None:
        self._attached = None
        self.request_streams.clear()
        try:
            await self._store.drop_events(self.session_id)
        except StateUnavailable:
            pass
