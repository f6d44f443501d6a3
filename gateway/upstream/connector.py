"""The one small interface every upstream transport implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class UpstreamReply:
    """What the upstream answered to one POST or GET.

    `messages` yields parsed JSON-RPC messages (dicts) as they arrive; it raises
    `UpstreamFailure` if the stream breaks. `streaming` tells SSE from one JSON body.
    """

    status: int
    session_id: str | None
    streaming: bool
    messages: AsyncIterator[Any]


class Upstream(Protocol):
    name: str

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None
    ) -> AbstractAsyncContextManager[UpstreamReply]: ...

    def open_stream(
        self, *, session_id: str, protocol_version: str | None
    ) -> AbstractAsyncContextManager[UpstreamReply]: ...

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None: ...


async def no_messages() -> AsyncIterator[Any]:
    return
    yield  # pragma: no cover - makes this an async generator
