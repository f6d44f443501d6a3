"""The one small interface every upstream transport implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class UpstreamReply:
    """What the upstream answered to one POST or GET.

    `messages` yields parsed JSON-RPC messages (dicts) as they arrive; it raises
    `UpstreamFailure` if the stream breaks. `streaming` tells SSE from one JSON body.

    The connector keeps the last two fields current while `messages` is read:
    `last_event_id` is the SSE id of the last event delivered (or primed), for
    reopening a standalone stream with `open_stream(last_event_id=...)` after it
    ends; `retry_ms` is the reconnection time the server last asked for.
    `resumed` counts the times a POST's reply stream was reopened with
    `Last-Event-ID` because it ended before its answer.
    """

    status: int
    session_id: str | None
    streaming: bool
    messages: AsyncIterator[Any]
    last_event_id: str | None = None
    retry_ms: int | None = None
    resumed: int = 0
    queued: int = 0
    """Messages already read and parsed behind the one just yielded (the rest of an SSE chunk): a relay
    writes them to the host together."""


class Upstream(Protocol):
    name: str

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> AbstractAsyncContextManager[UpstreamReply]:
        """`headers`: extra request headers (2026-07-28 routing headers such as Mcp-Method, Mcp-Name)."""
        ...

    def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AbstractAsyncContextManager[UpstreamReply]: ...

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None: ...


async def no_messages() -> AsyncIterator[Any]:
    return
    yield  # pragma: no cover - makes this an async generator
