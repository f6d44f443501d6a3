"""A stdio server's stderr, line by line, into the structured log: bounded in line length and in rate.

Every child of one server shares one token bucket (`lines_per_second`, and as
burst), so a chatty or hostile server cannot flood the gateway's log however
many sessions it has. Lines over the bucket are counted and reported in one
`upstream.stderr_dropped` line (at most one a second). A line longer than
`max_line_bytes` is cut there (`truncated: true`) and the rest of it skipped.
The pipe is always read to its end, so a child never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import time

from gateway.logs import get_logger

log = get_logger("gateway.upstream")

_CHUNK = 64 * 1024


class StderrLog:
    def __init__(self, server: str, *, enabled: bool = True, max_line_bytes: int = 2048,
                 lines_per_second: float = 20.0) -> None:
        self.server = server
        self.enabled = enabled
        self.max_line = max_line_bytes
        self.rate = lines_per_second
        self._tokens = max(1.0, lines_per_second)
        self._at = time.monotonic()
        self._dropped = 0
        self._reported = 0.0
        self.logged = 0
        """Lines logged so far (all children), for tests and the dropped count's context."""

    async def pump(self, stderr: asyncio.StreamReader, pid: int) -> None:
        """Read one child's stderr to its end."""
        buf = bytearray()
        skipping = False  # inside a line already cut at max_line
        while chunk := await stderr.read(_CHUNK):
            if not self.enabled:
                continue
            buf += chunk
            while (nl := buf.find(b"\n")) >= 0:
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                if skipping:
                    skipping = False
                else:
                    self._line(line, pid)
            if len(buf) > self.max_line:
                if not skipping:
                    self._line(bytes(buf), pid)
                buf.clear()
                skipping = True
        if buf and not skipping:
            self._line(bytes(buf), pid)
        self._report(force=True)

    def _line(self, raw: bytes, pid: int) -> None:
        now = time.monotonic()
        burst = max(1.0, self.rate)
        self._tokens = min(burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1:
            self._dropped += 1
            self._report()
            return
        self._tokens -= 1
        self._report()
        truncated = len(raw) > self.max_line
        text = raw[: self.max_line].decode("utf-8", "replace").rstrip("\r")
        self.logged += 1
        log.info("upstream.stderr", server=self.server, pid=pid, line=text, truncated=truncated)

    def _report(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self._dropped and (force or now - self._reported >= 1.0):
            log.warning("upstream.stderr_dropped", server=self.server, dropped=self._dropped,
                        reason="over max_lines_per_second")
            self._dropped, self._reported = 0, now
