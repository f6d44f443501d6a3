"""Host-facing streams over the state store: a session's buffer, its GET stream, and request streams
that survive a dropped connection.

- `SessionBuffers.publish` appends to a session's buffer and wakes its GET stream,
  on whichever replica that is open; `serve_standalone` is that GET stream.
- `RequestRelay` relays one upstream SSE stream to the host's request stream with
  event ids; if the host's connection drops it goes on into a per-stream buffer.
- `SessionBuffers.resume` replays such a buffer for a host that came back (any
  replica), or tells it clearly that the call is lost.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.core.commands import Dropped
from gateway.core.messages import id_key
from gateway.core.raw_json import encode, parse
from gateway.core.session_record import SessionRecord
from gateway.driver.contracts import DriverSettings, HostGone, HostStream, OneByOne, Responder
from gateway.errors import UPSTREAM_STREAM_LOST, UpstreamFailure, jsonrpc_error
from gateway.logs import get_logger
from gateway.metrics import method_label
from gateway.state.errors import StateUnavailable
from gateway.state.store import StateStore

log = get_logger("gateway.streams")

_RING = 64  # frames of a request stream kept here, replayed if the host resumes after a drop
FINAL_SEQ = 1 << 62  # the relay's last word on a stream it gave up: an error for the request

Process = Callable[[Any, HostStream], Awaitable[list[dict[str, Any]]]]
"""Runs one upstream message through the gate and the driver; returns what goes to the host."""


class ModernReply:
    """A 2026-07-28 host's reply: JSON, or an SSE stream (no ids: that revision resumes nothing)
    once a notification must go first. Writes raise HostGone when the host left."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.stream: HostStream | None = None

    async def notify(self, msg: dict[str, Any]) -> None:
        if self.stream is None:
            self.stream = await self.responder.stream("")
        await self.stream.write(encode(msg), None)

    async def answer(self, msg: dict[str, Any], status: int = 200) -> None:
        if self.stream is None:
            await self.responder.json(msg, status)
            return
        await self.stream.write(encode(msg), None)


class SessionBuffers:
    """The store's event buffers as the host sees them."""

    def __init__(self, server: str, store: StateStore, settings: DriverSettings) -> None:
        self.server = server
        self.store = store
        self.settings = settings
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Awaitable[None], name: str) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def publish(self, rec: SessionRecord, msg: dict[str, Any]) -> bool:
        """Into the session's buffer: the host's GET stream (any replica) is woken, or it waits there.
        False if the message cannot be re-encoded (the caller logs the drop)."""
        try:
            payload = encode(msg)
        except orjson.JSONEncodeError:
            return False
        try:
            event_id = await self.store.append_event(
                rec.session_id, payload, self.settings.buffer_ttl, self.settings.max_events)
        except StateUnavailable:
            log.error("outbox.buffer_failed", server=self.server, session=rec.session_id)
            return True
        log.info("outbox.buffered", server=self.server, session=rec.session_id, event_id=event_id,
                 method=method_label(str(msg.get("method"))))
        return True

    async def serve_standalone(
        self, sid: str, last_event_id: str | None, stream: HostStream, still_here: Callable[[], bool]
    ) -> None:
        """The host's GET stream: what was buffered after `last_event_id`, then whatever is appended."""
        last = last_event_id
        try:
            async with self.store.subscribe(sid) as wake:
                while True:
                    wake.clear()
                    for event_id, payload in await self.store.events_after(sid, last):
                        await stream.write(payload, event_id)
                        last = event_id
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), self.settings.keepalive)
                    if not wake.is_set():
                        await stream.comment()  # finds hosts that left without closing
                        if not still_here() or (await self.store.get_session(sid)) is None:
                            return  # ended here or by another replica
        except (HostGone, StateUnavailable):
            pass

    async def resume(self, rec: SessionRecord, tag: StreamTag, stream: HostStream) -> None:
        """Replay a dropped request stream from the buffer its relay writes to, then follow it.

        If the replica that ran the call is gone and the answer never made it to the
        buffer, the host gets a clear error for its request instead of waiting forever.
        """
        key = tag.buffer_key(rec.session_id)
        last = tag.seq
        deadline = time.monotonic() + self.settings.resume_grace + self.settings.keepalive
        try:
            async with self.store.subscribe(key) as wake:
                while True:
                    wake.clear()
                    for _, stored in await self.store.events_after(key, None):
                        seq, payload = _unpack(stored)
                        if seq <= last:
                            continue
                        await stream.write(payload, tag.event_id(seq))
                        last = seq
                        if seq == FINAL_SEQ or _answers(payload, tag.request_id):
                            return
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), 1.0)
                    if wake.is_set():
                        continue
                    if time.monotonic() > deadline or not await self.store.replica_alive(tag.replica):
                        await stream.write(encode(lost(
                            tag.request_id, "the gateway replica serving this call stopped; call again")), None)
                        return
        except (HostGone, StateUnavailable):
            return


