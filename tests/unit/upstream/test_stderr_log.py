"""A stdio server's stderr in the log: one event per line, cut at max_line_bytes, at most max_lines_per_second."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.upstream.stderr_log import StderrLog

pytestmark = pytest.mark.anyio


async def pump(log: StderrLog, *chunks: bytes) -> list[dict[str, Any]]:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    with capture_logs() as logs:
        await log.pump(reader, 42)
    return logs


async def test_each_line_is_one_event_with_the_server_and_pid() -> None:
    logs = await pump(StderrLog("files"), b"first li", b"ne\r\nsecond\n", b"no newline at the end")
    assert [(e["event"], e["server"], e["pid"], e["line"], e["truncated"]) for e in logs] == [
        ("upstream.stderr", "files", 42, "first line", False),
        ("upstream.stderr", "files", 42, "second", False),
        ("upstream.stderr", "files", 42, "no newline at the end", False),
    ]


async def test_bound_a_long_line_is_cut_and_the_rest_skipped() -> None:
    """Tried: a 1 MiB line arriving in pieces, then a short one, with a 100-byte bound."""
    logs = await pump(StderrLog("files", max_line_bytes=100), b"x" * 70_000, b"y" * 1_000_000 + b"\nshort\n")
    assert [(len(e["line"]), e["truncated"]) for e in logs] == [(100, True), (5, False)]


async def test_bound_a_chatty_server_is_rate_limited_and_the_excess_counted() -> None:
    """Tried: 10000 lines at once with 20 lines per second allowed."""
    logs = await pump(StderrLog("files", lines_per_second=20), b"chatter\n" * 10_000)
    lines = [e for e in logs if e["event"] == "upstream.stderr"]
    dropped = sum(e["dropped"] for e in logs if e["event"] == "upstream.stderr_dropped")
    assert 20 <= len(lines) <= 22 and len(lines) + dropped == 10_000


async def test_invalid_utf8_is_replaced_not_fatal() -> None:
    logs = await pump(StderrLog("files"), b"caf\xe9\n")
    assert logs[0]["line"] == "caf\ufffd"


async def test_log_false_reads_and_discards() -> None:
    assert await pump(StderrLog("files", enabled=False), b"secret=hunter2\n" * 100) == []
