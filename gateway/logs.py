"""structlog setup: JSON lines on stdout, console rendering when stdout is a terminal."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog

from gateway.identity import hash_session_ids

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default).decode()


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    console = fmt == "console" or (fmt == "auto" and sys.stdout.isatty())
    renderer: Any = structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer(serializer=_dumps)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            hash_session_ids,  # raw session ids never reach a log line
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "gateway") -> Any:
    return structlog.get_logger(name)
