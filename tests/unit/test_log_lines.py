"""JSON log lines: one write each, with structlog's ISO UTC timestamp format (gateway/logs.py)."""

from __future__ import annotations

import io
import re
import sys
from datetime import UTC, datetime

import orjson
import pytest
import structlog

from gateway.logs import configure_logging, get_logger


class CountingStdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, s: str) -> int:
        self.writes += 1
        return super().write(s)


def test_a_json_line_is_one_write_with_an_iso_utc_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    out = CountingStdout()
    monkeypatch.setattr(sys, "stdout", out)
    try:
        configure_logging("json", "info")
        before = datetime.now(UTC)
        get_logger("gateway.test").info("request", server="up", method="tools/call", outcome="ok")
        after = datetime.now(UTC)
    finally:
        structlog.reset_defaults()
    assert out.writes == 1 and out.getvalue().endswith("}\n") and out.getvalue().count("\n") == 1
    line = orjson.loads(out.getvalue())
    assert line["event"] == "request" and line["level"] == "info" and line["server"] == "up"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["timestamp"]), line["timestamp"]
    stamped = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
    assert before.replace(microsecond=0) <= stamped <= after
