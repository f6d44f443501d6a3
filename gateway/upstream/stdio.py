"""Upstream connector for stdio servers: one child process per host session, supervised.

A child is a `Channel` (see channel.py for sessions, supervision and restarts,
demux.py for how per-request streams are rebuilt from stdout). Bounds: a line on
stdout is at most `max_line_bytes` (longer: the child is stopped); each stream
queue and the flood grace as in demux.py. stdout lines that are not JSON are
skipped (stray output is not protocol). stderr goes to the structured log line
by line (`stderr_log.py`).

A child belongs to the session id its first POST returned, from the moment it
is spawned: `end_session` stops it (SIGTERM, then SIGKILL after 5 s) in any
state, and so does a first POST that ends without its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence

import orjson

from gateway.core.raw_json import parse
from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.upstream.channel import Channel, ChannelUpstream
from gateway.upstream.demux import FLOOD_GRACE, MAX_QUEUED, Demux
from gateway.upstream.restart import RestartPolicy
from gateway.upstream.stderr_log import StderrLog

# Only these variables of the gateway's environment reach a child (as the MCP SDK does).
_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")
_MAX_LINE = 16 * 1024 * 1024
_STOP_GRACE = 5.0
_STDERR_GRACE = 1.0


class _Child(Channel):
    def __init__(self, name: str, proc: asyncio.subprocess.Process, demux: Demux, max_line: int,
                 stderr: StderrLog) -> None:
        super().__init__(demux)
        self.name = name
        self.proc = proc
        self.max_line = max_line
        self.reader = asyncio.create_task(self._read())
        assert proc.stderr is not None
        self.stderr = asyncio.create_task(stderr.pump(proc.stderr, proc.pid))

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        reason = UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process exited")
        try:
            while line := await self.proc.stdout.readline():
                try:
                    msg = parse(line.rstrip(b"\r\n"))
                except orjson.JSONDecodeError:
                    continue  # stray output on stdout is not protocol
                if not await self.demux.dispatch(msg):
                    reason = self.demux.flooded()
                    self._kill()
                    break
        except ValueError:  # asyncio.StreamReader: a line over its limit
            reason = UpstreamFailure(
                UPSTREAM_STREAM_LOST,
                f"server {self.name!r} wrote a line over {self.max_line} bytes; process stopped",
            )
            self._kill()
        finally:
            self._ended(reason)

    async def send(self, body: bytes) -> None:
        if self.reason is not None:
            raise self.reason
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(body.replace(b"\n", b" ") + b"\n")
            await self.proc.stdin.drain()
        except (OSError, RuntimeError):
            raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.name!r} process is gone") from None

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
        # The last lines a crashing child wrote are still in the pipe: let them reach the log.
        await asyncio.wait({self.stderr}, timeout=_STDERR_GRACE)
        for task in (self.reader, self.stderr):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.proc.stdin is not None:
            self.proc.stdin.close()


class StdioUpstream(ChannelUpstream):
    channel = "process"

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        *,
        max_queued: int = MAX_QUEUED,
        flood_grace: float = FLOOD_GRACE,
        max_line_bytes: int = _MAX_LINE,
        restart: RestartPolicy | None = None,
        connect_timeout: float = 10.0,
        stderr: StderrLog | None = None,
    ) -> None:
        super().__init__(name, restart=restart, connect_timeout=connect_timeout)
        self._argv = [command, *args]
        self._env = {**{k: v for k in _INHERITED_ENV if (v := os.environ.get(k)) is not None}, **env}
        self._cwd = cwd
        self._max_queued = max_queued
        self._flood_grace = flood_grace
        self._max_line = max_line_bytes
        self.stderr = stderr or StderrLog(name)

    def process_id(self, session_id: str) -> int | None:
        session = self.session(session_id)
        return session.channel.proc.pid if session is not None and isinstance(session.channel, _Child) else None

    async def connect(self) -> Channel:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd, limit=self._max_line,
            )
        except OSError as exc:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.name!r} could not be started ({type(exc).__name__})"
            ) from None
        demux = Demux(self.name, max_queued=self._max_queued, flood_grace=self._flood_grace)
        return _Child(self.name, proc, demux, self._max_line, self.stderr)
