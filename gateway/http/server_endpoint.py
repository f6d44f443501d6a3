"""`/servers/{name}/mcp`: the Streamable HTTP edge for one configured server.

Bytes in, events to the sans-IO `HostSession`, its commands carried out here:
POSTs upstream, SSE frames to the host, policy checks through the
`ElicitationGate`. Exceptions become wire errors only through `error_to_wire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from gateway.core.commands import (
    CheckElicitation,
    CheckUrlRequired,
    Command,
    Dropped,
    RouteCompletion,
    ToHost,
    ToUpstream,
)
from gateway.core.host_session import HostSession
from gateway.core.messages import SUPPORTED_VERSIONS, kind_of
from gateway.core.raw_json import encode, parse
from gateway.elicitation_gate import ElicitationGate
from gateway.errors import (
    ANSWER_REJECTED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    POLICY_UNAVAILABLE,
    UPSTREAM_STREAM_LOST,
    HostProtocolError,
    UpstreamFailure,
    UpstreamSessionGone,
    error_to_wire,
    jsonrpc_error,
)
from gateway.http.host_outbox import Emit, HostOutbox
from gateway.http.sse import frame
from gateway.logs import get_logger
from gateway.metrics import GatewayMetrics
from gateway.policy.engine import Decision
from gateway.state.errors import StateUnavailable
from gateway.state.owner import Owner, OwnerKey
from gateway.state.store import StateStore
from gateway.upstream.connector import Upstream

log = get_logger("gateway.http")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
_SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}

_KEEPALIVE_SECONDS = 15.0
_LISTENER_MAX_BACKOFF = 30.0


@dataclass
class SessionRuntime:
    core: HostSession
    user: str
    outbox: HostOutbox
    last_seen: float = field(default_factory=time.monotonic)
    get_stream_open: bool = False
    standalone_supported: bool = True
    listener: asyncio.Task[None] | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class ServerEndpoint:
    def __init__(
        self,
        name: str,
        upstream: Upstream,
        gate: ElicitationGate,
        metrics: GatewayMetrics,
        store: StateStore,
        *,
        max_sessions: int,
        buffer_ttl: float,
        owner_ttl: float,
        completion_grace: float,
    ) -> None:
        self.name = name
        self.upstream = upstream
        self.gate = gate
        self.metrics = metrics
        self.store = store
        self.max_sessions = max_sessions
        self.buffer_ttl = buffer_ttl
        self.owner_ttl = owner_ttl
        self.completion_grace = completion_grace
        self.sessions: dict[str, SessionRuntime] = {}

    # -- HTTP verbs ----------------------------------------------------------

    async def post(self, request: web.Request) -> web.StreamResponse:
        msg = _parse_json(await request.read())
        if isinstance(msg, list):
            return await self._batch(request, msg)
        kind = kind_of(msg)
        if kind == "request" and msg["method"] == "initialize":
            return await self._initialize(msg)
        if kind == "request" and msg["method"] == "server/discover" and SESSION_HEADER not in request.headers:
            # 2026-07-28 discovery is not served yet: an error makes SDK clients fall back to initialize.
            return web.json_response(
                jsonrpc_error(msg["id"], METHOD_NOT_FOUND, "server/discover is not served; use initialize"),
                dumps=_dumps,
            )
        rt = self._session(request)
        commands = rt.core.from_host(msg)
        if kind == "request":
            return await self._answer_request(request, rt, msg, commands)
        await self._run_oneway(rt, commands)
        if kind == "notification" and msg["method"] == "notifications/initialized" and rt.listener is None:
            rt.listener = asyncio.create_task(self._listen(rt))
        return web.Response(status=202)

    async def get(self, request: web.Request) -> web.StreamResponse:
        """Attach the host to the session's standalone stream; buffered messages are replayed first."""
        rt = self._session(request)
        if not rt.standalone_supported:
            return web.Response(status=405, headers={"Allow": "POST, DELETE"})
        if rt.get_stream_open:
            raise HostProtocolError(409, INVALID_REQUEST, "a standalone stream is already open for this session")
        if rt.listener is None:
            rt.listener = asyncio.create_task(self._listen(rt))
        rt.get_stream_open = True
        resp = await self._open_sse(request, rt)

        async def write(payload: bytes, event_id: str | None) -> None:
            await resp.write(frame(payload, event_id))

        try:
            await rt.outbox.attach(write, request.headers.get("Last-Event-ID"))
            while not rt.ended.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(rt.ended.wait(), _KEEPALIVE_SECONDS)
                if not rt.ended.is_set():
                    await resp.write(b": keepalive\n\n")  # finds hosts that left without closing
        except (ConnectionResetError, RuntimeError, StateUnavailable):
            pass
        finally:
            rt.outbox.detach(write)
            rt.get_stream_open = False
        return resp

    async def _listen(self, rt: SessionRuntime) -> None:
        """The gateway's own standalone stream to the upstream for this session, reopened while the session lives.

        Servers may close it at any time (2025-11-25 SSE polling), so it is reopened with a
        backoff that resets whenever a stream carried messages.
        """
        core = rt.core
        failures = 0
        while not rt.ended.is_set():
            delivered = False
            try:
                async with self.upstream.open_stream(
                    session_id=core.upstream_session_id or "", protocol_version=core.upstream_version
                ) as reply:
                    if reply.status == 405:
                        rt.standalone_supported = False
                        return
                    async for upstream_msg in reply.messages:
                        delivered = True
                        for out in await self._from_upstream(rt, upstream_msg, None):
                            await rt.outbox.send(out)
            except UpstreamSessionGone:
                return
            except UpstreamFailure as exc:
                log.info("stream.standalone_lost", server=self.name, session=core.session_id, reason=exc.message)
            failures = 0 if delivered else failures + 1
            await asyncio.sleep(min(_LISTENER_MAX_BACKOFF, 0.5 * 2**failures))

    async def delete(self, request: web.Request) -> web.StreamResponse:
        rt = self._session(request)
        await self.end_session(rt.core.session_id, reason="host_delete")
        return web.Response(status=200)

    # -- sessions ------------------------------------------------------------

    def _session(self, request: web.Request) -> SessionRuntime:
        sid = request.headers.get(SESSION_HEADER)
        if not sid:
            raise HostProtocolError(400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
        rt = self.sessions.get(sid)
        if rt is None:
            raise HostProtocolError(404, INVALID_REQUEST, "Session not found")
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in SUPPORTED_VERSIONS:
            raise HostProtocolError(400, INVALID_REQUEST, f"Unsupported protocol version: {version[:40]}")
        rt.last_seen = time.monotonic()
        return rt

    async def end_session(self, sid: str, *, reason: str) -> None:
        rt = self.sessions.pop(sid, None)
        if rt is None:
            return
        self.metrics.sessions.labels(self.name).set(len(self.sessions))
        log.info("session.ended", server=self.name, session=sid, reason=reason)
        rt.ended.set()
        if rt.listener is not None:
            rt.listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await rt.listener
        await rt.outbox.close()
        if rt.core.upstream_session_id is not None:
            try:
                await self.upstream.end_session(
                    session_id=rt.core.upstream_session_id, protocol_version=rt.core.upstream_version
                )
            except UpstreamFailure as exc:
                log.warning("session.upstream_end_failed", server=self.name, session=sid, reason=exc.message)

    async def expire_idle(self, idle_seconds: float) -> None:
        cutoff = time.monotonic() - idle_seconds
        for sid in [s for s, rt in self.sessions.items() if rt.last_seen < cutoff and not rt.get_stream_open]:
            await self.end_session(sid, reason="idle_timeout")

    async def _initialize(self, msg: dict[str, Any]) -> web.StreamResponse:
        if len(self.sessions) >= self.max_sessions:
            raise HostProtocolError(503, INTERNAL_ERROR, "too many sessions", msg["id"])
        sid = uuid.uuid4().hex
        core = HostSession(self.name, sid, tuple(self.gate.policy.modes))
        # Until host authentication exists, the user identity is the session.
        rt = SessionRuntime(core, user=sid, outbox=HostOutbox(self.name, sid, self.store, self.buffer_ttl))
        started = time.monotonic()
        replies: list[dict[str, Any]] = []
        commands = core.from_host(msg)
        out = next(c.message for c in commands if isinstance(c, ToUpstream))
        try:
            async with self.upstream.post(encode(out), session_id=None, protocol_version=None) as reply:
                core.upstream_session_id = reply.session_id
                async for upstream_msg in reply.messages:
                    replies.extend(await self._from_upstream(rt, upstream_msg, None))
        except UpstreamFailure as exc:
            self._request_log("initialize", sid, started, "upstream_error")
            status, body = error_to_wire(exc, msg["id"])
            return web.json_response(body, status=status, dumps=_dumps)
        answer = next((r for r in replies if r.get("id") == msg["id"]), None)
        if answer is None:
            answer = jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST, f"server {self.name!r} did not answer initialize")
        if "result" not in answer:
            self._request_log("initialize", sid, started, "error")
            return web.json_response(answer, status=200, dumps=_dumps)
        self.sessions[sid] = rt
        self.metrics.sessions.labels(self.name).set(len(self.sessions))
        log.info(
            "session.created", server=self.name, session=sid,
            host_version=core.host_version, upstream_version=core.upstream_version,
            offered_modes=sorted(core.offered),
        )
        self._request_log("initialize", sid, started, "ok")
        return web.json_response(answer, headers={SESSION_HEADER: sid}, dumps=_dumps)

    # -- requests --------------------------------------------------------------

    async def _answer_request(
        self, request: web.Request, rt: SessionRuntime, msg: dict[str, Any], commands: list[Command]
    ) -> web.StreamResponse:
        started = time.monotonic()
        local = [c.message for c in commands if isinstance(c, ToHost)]
        forward = next((c.message for c in commands if isinstance(c, ToUpstream)), None)
        if forward is None:
            self._request_log(msg["method"], rt.core.session_id, started, "local")
            return web.json_response(local[0], dumps=_dumps)
        outcome = "ok"
        try:
            async with self.upstream.post(
                encode(forward), session_id=rt.core.upstream_session_id,
                protocol_version=rt.core.upstream_version,
            ) as reply:
                if not reply.streaming:
                    collected: list[dict[str, Any]] = []
                    async for upstream_msg in reply.messages:
                        collected.extend(await self._from_upstream(rt, upstream_msg, None))
                    collected.extend(self._fail_unanswered(rt, forward["id"], "server gave no answer"))
                    outcome = "error" if any("error" in m for m in collected) else "ok"
                    return web.json_response(collected[0] if len(collected) == 1 else collected, dumps=_dumps)
                resp = await self._open_sse(request, rt)

                async def emit(out: dict[str, Any]) -> None:
                    await resp.write(frame(encode(out)))

                outcome = await self._relay(rt, reply.messages, forward["id"], emit)
                return resp
        except UpstreamSessionGone as exc:
            outcome = "upstream_session_gone"
            await self.end_session(rt.core.session_id, reason="upstream_session_gone")
            status, body = error_to_wire(exc, msg["id"])
            return web.json_response(body, status=status, dumps=_dumps)
        except UpstreamFailure as exc:
            outcome = "upstream_error"
            self._fail_unanswered(rt, forward["id"], exc.message)
            status, body = error_to_wire(exc, msg["id"])
            return web.json_response(body, status=status, dumps=_dumps)
        finally:
            self._request_log(msg["method"], rt.core.session_id, started, outcome)

    async def _relay(self, rt: SessionRuntime, messages: Any, upstream_id: int, emit: Emit) -> str:
        """Relay one upstream SSE stream to the host until it ends, the host leaves, or it breaks."""
        try:
            async for upstream_msg in messages:
                for out in await self._from_upstream(rt, upstream_msg, emit):
                    await emit(out)
        except UpstreamFailure as exc:
            for out in self._fail_unanswered(rt, upstream_id, exc.message):
                await _quietly(emit, out)
            return "upstream_stream_lost"
        except (ConnectionResetError, web.HTTPException):
            return "host_disconnected"
        finally:
            rt.outbox.forget_stream(emit)
        lost = self._fail_unanswered(rt, upstream_id, f"server {self.name!r} closed the stream without answering")
        for out in lost:
            await _quietly(emit, out)
        return "upstream_stream_lost" if lost else "ok"

    def _fail_unanswered(self, rt: SessionRuntime, upstream_id: int, reason: str) -> list[dict[str, Any]]:
        return [
            c.message
            for c in rt.core.upstream_lost([upstream_id], reason, UPSTREAM_STREAM_LOST)
            if isinstance(c, ToHost)
        ]

    async def _batch(self, request: web.Request, batch: list[Any]) -> web.StreamResponse:
        """JSON-RPC batches (2025-03-26 only): one SSE stream carries every answer."""
        rt = self._session(request)
        if not batch:
            raise HostProtocolError(400, INVALID_REQUEST, "empty batch")
        if rt.core.host_version != "2025-03-26":
            raise HostProtocolError(400, INVALID_REQUEST, f"batches are not allowed in {rt.core.host_version}")
        requests = [m for m in batch if kind_of(m) == "request"]
        if not requests:
            for m in batch:
                await self._run_oneway(rt, rt.core.from_host(m))
            return web.Response(status=202)
        resp = await self._open_sse(request, rt)

        async def emit(out: dict[str, Any]) -> None:
            await resp.write(frame(encode(out)))

        for m in batch:
            commands = rt.core.from_host(m)
            if kind_of(m) != "request":
                await self._run_oneway(rt, commands)
                continue
            for c in commands:
                if isinstance(c, ToHost):
                    await emit(c.message)
                elif isinstance(c, ToUpstream):
                    await self._relay_into(rt, c.message, emit)
        return resp

    async def _relay_into(self, rt: SessionRuntime, forward: dict[str, Any], emit: Emit) -> None:
        try:
            async with self.upstream.post(
                encode(forward), session_id=rt.core.upstream_session_id,
                protocol_version=rt.core.upstream_version,
            ) as reply:
                await self._relay(rt, reply.messages, forward["id"], emit)
        except UpstreamFailure as exc:
            for out in self._fail_unanswered(rt, forward["id"], exc.message):
                await emit(out)

    # -- upstream -> host --------------------------------------------------------

    async def _from_upstream(self, rt: SessionRuntime, msg: Any, via: Emit | None) -> list[dict[str, Any]]:
        """Run the core on one upstream message; return what goes to the host on the stream `via`."""
        return await self._execute(rt, rt.core.from_upstream(msg), via)

    async def _execute(self, rt: SessionRuntime, commands: list[Command], via: Emit | None) -> list[dict[str, Any]]:
        to_host: list[dict[str, Any]] = []
        for c in commands:
            if isinstance(c, ToHost):
                to_host.append(c.message)
            elif isinstance(c, ToUpstream):
                await self._post_oneway(rt, c.message)
            elif isinstance(c, CheckElicitation):
                to_host.extend(await self._execute(rt, await self._police(rt, c, via), via))
            elif isinstance(c, CheckUrlRequired):
                to_host.extend(await self._execute(rt, await self._police_url_required(rt, c), via))
            elif isinstance(c, RouteCompletion):
                await self._route_completion(rt, c)
            elif isinstance(c, Dropped):
                self._dropped(rt, c)
        return to_host

    async def _decide(self, rt: SessionRuntime, params: dict[str, Any], offered: bool) -> Decision | None:
        """The gate's decision, with the owner registered for an allowed URL-mode request.

        None when policy or state failed: the caller blocks (fail closed).
        """
        try:
            decision = await self.gate.decide(params, session=rt.core.session_id, user=rt.user, offered=offered)
            if decision.params is not None and params.get("mode") == "url":
                key = self._owner_key(rt, decision.params["elicitationId"])
                await self.store.register_owner(key, Owner(rt.core.session_id, rt.user), self.owner_ttl)
        except Exception as exc:  # fail closed: a policy or state failure never lets the request through
            log.error("elicitation.policy_failed", server=self.name, session=rt.core.session_id,
                      error_type=type(exc).__name__)
            return None
        self.metrics.decisions.labels(self.name, decision.decision).inc()
        for rule in decision.rules:
            self.metrics.rules.labels(self.name, rule).inc()
        return decision

    def _owner_key(self, rt: SessionRuntime, elicitation_id: str) -> OwnerKey:
        # elicitationId is unique only per server session: namespace the bookkeeping, never the id.
        return OwnerKey(self.name, rt.core.upstream_session_id or rt.core.session_id, elicitation_id)

    async def _police(self, rt: SessionRuntime, check: CheckElicitation, via: Emit | None) -> list[Command]:
        decision = await self._decide(rt, check.message["params"], check.offered)
        if decision is None:
            return rt.core.refuse_server_request(
                check.message, POLICY_UNAVAILABLE, "elicitation policy failed; blocked"
            )
        if decision.params is None:
            return rt.core.refuse_server_request(
                check.message, decision.error_code,
                _refusal_message(decision.rules[-1], decision.reason),
                decision.error_data,
            )
        if check.mode == "url" and via is not None:
            rt.outbox.request_streams[decision.params["elicitationId"]] = via
        return rt.core.deliver_elicitation(check.message, decision.params)

    async def _police_url_required(self, rt: SessionRuntime, check: CheckUrlRequired) -> list[Command]:
        """-32042: every listed URL elicitation passes the same policy; owners are registered for the kept ones."""
        kept: list[dict[str, Any]] = []
        for entry in check.entries:
            if not isinstance(entry, dict):
                continue
            decision = await self._decide(rt, {"mode": "url", **entry}, "url" in rt.core.offered)
            if decision is not None and decision.params is not None:
                kept.append(decision.params)
        return rt.core.url_required_outcome(check.message, kept, len(check.entries) - len(kept))

    async def _route_completion(self, rt: SessionRuntime, c: RouteCompletion) -> None:
        """Only the session (and user) that received this elicitation gets its completion, once."""
        try:
            owner = await self.store.complete(self._owner_key(rt, c.elicitation_id), self.completion_grace)
        except StateUnavailable:
            owner, reason = None, "state unavailable"
        else:
            reason = "unknown, forged or already completed elicitationId"
        if owner is None or owner.host_session != rt.core.session_id or owner.user != rt.user:
            self._dropped(rt, Dropped("elicitation.complete_dropped", reason, {"elicitation_id": c.elicitation_id}))
            return
        route = await rt.outbox.send_completion(c.elicitation_id, c.message)
        log.info("elicitation.completed", server=self.name, session=rt.core.session_id,
                 elicitation_id=c.elicitation_id, route=route)

    async def _run_oneway(self, rt: SessionRuntime, commands: list[Command]) -> None:
        for c in commands:
            if isinstance(c, ToUpstream) and c.answer_schema is not None:
                answer, error = self.gate.check_answer(c.message, c.answer_schema, session=rt.core.session_id)
                await self._post_oneway(rt, answer)  # the server learns the answer was refused, and why
                if error is not None:
                    raise HostProtocolError(400, ANSWER_REJECTED, error)
            elif isinstance(c, ToUpstream):
                await self._post_oneway(rt, c.message)
            elif isinstance(c, Dropped):
                self._dropped(rt, c)
                raise HostProtocolError(400, INVALID_REQUEST, c.reason)
            elif isinstance(c, ToHost):
                raise HostProtocolError(400, c.message["error"]["code"], c.message["error"]["message"])

    async def _post_oneway(self, rt: SessionRuntime, message: dict[str, Any]) -> None:
        """Notifications and responses upstream: the upstream answers 202 and no body."""
        try:
            async with self.upstream.post(
                encode(message), session_id=rt.core.upstream_session_id,
                protocol_version=rt.core.upstream_version,
            ) as reply:
                async for _ in reply.messages:
                    pass
        except UpstreamFailure as exc:
            log.warning("upstream.post_failed", server=self.name, session=rt.core.session_id, reason=exc.message)

    # -- helpers -------------------------------------------------------------------

    async def _open_sse(self, request: web.Request, rt: SessionRuntime) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={**_SSE_HEADERS, SESSION_HEADER: rt.core.session_id})
        await resp.prepare(request)
        return resp

    def _dropped(self, rt: SessionRuntime, c: Dropped) -> None:
        self.metrics.dropped.labels(self.name, c.event).inc()
        log.warning(c.event, server=self.name, session=rt.core.session_id, reason=c.reason, **c.fields)

    def _request_log(self, method: str, session: str, started: float, outcome: str) -> None:
        elapsed = time.monotonic() - started
        self.metrics.requests.labels(self.name, method, outcome).inc()
        self.metrics.request_seconds.labels(self.name).observe(elapsed)
        log.info("request", server=self.name, session=session, method=method,
                 duration_ms=round(elapsed * 1000, 2), outcome=outcome)


def _refusal_message(rule: str, reason: str) -> str:
    if rule == "mode.not_offered":
        return reason  # a protocol error (-32602), not a policy block
    return f"elicitation blocked by gateway policy (rule {rule}): {reason}"


def _parse_json(body: bytes) -> Any:
    try:
        return parse(body)
    except orjson.JSONDecodeError:
        raise HostProtocolError(400, PARSE_ERROR, "Parse error: body is not valid JSON") from None


def _dumps(obj: Any) -> str:
    return encode(obj).decode()


async def _quietly(emit: Emit, out: dict[str, Any]) -> None:
    try:
        await emit(out)
    except (ConnectionResetError, web.HTTPException):
        pass
