"""Per-request streams rebuilt from one ordered channel of messages (stdio, legacy HTTP+SSE).

Those transports carry every message of a session on one channel, so a reply
has no stream of its own. A `Demux` rebuilds them: a response ends the stream
of the request it answers (matched by id, JSON type kept); server requests and
notifications go to the newest request still open, else the standalone stream,
else wait in a small backlog until one opens.

Everything is bounded: each stream's queue holds at most `max_queued` messages
and a message that cannot be queued within `flood_grace` makes `dispatch`
return False (the caller stops the channel); at most `max_pending` requests
wait for their answer at once; the backlog keeps the newest `BACKLOG` messages.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from gateway.errors import UPSTREAM_FAILED, UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure

BACKLOG = 256
MAX_QUEUED = 1024
MAX_PENDING = 256
FLOOD_GRACE = 5.0
_WAKE = object()


def id_key(value: Any) -> str:
    """A dict key that keeps JSON type: 1 and "1" are different ids."""
    return f"s:{value}" if isinstance(value, str) else f"i:{value}"


def is_request(msg: Any) -> bool:
    return isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg


def is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and "id" in msg and ("result" in msg or "error" in msg)


class MessageStream:
    """One rebuilt stream: a bounded queue, how it ended (None while open, True when answered) and the answer."""

    __slots__ = ("answer", "end", "queue")

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=maxsize)
        self.end: UpstreamFailure | bool | None = None
        self.answer: Any = None

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


class Demux:
    def __init__(
        self, name: str, *, max_queued: int = MAX_QUEUED, flood_grace: float = FLOOD_GRACE,
        max_pending: int = MAX_PENDING, channel: str = "process",
    ) -> None:
        self.name = name
        self.channel = channel
        self.max_queued = max_queued
        self.flood_grace = flood_grace
        self.max_pending = max_pending
        self.streams: dict[str, MessageStream] = {}
        self.order: list[str] = []
        self.standalone: MessageStream | None = None
        self.backlog: deque[Any] = deque(maxlen=BACKLOG)
        self.failure: UpstreamFailure | None = None

    def open_request(self, request_id: Any) -> tuple[str, MessageStream]:
        if self.failure is not None:
            raise self.failure
        if len(self.streams) >= self.max_pending:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE,
                f"server {self.name!r}: {self.max_pending} requests of this session already await an answer",
                status=503,
            )
        key = id_key(request_id)
        if key in self.streams:  # its answer could not be told from the other's
            raise UpstreamFailure(UPSTREAM_FAILED, f"a request with id {request_id!r} already awaits its answer",
                                  status=400)
        stream = self.streams[key] = MessageStream(self.max_queued)
        self.order.append(key)
        return key, stream

    def close_request(self, key: str, stream: MessageStream) -> None:
        if self.streams.get(key) is stream:
            del self.streams[key]
            self.order.remove(key)

    def open_standalone(self) -> MessageStream:
        if self.failure is not None:
            raise self.failure
        stream = self.standalone = MessageStream(self.max_queued)
        while self.backlog and not stream.queue.full():
            stream.queue.put_nowait(self.backlog.popleft())
        return stream

    def close_standalone(self, stream: MessageStream) -> None:
        if self.standalone is stream:
            self.standalone = None

    def fail(self, reason: UpstreamFailure) -> None:
        """The channel is over: every open stream ends with `reason`, and so does every later one."""
        if self.failure is None:
            self.failure = reason
        for stream in [*self.streams.values(), *([self.standalone] if self.standalone else [])]:
            stream.finish(reason)

    def flooded(self) -> UpstreamFailure:
        return UpstreamFailure(
            UPSTREAM_STREAM_LOST,
            f"server {self.name!r} flooded: more than {self.max_queued} messages stayed unread for "
            f"{self.flood_grace:g}s; {self.channel} stopped",
        )

    async def dispatch(self, msg: Any) -> bool:
        """Route one message; False if its stream stayed full for the whole grace time."""
        if is_response(msg):
            key = id_key(msg["id"])
            stream = self.streams.get(key)
            if stream is not None:
                delivered = await self._put(stream, msg)
                # Answered: what follows goes to another stream, not to one that is over.
                self.close_request(key, stream)
                stream.answer = msg
                stream.finish(True if delivered else self.flooded())
                return delivered
        target = self.streams[self.order[-1]] if self.order else self.standalone
        if target is None:
            self.backlog.append(msg)  # bounded: the oldest falls out
            return True
        return await self._put(target, msg)

    async def _put(self, stream: MessageStream, msg: Any) -> bool:
        if stream.end is not None:
            return True  # nobody will read it
        try:
            async with asyncio.timeout(self.flood_grace):
                await stream.queue.put(msg)
        except TimeoutError:
            return False
        return True
