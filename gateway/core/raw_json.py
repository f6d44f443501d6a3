"""Parsed JSON that remembers its exact bytes, so what the gateway does not change is forwarded untouched."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.json_limits import JsonLimitExceeded, check_json

MAX_DEPTH = 1000
"""orjson parses up to 1024 levels; deeper-than-policy-can-re-encode messages fail alone later."""


class RawJson(dict[str, Any]):
    """A JSON object as parsed, plus the bytes it came from.

    The core never mutates messages in place (it builds new dicts for what it
    changes), so an unchanged message is still this object and goes out as `raw`.
    """

    __slots__ = ("raw",)
    raw: bytes


def parse(data: bytes) -> Any:
    """orjson.loads, keeping the raw bytes of a top-level object (raises orjson.JSONDecodeError,
    also for a duplicate object key: peers that keep the first of two keys would read another message)."""
    obj = orjson.loads(data)
    try:
        check_json(obj, data, max_depth=MAX_DEPTH)
    except JsonLimitExceeded as exc:
        raise orjson.JSONDecodeError(str(exc), "", 0) from None
    if isinstance(obj, dict):
        wrapped = RawJson(obj)
        wrapped.raw = data
        return wrapped
    return obj


def encode(msg: Any) -> bytes:
    """The exact bytes of an unchanged message, else orjson; never a raw newline (SSE frames need one line)."""
    if type(msg) is RawJson and b"\n" not in msg.raw and b"\r" not in msg.raw:
        return msg.raw
    return orjson.dumps(msg)
