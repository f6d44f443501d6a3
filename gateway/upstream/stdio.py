"""Upstream connector for stdio servers (one child process per host session)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

from gateway.errors import UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.upstream.connector import UpstreamReply


class StdioUpstream:
    def __init__(
        self, name: str, command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> None:
        self.name = name
        self.command = command

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None
    ) -> AsyncIterator[UpstreamReply]:
        raise UpstreamFailure(UPSTREAM_UNREACHABLE, f"server {self.name!r}: stdio upstreams are not supported yet")
        yield  # pragma: no cover

    @asynccontextmanager
    async def open_stream(self, *, session_id: str, protocol_version: str | None) -> AsyncIterator[UpstreamReply]:
        raise UpstreamFailure(UPSTREAM_UNREACHABLE, f"server {self.name!r}: stdio upstreams are not supported yet")
        yield  # pragma: no cover

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        return None
