"""Server-Sent Events: an incremental parser (CRLF, LF and CR line ends alike) and the writer's framing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseParser:
    """Feed bytes, get complete events. Bounded: an event larger than `max_event_bytes` raises."""

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self._buf = ""
        self._decoder_tail = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._size = 0
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[SseEvent]:
        raw = self._decoder_tail + chunk
        try:
            text = raw.decode("utf-8")
            self._decoder_tail = b""
        except UnicodeDecodeError as exc:
            if exc.start < len(raw) - 3:
                raise
            text, self._decoder_tail = raw[: exc.start].decode("utf-8"), raw[exc.start :]
        self._buf += text
        events: list[SseEvent] = []
        while True:
            cut = _line_end(self._buf)
            if cut is None:
                break
            line, skip = cut
            rest = self._buf[line + skip :]
            if skip == 1 and self._buf[line] == "\r" and not rest:
                break  # a lone CR at the end may be the first half of CRLF
            current = self._buf[:line]
            self._buf = rest
            event = self._line(current)
            if event is not None:
                events.append(event)
        if len(self._buf) + self._size > self._max:
            raise ValueError("SSE event too large")
        return events

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            if not self._data and not self._event:
                return None
            event = SseEvent("\n".join(self._data), self._event or "message", self._id, self._retry)
            self._data, self._event, self._retry, self._size = [], "", None, 0
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
            self._size += len(value)
            if self._size > self._max:
                raise ValueError("SSE event too large")
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None


def _line_end(buf: str) -> tuple[int, int] | None:
    cr, lf = buf.find("\r"), buf.find("\n")
    if cr == -1 and lf == -1:
        return None
    if cr != -1 and (lf == -1 or cr < lf):
        return (cr, 2) if buf[cr + 1 : cr + 2] == "\n" else (cr, 1)
    return lf, 1


def frame(data: bytes, event_id: str | None = None) -> bytes:
    """One SSE `message` event; JSON from orjson never holds a raw newline."""
    head = b"event: message\n"
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"
