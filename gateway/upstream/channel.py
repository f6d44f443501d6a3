"""Upstream sessions over one message channel each (a stdio child, a legacy SSE stream), supervised.

`ChannelUpstream` implements the `Upstream` interface for transports where one
channel carries every message of a session: `post` writes a message and reads
its rebuilt stream from the channel's `Demux`; `open_stream` is the standalone
stream; `end_session` stops the channel. Subclasses only say how to `connect`.

A session is created by a POST without a session id. Only an `initialize`
answered on it keeps the session (a result or a JSON-RPC error); any other
sessionless request (a `server/discover` probe, a 2026-07-28 call) gets a
channel of its own that is stopped when the request is over, and so is one whose
`initialize` ended unanswered.

Supervision: once `initialize` got a result, a lost channel (the process exited
or crashed, the SSE stream ended or broke, or the gateway stopped it for
breaking a bound) is brought back with exponential backoff (`RestartPolicy`):
connect again, replay the session's `initialize` (and `notifications/initialized`
if the host had sent it), check the server agrees on the protocol version. The
session id stays the same. Requests in flight at the loss fail at once with
-32012; requests that arrive while the channel is down wait for it up to
`connect_timeout` and then fail with -32010. After `max_attempts` failed
attempts in a row the session is gone (`UpstreamSessionGone`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import orjson

from gateway.errors import (
    UPSTREAM_FAILED,
    UPSTREAM_UNREACHABLE,
    UpstreamFailure,
    UpstreamSessionGone,
)
from gateway.logs import get_logger
from gateway.upstream.connector import UpstreamReply, no_messages
from gateway.upstream.demux import Demux, is_request
from gateway.upstream.restart import RestartPolicy

log = get_logger("gateway.upstream")

_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class Channel(ABC):
    """One live connection to a server. It reads messages into `demux` until it ends, then calls `_ended`."""

    def __init__(self, demux: Demux) -> None:
        self.demux = demux
        self.reason: UpstreamFailure | None = None
        self.on_lost: Callable[[UpstreamFailure], None] | None = None

    @property
    def alive(self) -> bool:
        return self.reason is None

    @abstractmethod
    async def send(self, body: bytes) -> None:
        """Write one message; raises `UpstreamFailure` if it cannot be delivered."""

    @abstractmethod
    async def stop(self) -> None:
        """Close the channel and release everything it holds (idempotent)."""

    def _ended(self, reason: UpstreamFailure) -> None:
        if self.reason is not None:
            return
        self.reason = reason
        self.demux.fail(reason)
        if self.on_lost is not None:
            self.on_lost(reason)


class ChannelSession:
    """One upstream session: its current channel, and the task that brings it back when it is lost."""

    def __init__(self, upstream: ChannelUpstream, sid: str, channel: Channel) -> None:
        self.upstream = upstream
        self.sid = sid
        self.channel = channel
        self.ready = asyncio.Event()
        self.ready.set()
        self.gone = False
        self.ending = False
        self.init_body: bytes | None = None
        self.version: Any = None
        self.initialized = False
        self.restarts = 0
        self.losses = 0
        """Losses and failed attempts in a row (the backoff's exponent); from 1 again after a long run."""
        self.started_at = time.monotonic()
        self._lost = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._watch(channel)

    def _watch(self, channel: Channel) -> None:
        def lost(_: UpstreamFailure) -> None:
            if self.ending or channel is not self.channel:
                return
            if self._supervisor is None:
                self.gone = True  # never initialized: nothing to restart
            self.ready.clear()
            self._lost.set()

        channel.on_lost = lost
        if not channel.alive:  # it ended before anyone watched it
            assert channel.reason is not None
            lost(channel.reason)

    def supervise(self, init_body: bytes, version: Any) -> None:
        """`initialize` got a result: from now on a lost channel is restarted."""
        self.init_body, self.version = init_body, version
        if self._supervisor is None and not self.gone:
            self._supervisor = asyncio.create_task(self._supervise(), name=f"supervise:{self.upstream.name}")

    async def current(self) -> Channel:
        """The live channel, waiting up to `connect_timeout` while it is being restarted."""
        if self.gone:
            raise UpstreamSessionGone()
        if not self.ready.is_set():
            try:
                async with asyncio.timeout(self.upstream.connect_timeout):
                    await self.ready.wait()
            except TimeoutError:
                raise UpstreamFailure(
                    UPSTREAM_UNREACHABLE,
                    f"server {self.upstream.name!r} is being restarted after it stopped; try again",
                    status=503,
                ) from None
            if self.gone:
                raise UpstreamSessionGone()
        return self.channel

    async def stop(self) -> None:
        self.ending = True
        self.gone = True
        self.ready.set()  # waiters wake and see the session gone
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self.channel.stop()

    async def _supervise(self) -> None:
        up = self.upstream
        policy = up.restart
        while True:
            await self._lost.wait()
            self._lost.clear()
            reason = self.channel.reason
            await self.channel.stop()  # reap it: a child that closed stdout may still run
            lived = time.monotonic() - self.started_at
            self.losses = 1 if lived >= policy.backoff_max_seconds else self.losses + 1
            attempts = 0
            while True:
                delay = policy.delay(self.losses)
                log.warning("upstream.channel_lost", server=up.name, upstream_session=self.sid, channel=up.channel,
                            reason=reason.message if reason else "stopped", restart_in_seconds=round(delay, 3),
                            attempt=attempts + 1)
                await asyncio.sleep(delay)
                channel: Channel | None = None
                try:
                    channel = await up.connect()
                    await self._reinitialize(channel)
                    break
                except BaseException as exc:
                    if channel is not None:
                        await channel.stop()
                    if not isinstance(exc, UpstreamFailure):
                        raise
                    reason = exc
                    attempts += 1
                    self.losses += 1
                    if attempts >= policy.max_attempts:
                        log.error("upstream.restart_failed", server=up.name, upstream_session=self.sid,
                                  channel=up.channel, attempts=attempts, reason=exc.message)
                        self.gone = True
                        self.ready.set()
                        up.forget(self.sid, self)
                        return
            self.channel = channel
            self.started_at = time.monotonic()
            self.restarts += 1
            self._watch(channel)
            if channel.alive:
                self.ready.set()
            log.info("upstream.restarted", server=up.name, upstream_session=self.sid, channel=up.channel,
                     restarts=self.restarts)

    async def _reinitialize(self, channel: Channel) -> None:
        """Replay the session's `initialize` on a new channel; the server must answer with the same version."""
        assert self.init_body is not None
        request_id = orjson.loads(self.init_body)["id"]
        key, stream = channel.demux.open_request(request_id)
        try:
            async with asyncio.timeout(self.upstream.connect_timeout):
                await channel.send(self.init_body)
                async for _ in stream.drain():
                    pass  # what the server says before its answer belongs to no host request
        except TimeoutError:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.upstream.name!r} did not answer initialize after a restart"
            ) from None
        finally:
            channel.demux.close_request(key, stream)
        result = stream.answer.get("result") if isinstance(stream.answer, dict) else None
        if not isinstance(result, dict) or result.get("protocolVersion") != self.version:
            raise UpstreamFailure(
                UPSTREAM_FAILED, f"server {self.upstream.name!r} answered initialize differently after a restart"
            )
        if self.initialized:
            await channel.send(_INITIALIZED)


