"""The two eras of MCP and what the gateway changes when a message crosses between them. Pure.

- handshake era (2025-03-26 .. 2025-11-25): `initialize`, sessions, server-to-client requests;
- modern era (2026-07-28): no sessions; every request carries the client's protocol version
  and capabilities in `params._meta`; elicitation (and sampling, roots) arrive only inside
  `input_required` results of `tools/call`, `prompts/get` and `resources/read`.

Field names are those of the `mcp` / `mcp-types` source (`mcp_types/_types.py`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from gateway.core.capabilities import MODES

MODERN_VERSION = "2026-07-28"
MODERN_VERSIONS: tuple[str, ...] = (MODERN_VERSION,)

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

INPUT_REQUIRED = "input_required"
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
# Results the SDK client insists carry caching fields in the modern era.
CACHEABLE_RESULTS = frozenset({
    "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read",
})
# Request methods removed in the modern era (a modern server answers them -32601).
HANDSHAKE_ONLY_METHODS = frozenset({
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
})
_NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

MISSING_ENVELOPE = -32602
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022


def is_modern(version: str | None) -> bool:
    return version in MODERN_VERSIONS


def request_meta(msg: Mapping[str, Any]) -> dict[str, Any]:
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def envelope_version(msg: Mapping[str, Any]) -> str | None:
    version = request_meta(msg).get(META_VERSION)
    return version if isinstance(version, str) else None


def envelope_problem(msg: Mapping[str, Any]) -> str | None:
    """Why a modern request's envelope is unusable (-32602), or None."""
    meta = request_meta(msg)
    missing = [k for k in (META_VERSION, META_CAPABILITIES) if k not in meta]
    if missing:
        return "params._meta is missing the required envelope key(s): " + ", ".join(missing)
    if not isinstance(meta[META_CAPABILITIES], dict):
        return f"params._meta[{META_CAPABILITIES!r}] must be an object"
    return None


def narrow_capabilities(capabilities: Any, offered: frozenset[str]) -> dict[str, Any]:
    """The client's capabilities with elicitation narrowed to `offered` (explicit objects; none if empty)."""
    caps = dict(capabilities) if isinstance(capabilities, dict) else {}
    caps.pop("elicitation", None)
    if offered:
        caps["elicitation"] = {m: {} for m in MODES if m in offered}
    return caps


def with_envelope(
    msg: dict[str, Any], capabilities: dict[str, Any], client_info: Any = None, version: str = MODERN_VERSION
) -> dict[str, Any]:
    """The request as a modern server must receive it: `_meta` carries version, capabilities and client."""
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    assert isinstance(params, dict)
    meta = {**request_meta(msg), META_VERSION: version, META_CAPABILITIES: capabilities}
    if client_info is not None:
        meta[META_CLIENT_INFO] = client_info
    return {**msg, "params": {**params, "_meta": meta}}


_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def encode_header_value(value: str) -> str:
    """As the SDK does: printable ASCII verbatim, anything else in a `=?base64?...?=` sentinel."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip() and not _B64_SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def decode_header_value(value: str | None) -> str | None:
    """The inverse; None for a malformed sentinel, so it never matches a body value by accident."""
    match = _B64_SENTINEL.fullmatch(value) if value is not None else None
    if match is None:
        return value
    try:
        decoded = base64.b64decode(match.group("payload"), validate=True)
        if base64.b64encode(decoded).decode("ascii") != match.group("payload"):
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def routing_headers(msg: Mapping[str, Any], version: str = MODERN_VERSION) -> dict[str, str]:
    """HTTP headers a modern server checks against the body (else -32020)."""
    headers = {"MCP-Protocol-Version": version}
    method = msg.get("method")
    if isinstance(method, str):
        headers["Mcp-Method"] = method
        key = _NAME_BEARING.get(method)
        params = msg.get("params")
        name = params.get(key) if key and isinstance(params, dict) else None
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_header_value(name)
    return headers


def header_mismatch(msg: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """Why a modern request's routing headers disagree with its body (-32020), or None."""
    if headers.get("MCP-Protocol-Version") != envelope_version(msg):
        return "MCP-Protocol-Version header does not match the request envelope's protocol version"
    method = msg.get("method")
    if headers.get("Mcp-Method") != method:
        return "Mcp-Method header does not match the request body's method"
    key = _NAME_BEARING.get(method) if isinstance(method, str) else None
    params = msg.get("params")
    value = params.get(key) if key and isinstance(params, dict) else None
    if value is not None and decode_header_value(headers.get("Mcp-Name")) != value:
        return f"Mcp-Name header does not match the request body's {key!r} parameter"
    return None


def modern_result(method: str, result: Any) -> Any:
    """A handshake-era result as a modern host expects it: `resultType`, and caching fields on lists."""
    if not isinstance(result, dict):
        return result
    out = dict(result)
    out.setdefault("resultType", "complete")
    if method in CACHEABLE_RESULTS:
        out.setdefault("ttlMs", 0)
        out.setdefault("cacheScope", "private")
    return out


def is_input_required(result: Any) -> bool:
    return isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED


def discover_result(
    capabilities: Any, server_info: Any = None, instructions: Any = None
) -> dict[str, Any]:
    """`server/discover`'s result for a modern host: what the gateway can deliver for this server."""
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": capabilities if isinstance(capabilities, dict) else {},
        "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
    }
    if isinstance(instructions, str):
        result["instructions"] = instructions
    if server_info is not None:
        result["_meta"] = {META_SERVER_INFO: server_info}
    return result
