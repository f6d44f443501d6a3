"""The gateway's one exception tree, and the one place it becomes a wire error.

Split as in h11: `HostProtocolError` means the host broke the protocol (it gets a
4xx), `UpstreamFailure` means a server or its transport failed (the host gets a
JSON-RPC error for its request), `ConfigError` means the operator's files are wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# JSON-RPC codes the gateway itself emits (documented in docs/errors.md).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
URL_ELICITATION_REQUIRED = -32042
UPSTREAM_UNREACHABLE = -32010
UPSTREAM_FAILED = -32011
UPSTREAM_STREAM_LOST = -32012
REQUEST_TIMEOUT = -32013
ELICITATION_TIMEOUT = -32014
ELICITATION_BLOCKED = -32050
ELICITATION_RATE_LIMITED = -32051
POLICY_UNAVAILABLE = -32052
ANSWER_REJECTED = -32053


class GatewayError(Exception):
    """Root of every error the gateway raises on purpose."""


@dataclass
class ConfigError(GatewayError):
    file: str
    path: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.problem}"


class HostProtocolError(GatewayError):
    """The host sent something the protocol forbids; answered with an HTTP 4xx."""

    def __init__(self, status: int, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id


class UpstreamFailure(GatewayError):
    """An upstream server could not be reached or answered outside the protocol."""

    def __init__(self, code: int, message: str, *, status: int = 502) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class UpstreamSessionGone(UpstreamFailure):
    """The upstream forgot our session (404): the host must initialize again."""

    def __init__(self) -> None:
        super().__init__(INVALID_REQUEST, "upstream session expired; initialize again", status=404)


def jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def error_to_wire(exc: BaseException, request_id: Any = None) -> tuple[int, dict[str, Any]]:
    """Map any exception to (HTTP status, JSON-RPC error body); the only such mapping."""
    if isinstance(exc, HostProtocolError):
        rid = exc.request_id if exc.request_id is not None else request_id
        return exc.status, jsonrpc_error(rid, exc.code, exc.message)
    if isinstance(exc, UpstreamFailure):
        return exc.status, jsonrpc_error(request_id, exc.code, exc.message)
    return 500, jsonrpc_error(request_id, INTERNAL_ERROR, "internal gateway error")