class ChannelUpstream(ABC):
    """The `Upstream` interface over sessions of one channel each; see the module docstring."""

    channel = "channel"
    """What one channel is, for log lines (`process`, `sse`)."""

    def __init__(self, name: str, *, restart: RestartPolicy | None = None, connect_timeout: float = 10.0) -> None:
        self.name = name
        self.restart = restart or RestartPolicy()
        self.connect_timeout = connect_timeout
        self._sessions: dict[str, ChannelSession] = {}

    @abstractmethod
    async def connect(self) -> Channel:
        """A new channel to the server; raises `UpstreamFailure` if it cannot be had."""

    @property
    def session_ids(self) -> list[str]:
        """Sessions with a channel (live, being restarted, or not yet stopped)."""
        return list(self._sessions)

    def session(self, session_id: str) -> ChannelSession | None:
        return self._sessions.get(session_id)

    def forget(self, sid: str, session: ChannelSession) -> None:
        if self._sessions.get(sid) is session:
            del self._sessions[sid]

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for sid in list(self._sessions):
            await self.end_session(session_id=sid, protocol_version=None)

    def _session(self, session_id: str | None) -> ChannelSession:
        session = self._sessions.get(session_id or "")
        if session is None or session.gone:
            raise UpstreamSessionGone()
        return session

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[UpstreamReply]:
        # These transports have no headers of their own: protocol version and routing headers are HTTP-only.
        msg = orjson.loads(body)
        first = session_id is None
        if session_id is None:
            session_id = uuid.uuid4().hex
            session = self._sessions[session_id] = ChannelSession(self, session_id, await self.connect())
        else:
            session = self._session(session_id)
        stream = None
        try:
            # A new session's own channel, even if it is already over: its POST fails with the reason.
            channel = session.channel if first else await session.current()
            if not is_request(msg):
                await channel.send(body)
                if isinstance(msg, dict) and msg.get("method") == "notifications/initialized":
                    session.initialized = True
                yield UpstreamReply(202, session_id, False, no_messages())
                return
            key, stream = channel.demux.open_request(msg["id"])
            try:
                await channel.send(body)
                yield UpstreamReply(200, session_id, True, stream.drain())
            finally:
                channel.demux.close_request(key, stream)
        finally:
            if first:
                answered = stream is not None and stream.end is True
                if answered and isinstance(msg, dict) and msg.get("method") == "initialize":
                    result = stream.answer.get("result") if stream is not None else None
                    if isinstance(result, dict):
                        session.supervise(body, result.get("protocolVersion"))
                else:
                    # Unanswered, or a request that is not initialize: no one will ever own this channel.
                    await self.end_session(session_id=session_id, protocol_version=None)

    @asynccontextmanager
    async def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AsyncIterator[UpstreamReply]:
        """`last_event_id` is accepted for the interface and ignored: these channels cannot be replayed."""
        channel = await self._session(session_id).current()
        stream = channel.demux.open_standalone()
        try:
            yield UpstreamReply(200, session_id, True, stream.drain())
        finally:
            channel.demux.close_standalone(stream)

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await session.stop()
