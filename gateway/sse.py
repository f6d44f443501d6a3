"""Server-Sent Events: an incremental, bounded parser and the writer's framing.

The parser follows the WHATWG event-stream rules: CRLF, LF and CR end lines
alike (a CR at the end of one chunk and an LF at the start of the next are one
line end), a leading BOM is skipped, `:` starts a comment, `id` persists across
events (and is ignored if it holds NUL), `retry` sets the reconnection time
only if it is all ASCII digits, and a blank line dispatches an event if at
least one `data` line came since the last one.

It is bounded in every dimension, each bound raising `ValueError` with a
message naming it:

- `max_line_bytes`: one line, complete or still arriving, of any field;
- `max_event_bytes`: every byte of every line since the last blank line, line
  ends included, whatever those lines are (so a flood of empty `data:` lines,
  of comments or of lines with unknown or no field is bounded too);
- `max_field_bytes`: the value of `id`, `event` and `retry` lines.

Lines are cut on bytes (CR and LF never occur inside a UTF-8 sequence), so
every bound counts bytes; text that is not UTF-8 raises `ValueError` too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_FIELD_BYTES = 8 * 1024

_EOL = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_MAX_RETRY_DIGITS = 15


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None
    """The stream's last event id when this event was dispatched (it persists across events)."""
    retry: int | None = None
    """A `retry` given inside this event, in milliseconds."""


class SseParser:
    """Feed bytes, get complete events; see the module docstring for the rules and bounds."""

    def __init__(
        self,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        *,
        max_line_bytes: int | None = None,
        max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
        last_event_id: str | None = None,
    ) -> None:
        self._max_event = max_event_bytes
        self._max_line = max_event_bytes if max_line_bytes is None else max_line_bytes
        self._max_field = max_field_bytes
        self._partial = bytearray()
        self._after_cr = False
        self._started = False
        self._data: list[bytes] = []
        self._event = b""
        self._retry_in_event: int | None = None
        self._event_bytes = 0
        self.last_event_id: str | None = last_event_id
        """The last event id buffer: set by any `id` line, dispatched or not (`None` until one arrives)."""
        self.reconnection_ms: int | None = None
        """The latest `retry` the stream gave, in milliseconds (`None` if it gave none)."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if not chunk:
            return []
        if not self._started:
            probe = bytes(self._partial) + chunk
            if len(probe) < len(_BOM) and _BOM.startswith(probe):
                self._partial = bytearray(probe)
                return []
            self._started = True
            self._partial.clear()
            chunk = probe.removeprefix(_BOM)
        start = 0
        if self._after_cr and chunk.startswith(b"\n"):
            start = 1  # the LF of a CRLF split between two chunks
        self._after_cr = False
        events: list[SseEvent] = []
        if not self._partial and b"\r" not in chunk:
            # The common case (LF only, no line left over from the last chunk): bytes.split is a C loop,
            # several times cheaper than a regex match per line.
            *lines, rest = chunk[start:].split(b"\n")
            for line in lines:
                event = self._line(line)
                if event is not None:
                    events.append(event)
            if rest:
                self._partial += rest
                self._bounded_partial()
            return events
        for match in _EOL.finditer(chunk, start):
            piece = chunk[start : match.start()]
            if self._partial:
                self._partial += piece
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = piece
            start = match.end()
            event = self._line(line)
            if event is not None:
                events.append(event)
        if start < len(chunk):
            self._partial += chunk[start:]
            self._bounded_partial()
        elif chunk.endswith(b"\r"):
            self._after_cr = True
        return events

    def _bounded_partial(self) -> None:
        if len(self._partial) > self._max_line:
            raise ValueError(f"SSE line longer than {self._max_line} bytes")
        if self._event_bytes + len(self._partial) > self._max_event:
            raise ValueError(f"SSE event larger than {self._max_event} bytes")

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if len(line) > self._max_line:
            raise ValueError(f"SSE line longer than {self._max_line} bytes")
        self._event_bytes += len(line) + 1
        if self._event_bytes > self._max_event:
            raise ValueError(f"SSE event larger than {self._max_event} bytes")
        if line.startswith(b":"):
            return None
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name in (b"id", b"event", b"retry"):
            if len(value) > self._max_field:
                raise ValueError(f"SSE {name.decode()} field longer than {self._max_field} bytes")
            if name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self.last_event_id = _text(value) or None
            elif value.isdigit():  # bytes.isdigit is ASCII digits only
                retry = int(value) if len(value) <= _MAX_RETRY_DIGITS else 10**_MAX_RETRY_DIGITS
                self._retry_in_event = self.reconnection_ms = retry
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event, retry = self._data, self._event, self._retry_in_event
        self._data, self._event, self._retry_in_event, self._event_bytes = [], b"", None, 0
        if not data:
            return None
        return SseEvent(_text(b"\n".join(data)), _text(event) or "message", self.last_event_id, retry)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("SSE stream is not valid UTF-8") from None


def frame(data: bytes, event_id: str | None = None) -> bytes:
    """One SSE `message` event; JSON from orjson never holds a raw newline."""
    head = b"event: message\n"
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"
