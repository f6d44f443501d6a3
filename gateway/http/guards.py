"""Boundaries at the HTTP edge: Host and Origin on every route, body deadline and JSON limits,
session binding to the authenticated user, the negotiated protocol revision, sessions per user.

Everything here refuses before the session driver sees a request.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import web

from gateway.config import ListenConfig
from gateway.core.json_limits import JsonLimitExceeded, check_json
from gateway.core.raw_json import parse
from gateway.core.session_record import SessionRecord
from gateway.driver.aggregate import AggregateDriver
from gateway.driver.session_driver import SessionDriver
from gateway.errors import INVALID_REQUEST, PARSE_ERROR, HostProtocolError
from gateway.identity import Identity
from gateway.logs import get_logger
from gateway.state.store import StateStore

log = get_logger("gateway.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_LOOPBACK_NAMES = {"localhost", "localhost."}
BODY_KEY = "gateway.body"
"""The request's body, parsed and checked (request[BODY_KEY])."""
WRITE_TIMEOUT_KEY = "gateway.write_timeout"
"""listen.write_timeout_seconds for this request's SSE writes."""


# -- Host and Origin ---------------------------------------------------------------------------


def _hostname(value: str) -> str | None:
    try:
        return urlsplit(f"//{value}").hostname
    except ValueError:
        return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return True


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    name = name.rstrip(".").lower()
    for pattern in patterns:
        p = pattern.lower()
        if p.startswith("*.") and name.endswith(p[1:]) and len(name) > len(p) - 1:
            return True
        if name == p:
            return True
    return False


@functools.lru_cache(maxsize=256)  # every request asks; hosts send the same few Host values (bounded: 256)
def host_allowed(host_header: str | None, allowed: tuple[str, ...]) -> bool:
    """DNS rebinding needs a name the attacker controls in `Host`: IP literals and localhost are
    always fine, any other name only when configured (listen.allowed_hosts)."""
    if host_header is None:
        return True  # HTTP/1.0 without Host: no browser sends that
    name = _hostname(host_header)
    if not name:
        return False
    return name in _LOOPBACK_NAMES or _is_ip(name) or _matches(name, allowed)


def origin_allowed(origin: str | None, allowed_origins: tuple[str, ...]) -> bool:
    """No Origin (not a browser), a loopback origin, or a configured one (listen.allowed_origins)."""
    if origin is None:
        return True
    if origin in allowed_origins:
        return True
    try:
        parts = urlsplit(origin)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def boundary_middleware(listen: ListenConfig) -> Any:
    """Host and Origin checked on every route (health, readiness and metrics included): 403."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), listen.allowed_hosts):
            log.warning("host.rejected", path=request.path, status=403, reason="host_not_allowed")
            raise HostProtocolError(403, INVALID_REQUEST, "Forbidden: Host not allowed")
        if not origin_allowed(request.headers.get("Origin"), listen.allowed_origins):
            log.warning("host.rejected", path=request.path, status=403, reason="origin_not_allowed")
            raise HostProtocolError(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        request[WRITE_TIMEOUT_KEY] = listen.write_timeout_seconds
        return await handler(request)

    return check


def slow_consumer(request: web.Request) -> None:
    """A host stream that accepted nothing for write_timeout: close its connection (memory stays bounded)."""
    log.warning("host.slow_consumer_disconnected", path=request.path, timeout_s=request.get(WRITE_TIMEOUT_KEY))
    if request.transport is not None:
        request.transport.abort()


# -- the body ------------------------------------------------------------------------------------


async def read_body(request: web.Request, listen: ListenConfig) -> Any:
    """The body read within its deadline, parsed, with depth and duplicate keys checked (400)."""
    try:
        if request.content.is_eof():
            body = await request.read()  # all of it already arrived (most bodies come with their headers)
        else:
            async with asyncio.timeout(listen.body_timeout_seconds):
                body = await request.read()
    except TimeoutError:
        log.warning("host.rejected", path=request.path, status=408, reason="body_timeout")
        raise HostProtocolError(408, INVALID_REQUEST, "Request Timeout: body not received in time") from None
    try:
        msg = parse(body)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("duplicate key"):
            raise HostProtocolError(400, INVALID_REQUEST, "Invalid Request: duplicate key in a JSON object") from None
        raise HostProtocolError(400, PARSE_ERROR, "Parse error: body is not valid JSON (or not UTF-8)") from None
    try:
        check_json(msg, body, max_depth=listen.max_json_depth)
    except JsonLimitExceeded as exc:
        raise HostProtocolError(400, INVALID_REQUEST, f"Invalid Request: {exc}") from None
    request[BODY_KEY] = msg
    return msg


# -- sessions ----------------------------------------------------------------------------------


async def load_owned(
    driver: SessionDriver | AggregateDriver, request: web.Request, sid: str, take: str | None = None
) -> tuple[SessionRecord, dict[str, Any] | None]:
    """`driver.load` for the request's user: another user's session is 404, exactly like an unknown one,
    checked before a pending server request is taken. A `MCP-Protocol-Version` other than the
    session's negotiated revision is 400."""
    identity: Identity | None = request.get("gateway.identity")
    if identity is not None and identity.authenticated:
        rec, _ = await driver.load(sid)
        if rec.user != identity.user:
            log.warning("session.foreign", server=driver.server, session=sid, user=identity.user)
            raise HostProtocolError(404, INVALID_REQUEST, "Session not found")
        if take is not None:
            rec, pending = await driver.load(sid, take)
            return _version_checked(request, rec), pending
        return _version_checked(request, rec), None
    rec, pending = await driver.load(sid, take)
    return _version_checked(request, rec), pending


def _version_checked(request: web.Request, rec: SessionRecord) -> SessionRecord:
    version = request.headers.get("MCP-Protocol-Version")
    if version is not None and version != rec.host_version:
        raise HostProtocolError(
            400, INVALID_REQUEST, f"Bad Request: MCP-Protocol-Version {version[:40]!r} is not this session's revision"
        )
    return rec


class UserSessions:
    """Sessions per authenticated user: the user's session ids that still exist in the store.

    Ids are remembered here per replica and checked against the store on each initialize
    (ended or expired ones drop out); with several replicas each replica counts the
    sessions it created, so the bound holds per replica.
    """

    def __init__(self, store: StateStore, limit: int) -> None:
        self._store = store
        self._limit = limit
        self._ids: dict[str, set[str]] = {}
        self._reserved: dict[str, int] = {}

    async def admit(self, user: str) -> None:
        """Raises 429 when the user already holds `limit` sessions; else reserves one slot."""
        ids = self._ids.get(user, set())
        alive = set()
        for sid in list(ids):
            if await self._store.get_session(sid) is not None:
                alive.add(sid)
        if alive:
            self._ids[user] = alive
        else:
            self._ids.pop(user, None)
        if len(alive) + self._reserved.get(user, 0) >= self._limit:
            log.warning("session.user_limit", user=user, limit=self._limit)
            raise HostProtocolError(429, INVALID_REQUEST, f"Too Many Requests: at most {self._limit} sessions per user")
        self._reserved[user] = self._reserved.get(user, 0) + 1

    def settle(self, user: str, session_id: str | None) -> None:
        """The initialize that `admit` reserved for is over; `session_id` is the session it created."""
        left = self._reserved.get(user, 1) - 1
        if left > 0:
            self._reserved[user] = left
        else:
            self._reserved.pop(user, None)
        if session_id:
            self._ids.setdefault(user, set()).add(session_id)
