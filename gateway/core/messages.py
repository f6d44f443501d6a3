"""Classifying raw JSON-RPC messages (plain dicts from orjson; never SDK models)."""

from __future__ import annotations

from typing import Any, Literal

Kind = Literal["request", "notification", "response", "invalid"]

# Revisions spoken on either hop, oldest first (see shared/protocol.md).
SUPPORTED_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]


def kind_of(msg: Any) -> Kind:
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return "invalid"
    has_id = "id" in msg
    if isinstance(msg.get("method"), str):
        if not has_id:
            return "notification"
        return "request" if valid_id(msg["id"]) else "invalid"
    if has_id and ("result" in msg or "error" in msg):
        return "response"
    return "invalid"


def valid_id(value: Any) -> bool:
    return (isinstance(value, str) or isinstance(value, int)) and not isinstance(value, bool)


def id_key(value: Any) -> str:
    """A dict key that keeps JSON type: 1 and "1" are different ids."""
    return f"s:{value}" if isinstance(value, str) else f"i:{value}"


def version_at_most(requested: Any) -> str:
    """The revision the gateway speaks with a peer that asked for `requested`."""
    if isinstance(requested, str) and requested in SUPPORTED_VERSIONS:
        return requested
    if isinstance(requested, str) and requested < SUPPORTED_VERSIONS[0]:
        return SUPPORTED_VERSIONS[0]
    return LATEST_VERSION


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}
