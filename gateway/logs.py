"""structlog setup: JSON lines on stdout, console rendering when stdout is a terminal."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog

from gateway.identity import hash_session_ids

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default).decode()


class _UtcTimestamp:
    """`timestamp` as structlog's TimeStamper(fmt="iso", utc=True) writes it (2026-11-23T20:45:42.744345Z),
    at a fraction of the cost: the date and time are formatted once per second, not per line."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, _logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second, self._prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        event["timestamp"] = f"{self._prefix}.{int((now - second) * 1_000_000):06d}Z"
        return event


def configure_logging(fmt: str = "auto", level: str = "info", *, cache: bool = False) -> None:
    """`cache`: each logger is built once, on first use (a serving process configures once, before its first
    line); off where tests reconfigure logging and capture stdout."""
    console = fmt == "console" or (fmt == "auto" and sys.stdout.isatty())
    renderer: Any = structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer(serializer=_dumps)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            hash_session_ids,  # raw session ids never reach a log line
            structlog.processors.add_log_level,
            _UtcTimestamp(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        # One write per line to the current sys.stdout (print() makes two: the text, then the newline).
        logger_factory=structlog.WriteLoggerFactory(),
        cache_logger_on_first_use=cache,  # a bound logger per line otherwise: 7.5 -> 5.5 µs a line
    )


def get_logger(name: str = "gateway") -> Any:
    return structlog.get_logger(name)