@dataclass(frozen=True, slots=True)
class StreamTag:
    """Names a request stream in its SSE event ids: `r.<replica>.<token>.<request id>.<seq>`.

    Any replica can resume it from the store (`<session>/<token>` buffer), and tell the
    host its call is lost when the replica that ran it is gone.
    """

    replica: str
    token: str
    request_id: Any
    seq: int = 0

    @classmethod
    def new(cls, replica: str, request_id: Any) -> StreamTag:
        return cls(replica, uuid.uuid4().hex[:16], request_id)

    def event_id(self, seq: int) -> str:
        return f"{self.event_prefix()}{seq}"

    def event_prefix(self) -> str:
        rid = base64.urlsafe_b64encode(orjson.dumps(self.request_id)).decode().rstrip("=")
        return f"r.{self.replica}.{self.token}.{rid}."

    def buffer_key(self, sid: str) -> str:
        return f"{sid}/{self.token}"

    @classmethod
    def parse(cls, event_id: str | None) -> StreamTag | None:
        if not event_id or not event_id.startswith("r.") or len(event_id) > 512:
            return None
        parts = event_id.split(".")
        if len(parts) != 5 or not parts[4].isdigit():
            return None
        try:
            rid = orjson.loads(base64.urlsafe_b64decode(parts[3] + "=" * (-len(parts[3]) % 4)))
        except (binascii.Error, ValueError):
            return None
        if isinstance(rid, bool) or not isinstance(rid, str | int):
            return None
        return cls(parts[1], parts[2], rid, int(parts[4]))


