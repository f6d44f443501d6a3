"""Names on the aggregated endpoint `/mcp`: one host session, many servers. Pure.

- Tools and prompts: `<server>__<name>` (a valid tool name, `[A-Za-z0-9._-]{1,128}`, when the
  server's own name is one). A name that would pass 128 characters is cut and ends in
  `-<10 hex of its SHA-256>`, so two long names never meet; `resolve` needs the server's list then.
- Resources and resource templates: `mcpgw://<server>/<the server's own URI>`.
- Server requests sent to the host (elicitation, sampling, roots): the id becomes the string
  `<server>__<JSON of the server's id>`; the host's answer is routed back by it.
- Titles show the server: `[<server>] <title>`.
- List cursors: `{server: that server's cursor}` for the servers that have more, base64url JSON.

Server names never contain `__` (config validation), so the first `__` ends the server name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

import orjson

SEP = "__"
URI_SCHEME = "mcpgw://"
MAX_NAME = 128
_HASH_CHARS = 10
_TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")

LISTS: dict[str, tuple[str, str]] = {
    # method: (result key, the key that names each item)
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
}
# Requests routed to one server, and where their name or URI is.
BY_NAME = {"tools/call": "name", "prompts/get": "name"}
BY_URI = {"resources/read": "uri", "resources/subscribe": "uri", "resources/unsubscribe": "uri"}


class NotRoutable(ValueError):
    """A name, URI or cursor that names no server this host may use (-32602 to the host)."""


def name(server: str, original: str) -> str:
    full = f"{server}{SEP}{original}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(original.encode()).hexdigest()[:_HASH_CHARS]
    keep = MAX_NAME - len(server) - len(SEP) - _HASH_CHARS - 1
    return f"{server}{SEP}{original[:max(keep, 0)]}-{digest}"


def split_name(namespaced: Any, servers: tuple[str, ...]) -> tuple[str, str]:
    """(server, the name as that server knows it, or as shortened by `name`)."""
    if not isinstance(namespaced, str):
        raise NotRoutable("name must be a string")
    server, sep, rest = namespaced.partition(SEP)
    if not sep or server not in servers or not rest:
        raise NotRoutable(f"unknown name {namespaced[:80]!r}")
    return server, rest


def shortened(server: str, original: str) -> bool:
    return len(server) + len(SEP) + len(original) > MAX_NAME


def looks_shortened(part: str) -> bool:
    """The part after `<server>__` of a name `name` had to cut (ends in -<10 hex>)."""
    return len(part) > _HASH_CHARS and part[-_HASH_CHARS - 1] == "-" and all(
        c in "0123456789abcdef" for c in part[-_HASH_CHARS:])


def uri(server: str, original: str) -> str:
    return f"{URI_SCHEME}{server}/{original}"


def split_uri(namespaced: Any, servers: tuple[str, ...]) -> tuple[str, str]:
    if not isinstance(namespaced, str) or not namespaced.startswith(URI_SCHEME):
        raise NotRoutable("resource URI is not one of this endpoint's (mcpgw://<server>/...)")
    server, sep, rest = namespaced[len(URI_SCHEME):].partition("/")
    if not sep or server not in servers:
        raise NotRoutable(f"unknown resource {namespaced[:80]!r}")
    return server, rest


def title(server: str, item: dict[str, Any]) -> str:
    annotations = item.get("annotations")
    shown = item.get("title") or (annotations.get("title") if isinstance(annotations, dict) else None)
    return f"[{server}] {shown if isinstance(shown, str) and shown else item.get('name', '')}"


def item(method: str, server: str, raw: Any) -> dict[str, Any] | None:
    """One list entry as the host sees it; None for an entry without its identifying string."""
    if not isinstance(raw, dict):
        return None
    key = LISTS[method][1]
    ident = raw.get(key)
    if not isinstance(ident, str):
        return None
    out = dict(raw)
    out[key] = uri(server, ident) if key != "name" else name(server, ident)
    out["title"] = title(server, raw)
    return out


def encode_cursor(positions: dict[str, str]) -> str | None:
    if not positions:
        return None
    return base64.urlsafe_b64encode(orjson.dumps(positions)).decode().rstrip("=")


def decode_cursor(cursor: Any, servers: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(cursor, str) or len(cursor) > 16384:
        raise NotRoutable("invalid cursor")
    try:
        positions = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise NotRoutable("invalid cursor") from None
    if not isinstance(positions, dict) or not all(
        s in servers and isinstance(c, str) for s, c in positions.items()
    ):
        raise NotRoutable("invalid cursor")
    return positions


def route(msg: dict[str, Any], servers: tuple[str, ...]) -> tuple[str, dict[str, Any], str | None]:
    """(server, the request as that server must see it, the shortened name to resolve or None)
    for a request that belongs to one server. Raises NotRoutable."""
    method = msg["method"]
    params = msg.get("params")
    if not isinstance(params, dict):
        raise NotRoutable("params must be an object")
    if method in BY_NAME:
        server, original = split_name(params.get(BY_NAME[method]), servers)
        return server, {**msg, "params": {**params, BY_NAME[method]: original}}, original
    if method in BY_URI:
        server, original = split_uri(params.get(BY_URI[method]), servers)
        return server, {**msg, "params": {**params, BY_URI[method]: original}}, None
    if method == "completion/complete":
        ref = params.get("ref")
        if not isinstance(ref, dict):
            raise NotRoutable("completion/complete needs a ref")
        if ref.get("type") == "ref/resource":
            server, original = split_uri(ref.get("uri"), servers)
            return server, {**msg, "params": {**params, "ref": {**ref, "uri": original}}}, None
        server, original = split_name(ref.get("name"), servers)
        return server, {**msg, "params": {**params, "ref": {**ref, "name": original}}}, original
    raise NotRoutable(f"method {method[:60]!r} is not routed by name")


def with_name(msg: dict[str, Any], original: str) -> dict[str, Any]:
    """`msg` (as `route` returned it) naming `original` instead of a shortened name."""
    params = msg["params"]
    if msg["method"] in BY_NAME:
        return {**msg, "params": {**params, BY_NAME[msg["method"]]: original}}
    return {**msg, "params": {**params, "ref": {**params["ref"], "name": original}}}


def server_request_id(server: str, upstream_id: Any) -> str:
    return f"{server}{SEP}{json.dumps(upstream_id, ensure_ascii=False)}"  # stdlib: any integer, as JSON allows


def split_server_request_id(host_id: Any, servers: tuple[str, ...]) -> tuple[str, Any]:
    if not isinstance(host_id, str):
        raise NotRoutable("not a server request id of this endpoint")
    server, sep, raw = host_id.partition(SEP)
    if not sep or server not in servers:
        raise NotRoutable("not a server request id of this endpoint")
    try:
        upstream_id = json.loads(raw)
    except (ValueError, RecursionError):
        raise NotRoutable("not a server request id of this endpoint") from None
    if isinstance(upstream_id, bool) or not isinstance(upstream_id, str | int):
        raise NotRoutable("not a server request id of this endpoint")
    return server, upstream_id


def to_host(server: str, msg: Any) -> Any:
    """An upstream message (already through the gate) as the aggregated host must see it; the same
    object when nothing changes."""
    if not isinstance(msg, dict):
        return msg
    method = msg.get("method")
    if method is not None and "id" in msg:
        return {**msg, "id": server_request_id(server, msg["id"])}
    if method == "notifications/resources/updated":
        params = msg.get("params")
        if isinstance(params, dict) and isinstance(params.get("uri"), str):
            return {**msg, "params": {**params, "uri": uri(server, params["uri"])}}
    return msg

