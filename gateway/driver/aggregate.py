"""`/mcp`: one host session in front of every server the host may use.

The aggregated session is a record of its own (server `*`). Behind it, each server gets an
ordinary session of that server's `SessionDriver`, opened when first needed, under an id
derived from the aggregated one with a deployment secret (HMAC), so any replica finds it
without a map and no host can guess it. Everything per server (the policy gate, origin tags,
pending elicitations, resuming, the era of the upstream) is that driver's, unchanged; this
module only names, routes and merges (`core/namespacing.py`):

- lists fan out to every allowed server at once, each bounded by `aggregate.list_timeout_seconds`;
  a server that fails or is slow is left out (and skipped with a backoff) and logged;
- a call, read, prompt or completion goes to the server its name or URI carries;
- server requests reach the host with ids `<server>__<id>`; answers are routed back by them;
- the GET stream merges the per-server GET streams; its event ids carry every server's position.

2026-07-28 hosts have no session: the same routing and merging run on each request, through
each server's `ModernCalls`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import hashlib
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from multidict import CIMultiDict

from gateway.core import eras, host_side, namespacing
from gateway.core.messages import id_key, kind_of
from gateway.core.raw_json import encode
from gateway.core.session_record import SessionRecord
from gateway.driver.contracts import HostGone, HostStream, OneByOne, Responder
from gateway.driver.session_driver import SessionDriver
from gateway.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    POLICY_UNAVAILABLE,
    REQUEST_TIMEOUT,
    UPSTREAM_FAILED,
    UPSTREAM_STREAM_LOST,
    UPSTREAM_UNREACHABLE,
    HostProtocolError,
    jsonrpc_error,
)
from gateway.logs import get_logger
from gateway.state.errors import StateUnavailable
from gateway.state.store import StateStore

log = get_logger("gateway.aggregate")

AGGREGATE = "*"
CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "completions": {},
    "logging": {},
}
SERVER_INFO = {"name": "elicitation-gateway", "title": "Elicitation gateway (all servers)", "version": ""}
_MAX_BACKOFF = 60.0
# Errors the gateway itself answers when a server cannot be reached or fails (not the server's own).
_GATEWAY_FAILURES = frozenset({
    UPSTREAM_UNREACHABLE, UPSTREAM_FAILED, UPSTREAM_STREAM_LOST, REQUEST_TIMEOUT, POLICY_UNAVAILABLE})


@dataclass(frozen=True, slots=True)
class AggregateSettings:
    list_timeout: float
    discover_every: float
    session_ttl: float


class ServerUnavailable(Exception):
    def __init__(self, server: str, reason: str) -> None:
        super().__init__(reason)
        self.server = server
        self.reason = reason


Pager = Callable[[str, dict[str, Any], "Captured"], Awaitable[None]]


class AggregateDriver:
    """Shared by every request to /mcp; `bind` gives the view for one host's allowed servers."""

    server = AGGREGATE

    def __init__(self, drivers: Mapping[str, SessionDriver], store: StateStore, settings: AggregateSettings) -> None:
        self.drivers = drivers
        self.store = store
        self.settings = settings
        self.allowed: tuple[str, ...] = ()
        self._secret: bytes | None = None
        self._opening: dict[str, asyncio.Lock] = {}
        self._opened: dict[str, asyncio.Event] = {}  # aggregated sid -> wakes its GET stream here
        self._gets: dict[str, asyncio.Task[Any]] = {}  # aggregated sid -> the task serving its GET here
        self._long_names: dict[tuple[str, str], str] = {}
        self._calls: dict[tuple[str, str], str] = {}  # (aggregated sid, host id) -> server, for cancellations
        self._down: dict[str, tuple[float, float]] = {}  # server -> (skip until, backoff)
        self.modern = ModernAggregate(self)

    def bind(self, allowed: tuple[str, ...]) -> AggregateDriver:
        view = copy.copy(self)
        view.allowed = tuple(s for s in allowed if s in self.drivers)
        view.modern = ModernAggregate(view)
        return view

    # -- the aggregated session -------------------------------------------------------------

    async def initialize(self, msg: dict[str, Any], responder: Responder, user: str | None) -> None:
        sid = uuid.uuid4().hex
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        host_version, _, _ = host_side.initialize_upstream(msg, ())
        caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
        rec = SessionRecord(sid, AGGREGATE, user or sid, host_version, host_version, frozenset(), None,
                            caps, params.get("clientInfo"))
        await self.store.put_session(sid, rec.to_json(), self.settings.session_ttl)
        log.info("session.created", server=AGGREGATE, session=sid, host_version=host_version,
                 servers=list(self.allowed))
        await responder.json({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": host_version, "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO,
            "instructions": _instructions(self.allowed),
        }}, session_id=sid)

    async def load(self, sid: str, take: str | None = None) -> tuple[SessionRecord, dict[str, Any] | None]:
        """The aggregated session; pending server requests live in the per-server sessions."""
        raw, _ = await self.store.load_session(sid, self.settings.session_ttl, None)
        if raw is None or raw.get("s") != AGGREGATE:
            raise HostProtocolError(404, INVALID_REQUEST, "Session not found")
        return SessionRecord.from_json(sid, raw), None

    async def end(self, rec: SessionRecord, *, reason: str) -> None:
        for server in self.drivers:
            sub = await self._sub(rec, server, open_it=False)
            if sub is not None:
                await self.drivers[server].end(sub, reason=reason)
        with contextlib.suppress(StateUnavailable):
            await self.store.delete_session(rec.session_id)
        self._opened.pop(rec.session_id, None)
        log.info("session.ended", server=AGGREGATE, session=rec.session_id, reason=reason)

    async def _sub_id(self, rec: SessionRecord, server: str) -> str:
        if self._secret is None:
            self._secret = await self.store.shared_secret("aggregate-sessions")
        return hmac.new(self._secret, f"{rec.session_id}/{server}".encode(), hashlib.sha256).hexdigest()[:32]

    async def _sub(self, rec: SessionRecord, server: str, *, open_it: bool = True) -> SessionRecord | None:
        """The host's session with `server`: opened on first need (never twice at once on a replica)."""
        driver = self.drivers[server]
        ssid = await self._sub_id(rec, server)
        with contextlib.suppress(HostProtocolError):
            return (await driver.load(ssid))[0]
        if not open_it:
            return None
        lock = self._opening.setdefault(ssid, asyncio.Lock())
        try:
            async with lock:
                with contextlib.suppress(HostProtocolError):
                    return (await driver.load(ssid))[0]
                reply = Captured(0)
                init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": rec.host_version, "capabilities": rec.host_capabilities or {},
                    "clientInfo": rec.client_info or {"name": "aggregated-host", "version": ""},
                }}
                try:
                    await driver.initialize(init, reply, rec.user, session_id=ssid)
                except HostProtocolError as exc:
                    raise ServerUnavailable(server, exc.message) from None
                if reply.session_id is None:
                    raise ServerUnavailable(server, _error_text(reply.body))
                sub, _ = await driver.load(ssid)
                await driver.host_oneway(sub, {"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
        finally:
            if not lock.locked():
                self._opening.pop(ssid, None)
        log.info("aggregate.server_session_opened", server=server, session=rec.session_id)
        event = self._opened.get(rec.session_id)
        if event is not None:
            event.set()
        return sub

    # -- host requests ---------------------------------------------------------------------

    async def host_request(self, rec: SessionRecord, msg: dict[str, Any], responder: Responder) -> None:
        method, rid = msg["method"], msg["id"]
        if method == "ping":
            await responder.json({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method in ("initialize", host_side.DISCOVER):
            await responder.json(jsonrpc_error(rid, INVALID_REQUEST, "session already initialized"))
        elif method in namespacing.LISTS:
            await responder.json(await self.merged_list(msg, self._legacy_pages(rec), modern=False))
        elif method == "logging/setLevel":
            await asyncio.gather(*(self._set_level(rec, server, msg) for server in self.allowed))
            await responder.json({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            routed = await self.routed(msg, responder, self._legacy_pages(rec))
            if routed is None:
                return
            server, out = routed
            try:
                sub = await self._sub(rec, server)
            except ServerUnavailable as exc:
                await responder.json(_unavailable(rid, exc))
                return
            assert sub is not None
            key = (rec.session_id, id_key(rid))
            self._calls[key] = server
            try:
                await self.drivers[server].host_request(sub, out, ToHost(responder, server, rec.session_id))
            finally:
                self._calls.pop(key, None)

    def _legacy_pages(self, rec: SessionRecord) -> Pager:
        async def page(server: str, request: dict[str, Any], reply: Captured) -> None:
            sub = await self._sub(rec, server)
            assert sub is not None
            await self.drivers[server].host_request(sub, request, reply)
        return page

    async def routed(
        self, msg: dict[str, Any], responder: Responder, page: Pager
    ) -> tuple[str, dict[str, Any]] | None:
        """(server, the request as it knows it), or None when the host was answered with an error."""
        rid = msg["id"]
        try:
            server, out, name = namespacing.route(msg, self.allowed)
        except namespacing.NotRoutable as exc:
            known = msg["method"] in namespacing.BY_NAME or msg["method"] in namespacing.BY_URI or \
                msg["method"] == "completion/complete"
            code, text = (INVALID_PARAMS, str(exc)) if known else (METHOD_NOT_FOUND, "Method not found")
            await responder.json(jsonrpc_error(rid, code, text))
            return None
        if name is not None and namespacing.looks_shortened(name):
            if (server, name) not in self._long_names:  # shortened on another replica: learn the server's names
                with contextlib.suppress(Exception):
                    await self._learn_names(server, msg, page)
            if (server, name) in self._long_names:
                out = namespacing.with_name(out, self._long_names[(server, name)])
        return server, out

    async def _learn_names(self, server: str, msg: dict[str, Any], page: Pager) -> None:
        method = "prompts/list" if msg["method"] == "prompts/get" or _prompt_ref(msg) else "tools/list"
        view = self.bind((server,))
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], "method": method, "params": {}}
        for _ in range(100):  # pages
            answer = await view.merged_list(request, page, modern=False)
            cursor = answer.get("result", {}).get("nextCursor")
            if cursor is None:
                return
            request = {**request, "params": {"cursor": cursor}}

    async def _set_level(self, rec: SessionRecord, server: str, msg: dict[str, Any]) -> None:
        with contextlib.suppress(ServerUnavailable, asyncio.TimeoutError, StateUnavailable):
            async with asyncio.timeout(self.settings.list_timeout):
                sub = await self._sub(rec, server)
                assert sub is not None
                await self.drivers[server].host_request(sub, msg, Captured(msg["id"]))

    async def merged_list(self, msg: dict[str, Any], page: Pager, *, modern: bool) -> dict[str, Any]:
        """One list across servers: each queried at once (from the cursor's positions), entries
        named by server, a cursor for the servers that have more. A failed or slow server is left out."""
        method, rid = msg["method"], msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        if params.get("cursor") is not None:
            try:
                positions: dict[str, str | None] = dict(namespacing.decode_cursor(params["cursor"], self.allowed))
            except namespacing.NotRoutable as exc:
                return jsonrpc_error(rid, INVALID_PARAMS, str(exc))
        else:
            positions = {s: None for s in self.allowed if not self._skipped(s)}
        plain = {k: v for k, v in params.items() if k != "cursor"}

        async def one(server: str, cursor: str | None) -> dict[str, Any]:
            reply = Captured(rid)
            request = {**msg, "params": {**plain, "cursor": cursor} if cursor is not None else plain}
            async with asyncio.timeout(self.settings.list_timeout):
                await page(server, request, reply)
            error = reply.body.get("error") if isinstance(reply.body, dict) else None
            if isinstance(error, dict) and error.get("code") not in _GATEWAY_FAILURES:
                log.info("aggregate.list_refused", server=server, method=method, reason=_error_text(reply.body))
                return {}  # up, but without this list (e.g. no resource templates): nothing from it
            result = reply.body.get("result") if isinstance(reply.body, dict) else None
            if not isinstance(result, dict):
                raise ServerUnavailable(server, _error_text(reply.body))
            return result

        results = await asyncio.gather(*(one(s, c) for s, c in positions.items()), return_exceptions=True)
        key = namespacing.LISTS[method][0]
        entries: list[dict[str, Any]] = []
        more: dict[str, str] = {}
        for server, result in zip(positions, results, strict=True):
            if isinstance(result, BaseException):
                self._failed(server, method, result)
                continue
            self._down.pop(server, None)
            for raw in result.get(key) or []:
                entry = namespacing.item(method, server, raw)
                if entry is None:
                    continue
                if method in ("tools/list", "prompts/list") and namespacing.shortened(server, raw["name"]):
                    self._long_names[(server, entry["name"].partition(namespacing.SEP)[2])] = raw["name"]
                entries.append(entry)
            if isinstance(result.get("nextCursor"), str):
                more[server] = result["nextCursor"]
        answer: dict[str, Any] = {key: entries}
        cursor = namespacing.encode_cursor(more)
        if cursor is not None:
            answer["nextCursor"] = cursor
        return {"jsonrpc": "2.0", "id": rid, "result": eras.modern_result(method, answer) if modern else answer}

    def _skipped(self, server: str) -> bool:
        until = self._down.get(server)
        return until is not None and time.monotonic() < until[0]

    def _failed(self, server: str, method: str, exc: BaseException) -> None:
        backoff = min(_MAX_BACKOFF, self._down.get(server, (0.0, 2.5))[1] * 2)
        self._down[server] = (time.monotonic() + backoff, backoff)
        reason = exc.reason if isinstance(exc, ServerUnavailable) else (
            "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)
        log.warning("aggregate.server_left_out", server=server, method=method, reason=reason,
                    retry_after_seconds=backoff)

    async def host_oneway(self, rec: SessionRecord, msg: dict[str, Any], pending: dict[str, Any] | None) -> None:
        """An answer to a server request goes to that server; cancellations to the server running the call."""
        if kind_of(msg) == "response":
            try:
                server, upstream_id = namespacing.split_server_request_id(msg.get("id"), self.allowed)
            except namespacing.NotRoutable as exc:
                raise HostProtocolError(400, INVALID_REQUEST, str(exc)) from None
            sub = await self._sub(rec, server, open_it=False)
            if sub is None:
                raise HostProtocolError(400, INVALID_REQUEST, "no server request is waiting for this answer")
            driver = self.drivers[server]
            sub, taken = await driver.load(sub.session_id, host_side.pending_key(upstream_id))
            await driver.host_oneway(sub, {**msg, "id": upstream_id}, taken)
            return
        method = msg.get("method")
        if method == "notifications/cancelled":
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            running = self._calls.get((rec.session_id, id_key(rid)))
            targets = (running,) if running is not None else self.allowed  # another replica's call: tell all
        elif method == "notifications/roots/list_changed":
            targets = self.allowed
        else:
            return  # initialized, progress: nothing for the servers behind
        for server in targets:
            sub = await self._sub(rec, server, open_it=False)
            if sub is not None:
                await self.drivers[server].host_oneway(sub, msg, None)

    # -- the host's GET stream --------------------------------------------------------------

    async def attach(self, rec: SessionRecord, last_event_id: str | None, stream: HostStream) -> None:
        """The per-server GET streams of the servers opened so far (and those opened later), merged."""
        resumed = _RequestEventId.parse(last_event_id, self.allowed)
        if resumed is not None:  # a call's stream, resumed on the server that ran it
            sub = await self._sub(rec, resumed.server, open_it=False)
            if sub is None:
                raise HostProtocolError(404, INVALID_REQUEST, "Session not found")
            await self.drivers[resumed.server].attach(sub, resumed.event_id, ToHostStream(stream, resumed.server))
            return
        merged = MergedStream(stream, _positions(last_event_id, self.allowed))
        await self._supersede(rec.session_id)
        opened = self._opened.setdefault(rec.session_id, asyncio.Event())
        tasks: dict[str, asyncio.Task[None]] = {}
        try:
            while not merged.gone:
                for server in self.allowed:
                    if server in tasks and not tasks[server].done():
                        continue
                    sub = await self._sub(rec, server, open_it=False)
                    if sub is not None and (server not in tasks or tasks[server].done()):
                        tasks[server] = asyncio.create_task(self._serve(server, sub, merged))
                opened.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.discover_every):
                        await opened.wait()
                if not any(not t.done() for t in tasks.values()):
                    await merged.comment()  # nothing else writes: keeps the stream alive, finds a gone host
        except HostGone:
            return
        finally:
            for task in tasks.values():
                task.cancel()
            for task in tasks.values():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _supersede(self, sid: str) -> None:
        """A host that reconnects its GET stream replaces the one it left here: a stream whose host
        is gone is otherwise only noticed at its next write (keepalive), and holds the servers' GETs."""
        previous = self._gets.get(sid)
        current = asyncio.current_task()
        if previous is not None and previous is not current and not previous.done():
            previous.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.wait({previous}), 2.0)
        if current is not None:
            self._gets[sid] = current
            current.add_done_callback(lambda t: self._gets.pop(sid, None) if self._gets.get(sid) is t else None)

    async def _serve(self, server: str, sub: SessionRecord, merged: MergedStream) -> None:
        try:
            await self.drivers[server].attach(sub, merged.positions.get(server), merged.of(server))
        except HostProtocolError as exc:  # e.g. that session's GET is still open on another replica
            log.info("aggregate.stream_not_joined", server=server, reason=exc.message)


class ModernAggregate:
    """2026-07-28 hosts on /mcp: no session; each request is routed or merged on its own."""

    def __init__(self, agg: AggregateDriver) -> None:
        self.agg = agg

    async def host_request(
        self, msg: dict[str, Any], responder: Responder, user: str | None, headers: Mapping[str, str]
    ) -> None:
        agg, method = self.agg, msg["method"]
        if method == host_side.DISCOVER:
            problem = eras.envelope_problem(msg)
            if problem is not None:
                await responder.json(jsonrpc_error(msg["id"], INVALID_PARAMS, problem), 400)
                return
            await responder.json({"jsonrpc": "2.0", "id": msg["id"], "result": eras.discover_result(
                {k: v for k, v in CAPABILITIES.items() if k != "logging"}, SERVER_INFO, _instructions(agg.allowed))})
        else:
            async def page(server: str, request: dict[str, Any], reply: Captured) -> None:
                await agg.drivers[server].modern.host_request(request, reply, user, _renamed(headers, request))
            if method in namespacing.LISTS:
                await responder.json(await agg.merged_list(msg, page, modern=True))
                return
            routed = await agg.routed(msg, responder, page)
            if routed is not None:
                server, out = routed
                await agg.drivers[server].modern.host_request(
                    out, ToHost(responder, server, None), user, _renamed(headers, out))


def _renamed(headers: Mapping[str, str], msg: dict[str, Any]) -> Mapping[str, str]:
    """The host's `Mcp-Name` header named the namespaced tool; the server's check wants its own name."""
    if "Mcp-Name" not in headers:
        return headers
    params = msg.get("params")
    value = params.get("name", params.get("uri")) if isinstance(params, dict) else None
    out = CIMultiDict(headers)
    if isinstance(value, str):
        out["Mcp-Name"] = eras.encode_header_value(value)
    else:
        out.popall("Mcp-Name")
    return out


def _prompt_ref(msg: dict[str, Any]) -> bool:
    params = msg.get("params")
    ref = params.get("ref") if isinstance(params, dict) else None
    return isinstance(ref, dict) and ref.get("type") == "ref/prompt"


# -- responders and streams between the servers' drivers and the aggregated host ---------------


class Captured:
    """Takes the one answer of a request the gateway makes itself (a list page, an initialize)."""

    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id
        self.body: Any = None
        self.session_id: str | None = None

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None:
        self.body, self.session_id = body, session_id

    async def stream(self, session_id: str) -> HostStream:
        return _CapturedStream(self)


class _CapturedStream(OneByOne):
    def __init__(self, reply: Captured) -> None:
        self.reply = reply

    async def write(self, payload: bytes, event_id: str | None) -> None:
        if not payload:
            return  # a priming event (an id, no data)
        msg = orjson.loads(payload)
        if isinstance(msg, dict) and "method" not in msg and id_key(msg.get("id")) == id_key(self.reply.request_id):
            self.reply.body = msg

    async def comment(self) -> None:
        return None


class ToHost:
    """A routed request's answer, on the aggregated host's own response (JSON or SSE)."""

    def __init__(self, outer: Responder, server: str, session_id: str | None) -> None:
        self.outer = outer
        self.server = server
        self.session_id = session_id

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None:
        await self.outer.json(namespacing.to_host(self.server, body), status)

    async def stream(self, session_id: str) -> HostStream:
        return ToHostStream(await self.outer.stream(self.session_id or ""), self.server)


class ToHostStream(OneByOne):
    """Events from one server's session, renamed; event ids say which server's stream they resume."""

    def __init__(self, inner: HostStream, server: str) -> None:
        self.inner = inner
        self.server = server

    async def write(self, payload: bytes, event_id: str | None) -> None:
        await self.inner.write(_renamed_payload(self.server, payload),
                               _RequestEventId(self.server, event_id).text() if event_id else None)

    async def comment(self) -> None:
        await self.inner.comment()


class MergedStream:
    """The aggregated GET stream: several servers write into one; each event id holds every position."""

    def __init__(self, inner: HostStream, positions: dict[str, str]) -> None:
        self.inner = inner
        self.positions = positions
        self.gone = False
        self._lock = asyncio.Lock()

    def of(self, server: str) -> HostStream:
        return _MergedPart(self, server)

    async def write(self, server: str, payload: bytes, event_id: str | None) -> None:
        async with self._lock:
            if event_id is not None:
                self.positions[server] = event_id
            try:
                await self.inner.write(_renamed_payload(server, payload), _merged_id(self.positions))
            except HostGone:
                self.gone = True
                raise

    async def comment(self) -> None:
        async with self._lock:
            try:
                await self.inner.comment()
            except HostGone:
                self.gone = True
                raise


class _MergedPart(OneByOne):
    def __init__(self, merged: MergedStream, server: str) -> None:
        self.merged = merged
        self.server = server

    async def write(self, payload: bytes, event_id: str | None) -> None:
        await self.merged.write(self.server, payload, event_id)

    async def comment(self) -> None:
        await self.merged.comment()


@dataclass(frozen=True, slots=True)
class _RequestEventId:
    """`<server>~<that server's event id>`: resumes a call's stream on the server that ran it."""

    server: str
    event_id: str

    def text(self) -> str:
        return f"{self.server}~{self.event_id}"

    @classmethod
    def parse(cls, raw: str | None, servers: tuple[str, ...]) -> _RequestEventId | None:
        if not raw or raw.startswith(_MERGED_PREFIX):
            return None
        server, sep, rest = raw.partition("~")
        return cls(server, rest) if sep and server in servers and rest else None


_MERGED_PREFIX = "m~"


def _merged_id(positions: dict[str, str]) -> str:
    return _MERGED_PREFIX + base64.urlsafe_b64encode(orjson.dumps(positions)).decode().rstrip("=")


def _positions(raw: str | None, servers: tuple[str, ...]) -> dict[str, str]:
    if not raw or not raw.startswith(_MERGED_PREFIX) or len(raw) > 16384:
        return {}
    body = raw[len(_MERGED_PREFIX):]
    try:
        positions = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        return {}
    if not isinstance(positions, dict):
        return {}
    return {s: e for s, e in positions.items() if s in servers and isinstance(e, str)}


def _renamed_payload(server: str, payload: bytes) -> bytes:
    if not payload:
        return payload  # a priming event (an id, no data)
    msg = orjson.loads(payload)
    out = namespacing.to_host(server, msg)
    return payload if out is msg else encode(out)


def _instructions(servers: tuple[str, ...]) -> str:
    return ("Tools, prompts and resources of several servers: " + ", ".join(servers) +
            ". Names are <server>__<name>; resource URIs are mcpgw://<server>/<uri>.")


def _error_text(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message[:200] if isinstance(message, str) else "no answer"


def _unavailable(rid: Any, exc: ServerUnavailable) -> dict[str, Any]:
    return jsonrpc_error(rid, INTERNAL_ERROR, f"server {exc.server!r} is unavailable: {exc.reason}")