class RequestRelay:
    """One upstream SSE stream relayed to the host's request stream.

    Every event carries an id. If the host's connection drops, the relay goes on into
    the store (the driver bounds that by `resume_grace`), so the host can resume
    (GET + Last-Event-ID, any replica) and answer elicitations meanwhile.
    """

    def __init__(
        self, buffers: SessionBuffers, rec: SessionRecord, upstream: str, request_id: Any, replica: str,
        process: Process, on_drop: Callable[[Dropped], None],
    ) -> None:
        self.buffers = buffers
        self.rec = rec
        self.upstream = upstream
        self.request_id = request_id
        self.process = process
        self.on_drop = on_drop
        self.stream: HostStream | None = None
        self.tag = StreamTag.new(replica, request_id)
        self._event_prefix = self.tag.event_prefix()  # once per stream, not per event
        self.seq = 0
        self.ring: deque[tuple[int, bytes]] = deque(maxlen=_RING)
        self._held: list[tuple[bytes, str | None]] = []
        self.answered = False
        self.closed = False
        self.detached = False
        self.on_request: Callable[[Any], None] | None = None
        """Told the id of every request sent to the host on this stream (the call's clock pauses)."""
        self._lock = asyncio.Lock()

    def attach(self, stream: HostStream) -> None:
        self.stream = stream

    async def run(self, messages: AsyncIterator[Any], queued: Callable[[], int] = lambda: 0) -> str:
        """`queued`: how many upstream messages are already read behind the last one; while there are,
        what goes to the host is held and written together (one write for what one upstream chunk held)."""
        try:
            if self.rec.host_version >= "2025-11-25":
                await self._emit(b"")  # priming event (2025-11-25 SSE polling): the host can resume from here
            return await self._pump(messages, queued)
        finally:
            self.closed = True  # the HTTP response ends: later completions take the session's buffer

    async def _pump(self, messages: AsyncIterator[Any], queued: Callable[[], int]) -> str:
        try:
            async for upstream_msg in messages:
                for out in await self.process(upstream_msg, _RelayStream(self)):
                    await self._send(out, hold=True)
                if self.answered:
                    break
                if not queued():
                    await self._write_held()
        except UpstreamFailure as exc:
            log.warning("upstream.stream_failed", server=self.upstream, session=self.rec.session_id, reason=exc.message)
            await self._send(lost(self.request_id, exc.message))
            return "upstream_stream_lost"
        if not self.answered:
            await self._send(lost(self.request_id, f"server {self.upstream!r} closed the stream without answering"))
            return "upstream_stream_lost"
        await self._write_held()
        return "ok"

    async def send(self, msg: dict[str, Any]) -> None:
        """A message from the gateway itself (already judged) on this request stream."""
        await self._send(msg)

    async def _send(self, msg: dict[str, Any], hold: bool = False) -> None:
        try:
            payload = encode(msg)
        except orjson.JSONEncodeError:  # fails alone: never a second response inside a started stream
            self.on_drop(Dropped("upstream.message_dropped", "cannot be re-encoded"))
            if "method" in msg:
                return
            payload = encode(lost(self.request_id, "the server's answer cannot be re-encoded (nested too deeply)"))
        if "method" not in msg:
            self.answered = True
        elif "id" in msg and self.on_request is not None:
            self.on_request(msg["id"])
        await self._emit(payload, hold)

    async def _emit(self, payload: bytes, hold: bool = False) -> None:
        self.seq += 1
        seq = self.seq
        if self.stream is not None:
            self.ring.append((seq, payload))
            self._held.append((payload, f"{self._event_prefix}{seq}"))
            if not hold or len(self._held) >= _RING // 2:  # never more held than the ring replays
                await self._write_held()
            return
        await self._flush_ring()
        async with self._lock:
            await self._store(seq, payload)

    async def _write_held(self) -> None:
        """Writes what is held, in order, in one write; a host gone takes it from the ring (and the store)."""
        events, self._held = self._held, []
        if not events or self.stream is None:
            return
        try:
            await self.stream.write_many(events)
            return
        except HostGone:
            self.detach()
        await self._flush_ring()  # these events are in the ring

    def detach(self) -> None:
        """The host's stream is gone: what it may have missed (the ring) goes to the store, and so does the rest."""
        if self.detached:
            return
        self.detached = True
        self.stream = None
        self._held.clear()  # in the ring too
        self.buffers.spawn(self._flush_ring(), name=f"ring:{self.tag.token}")

    async def _flush_ring(self) -> None:
        """Stores the ring once, in order, before anything newer (the lock keeps the order)."""
        async with self._lock:
            while self.ring:
                seq, payload = self.ring.popleft()
                await self._store(seq, payload)

    async def _store(self, seq: int, payload: bytes) -> None:
        with contextlib.suppress(StateUnavailable):
            await self.buffers.store.append_event(
                self.tag.buffer_key(self.rec.session_id), f"{seq} ".encode() + payload,
                self.buffers.settings.buffer_ttl, _RING * 4,
            )

    async def store_final(self, msg: dict[str, Any]) -> None:
        """The last word on a stream given up: an error for the request, for a host that resumes later."""
        await self._store(FINAL_SEQ, encode(msg))


class _RelayStream(OneByOne):
    """The request stream as seen by completion routing: writes go through the relay (ids, ring, detach)."""

    def __init__(self, relay: RequestRelay) -> None:
        self._relay = relay

    async def write(self, payload: bytes, event_id: str | None) -> None:
        if self._relay.stream is None or self._relay.closed:
            raise HostGone()
        await self._relay._emit(payload)

    async def comment(self) -> None:
        return None


def _unpack(stored: bytes) -> tuple[int, bytes]:
    seq, _, payload = stored.partition(b" ")
    return int(seq), payload


def _answers(payload: bytes, request_id: Any) -> bool:
    if not payload:
        return False
    try:
        msg = parse(payload)
    except orjson.JSONDecodeError:
        return False
    return isinstance(msg, dict) and "method" not in msg and id_key(msg.get("id")) == id_key(request_id)


def lost(request_id: Any, message: str) -> dict[str, Any]:
    return jsonrpc_error(request_id, UPSTREAM_STREAM_LOST, message)
