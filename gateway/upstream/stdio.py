"""Upstream connector for stdio servers: one child process per host session.

stdio has no per-request streams, so the connector rebuilds them: a response
ends the stream of the request it answers; server requests and notifications go
to the newest request still open, else the standalone (GET) stream, else wait
in a small backlog until one opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson

from gateway.core.messages import id_key, kind_of
from gateway.core.raw_json import parse
from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure, UpstreamSessionGone
from gateway.upstream.connector import UpstreamReply, no_messages

# Only these variables of the gateway's environment reach a child (as the MCP SDK does).
_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")
_MAX_LINE = 16 * 1024 * 1024
_BACKLOG = 256
_END = object()
_LOST = object()


class _Child:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.streams: dict[str, asyncio.Queue[Any]] = {}
        self.order: list[str] = []
        self.standalone: asyncio.Queue[Any] | None = None
        self.backlog: list[Any] = []
        self.alive = True
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                try:
                    msg = parse(line.rstrip(b"\r\n"))
                except orjson.JSONDecodeError:
                    continue  # stray output on stdout is not protocol
                self._dispatch(msg)
        finally:
            self.alive = False
            for queue in [*self.streams.values(), *([self.standalone] if self.standalone else [])]:
                queue.put_nowait(_LOST)

    def _dispatch(self, msg: Any) -> None:
        if kind_of(msg) == "response":
            queue = self.streams.get(id_key(msg["id"]))
            if queue is not None:
                queue.put_nowait(msg)
                queue.put_nowait(_END)
                return
        target = self.streams[self.order[-1]] if self.order else self.standalone
        if target is not None:
            target.put_nowait(msg)
        elif len(self.backlog) < _BACKLOG:
            self.backlog.append(msg)

    def take_backlog(self, queue: asyncio.Queue[Any]) -> None:
        for msg in self.backlog:
            queue.put_nowait(msg)
        self.backlog.clear()

    async def write(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(body.replace(b"\n", b" ") + b"\n")
        await self.proc.stdin.drain()

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader


class StdioUpstream:
    def __init__(
        self, name: str, command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> None:
        self.name = name
        self._argv = [command, *args]
        self._env = {**{k: v for k in _INHERITED_ENV if (v := os.environ.get(k)) is not None}, **env}
        self._cwd = cwd
        self._children: dict[str, _Child] = {}

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for sid in list(self._children):
            await self.end_session(session_id=sid, protocol_version=None)

    async def _spawn(self) -> tuple[str, _Child]:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                env=self._env, cwd=self._cwd, limit=_MAX_LINE,
            )
        except OSError as exc:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.name!r} could not be started ({type(exc).__name__})"
            ) from None
        sid = uuid.uuid4().hex
        child = _Child(proc)
        self._children[sid] = child
        return sid, child

    def _child(self, session_id: str | None) -> _Child:
        child = self._children.get(session_id or "")
        if child is None or not child.alive:
            raise UpstreamSessionGone()
        return child

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None
    ) -> AsyncIterator[UpstreamReply]:
        msg = orjson.loads(body)
        if session_id is None:
            session_id, child = await self._spawn()
        else:
            child = self._child(session_id)
        if kind_of(msg) != "request":
            await self._write(child, body)
            yield UpstreamReply(202, session_id, False, no_messages())
            return
        key = id_key(msg["id"])
        queue: asyncio.Queue[Any] = asyncio.Queue()
        child.streams[key] = queue
        child.order.append(key)
        try:
            await self._write(child, body)
            yield UpstreamReply(200, session_id, True, self._drain(queue))
        finally:
            child.streams.pop(key, None)
            child.order.remove(key)

    async def _write(self, child: _Child, body: bytes) -> None:
        try:
            await child.write(body)
        except (OSError, RuntimeError):
            raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process is gone") from None

    async def _drain(self, queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if item is _LOST:
                raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process exited")
            yield item

    @asynccontextmanager
    async def open_stream(self, *, session_id: str, protocol_version: str | None) -> AsyncIterator[UpstreamReply]:
        child = self._child(session_id)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        child.standalone = queue
        child.take_backlog(queue)
        try:
            yield UpstreamReply(200, session_id, True, self._drain(queue))
        finally:
            if child.standalone is queue:
                child.standalone = None

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        child = self._children.pop(session_id, None)
        if child is not None:
            await child.stop()
