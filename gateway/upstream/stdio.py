"""Upstream connector for stdio servers: one child process per host session.

stdio has no per-request streams, so the connector rebuilds them: a response
ends the stream of the request it answers; server requests and notifications go
to the newest request still open, else the standalone (GET) stream, else wait
in a small backlog until one opens.

Everything is bounded: each stream's queue holds at most `max_queued` messages
and a child whose messages stay unread longer than `flood_grace` is stopped and
every open stream fails with `UpstreamFailure`; a line on stdout is at most
`max_line_bytes`; the backlog keeps the newest `_BACKLOG` messages.

A child belongs to the session id its first POST returned, from the moment it
is spawned: `end_session` stops it whatever state it is in, and a first POST
that ends without an answer (the child died, the caller gave up or left) stops
the child itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson

from gateway.core.raw_json import parse
from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure, UpstreamSessionGone
from gateway.upstream.connector import UpstreamReply, no_messages

# Only these variables of the gateway's environment reach a child (as the MCP SDK does).
_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")
_MAX_LINE = 16 * 1024 * 1024
_BACKLOG = 256
_MAX_QUEUED = 1024
_FLOOD_GRACE = 5.0
_STOP_GRACE = 5.0
_WAKE = object()


def _id_key(value: Any) -> str:
    """A dict key that keeps JSON type: 1 and "1" are different ids."""
    return f"s:{value}" if isinstance(value, str) else f"i:{value}"


def _is_request(msg: Any) -> bool:
    return isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg


def _is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and "id" in msg and ("result" in msg or "error" in msg)


class _Stream:
    """One rebuilt stream: a bounded queue, and how it ended (None while open, True when answered)."""

    __slots__ = ("end", "queue")

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=maxsize)
        self.end: UpstreamFailure | bool | None = None

    def finish(self, end: UpstreamFailure | bool) -> None:
        if self.end is None:
            self.end = end
            if self.queue.empty():
                self.queue.put_nowait(_WAKE)  # wake a reader waiting on the empty queue

    async def drain(self) -> AsyncIterator[Any]:
        while True:
            if self.queue.empty() and self.end is not None:
                if isinstance(self.end, UpstreamFailure):
                    raise self.end
                return
            item = await self.queue.get()
            if item is not _WAKE:
                yield item


class _Child:
    def __init__(
        self, name: str, proc: asyncio.subprocess.Process, *, max_queued: int, flood_grace: float, max_line: int
    ) -> None:
        self.name = name
        self.max_line = max_line
        self.proc = proc
        self.max_queued = max_queued
        self.flood_grace = flood_grace
        self.streams: dict[str, _Stream] = {}
        self.order: list[str] = []
        self.standalone: _Stream | None = None
        self.backlog: deque[Any] = deque(maxlen=_BACKLOG)
        self.failure: UpstreamFailure | None = None
        self.reader = asyncio.create_task(self._read())

    @property
    def alive(self) -> bool:
        return self.failure is None

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        reason = UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process exited")
        try:
            while line := await self.proc.stdout.readline():
                try:
                    msg = parse(line.rstrip(b"\r\n"))
                except orjson.JSONDecodeError:
                    continue  # stray output on stdout is not protocol
                if not await self._dispatch(msg):
                    reason = self._flooded()
                    self._kill()
                    break
        except ValueError:  # asyncio.StreamReader: a line over its limit
            reason = UpstreamFailure(
                UPSTREAM_STREAM_LOST,
                f"server {self.name!r} wrote a line over {self.max_line} bytes; process stopped",
            )
            self._kill()
        finally:
            self.failure = reason
            for stream in [*self.streams.values(), *([self.standalone] if self.standalone else [])]:
                stream.finish(reason)

    def _flooded(self) -> UpstreamFailure:
        return UpstreamFailure(
            UPSTREAM_STREAM_LOST,
            f"server {self.name!r} flooded: more than {self.max_queued} messages stayed unread for "
            f"{self.flood_grace:g}s; process stopped",
        )

    async def _dispatch(self, msg: Any) -> bool:
        """Route one message; False if its stream stayed full for the whole grace time."""
        if _is_response(msg):
            key = _id_key(msg["id"])
            stream = self.streams.get(key)
            if stream is not None:
                delivered = await self._put(stream, msg)
                # Answered: what follows goes to another stream, not to one that is over.
                del self.streams[key]
                self.order.remove(key)
                stream.finish(True if delivered else self._flooded())
                return delivered
        target = self.streams[self.order[-1]] if self.order else self.standalone
        if target is None:
            self.backlog.append(msg)  # bounded: the oldest falls out
            return True
        return await self._put(target, msg)

    async def _put(self, stream: _Stream, msg: Any) -> bool:
        if stream.end is not None:
            return True  # nobody will read it
        try:
            async with asyncio.timeout(self.flood_grace):
                await stream.queue.put(msg)
        except TimeoutError:
            return False
        return True

    def take_backlog(self, stream: _Stream) -> None:
        while self.backlog and not stream.queue.full():
            stream.queue.put_nowait(self.backlog.popleft())

    async def write(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(body.replace(b"\n", b" ") + b"\n")
        await self.proc.stdin.drain()

    def _kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), _STOP_GRACE)
            except TimeoutError:
                self._kill()
                await self.proc.wait()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader
        if self.proc.stdin is not None:
            self.proc.stdin.close()


class StdioUpstream:
    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        *,
        max_queued: int = _MAX_QUEUED,
        flood_grace: float = _FLOOD_GRACE,
        max_line_bytes: int = _MAX_LINE,
    ) -> None:
        self.name = name
        self._argv = [command, *args]
        self._env = {**{k: v for k in _INHERITED_ENV if (v := os.environ.get(k)) is not None}, **env}
        self._cwd = cwd
        self._max_queued = max_queued
        self._flood_grace = flood_grace
        self._max_line = max_line_bytes
        self._children: dict[str, _Child] = {}

    @property
    def session_ids(self) -> list[str]:
        """Sessions with a child process (running or not yet stopped)."""
        return list(self._children)

    def process_id(self, session_id: str) -> int | None:
        child = self._children.get(session_id)
        return None if child is None else child.proc.pid

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for sid in list(self._children):
            await self.end_session(session_id=sid, protocol_version=None)

    async def _spawn(self) -> tuple[str, _Child]:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                env=self._env, cwd=self._cwd, limit=self._max_line,
            )
        except OSError as exc:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.name!r} could not be started ({type(exc).__name__})"
            ) from None
        sid = uuid.uuid4().hex
        child = _Child(
            self.name, proc, max_queued=self._max_queued, flood_grace=self._flood_grace, max_line=self._max_line
        )
        self._children[sid] = child
        return sid, child

    def _child(self, session_id: str | None) -> _Child:
        child = self._children.get(session_id or "")
        if child is None or not child.alive:
            raise UpstreamSessionGone()
        return child

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[UpstreamReply]:
        # stdio has no headers: the 2026-07-28 routing headers exist only on HTTP.
        msg = orjson.loads(body)
        spawned = session_id is None
        if session_id is None:
            session_id, child = await self._spawn()
        else:
            child = self._child(session_id)
        stream: _Stream | None = None
        try:
            if not _is_request(msg):
                await self._write(child, body)
                yield UpstreamReply(202, session_id, False, no_messages())
                return
            key = _id_key(msg["id"])
            stream = _Stream(self._max_queued)
            child.streams[key] = stream
            child.order.append(key)
            try:
                await self._write(child, body)
                yield UpstreamReply(200, session_id, True, stream.drain())
            finally:
                if child.streams.get(key) is stream:
                    del child.streams[key]
                    child.order.remove(key)
        finally:
            if spawned and (stream is None or stream.end is not True):
                # The first POST (initialize) ended unanswered: no one will ever own this child.
                await self.end_session(session_id=session_id, protocol_version=None)

    async def _write(self, child: _Child, body: bytes) -> None:
        try:
            await child.write(body)
        except (OSError, RuntimeError):
            raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process is gone") from None

    @asynccontextmanager
    async def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AsyncIterator[UpstreamReply]:
        """`last_event_id` is accepted for the interface and ignored: stdio has no event ids."""
        child = self._child(session_id)
        stream = _Stream(self._max_queued)
        child.standalone = stream
        child.take_backlog(stream)
        try:
            yield UpstreamReply(200, session_id, True, stream.drain())
        finally:
            if child.standalone is stream:
                child.standalone = None

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        child = self._children.pop(session_id, None)
        if child is not None:
            await child.stop()
