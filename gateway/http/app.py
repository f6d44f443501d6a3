"""The aiohttp application: routes, Host/Origin checks, authentication, body limits, the one exception boundary."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Literal

from aiohttp import web

from gateway import tracing
from gateway.admin_feed import DecisionFeed
from gateway.config import LoadedConfig, ServerConfig
from gateway.core.raw_json import encode
from gateway.driver.aggregate import AggregateDriver, AggregateSettings
from gateway.driver.contracts import DriverSettings
from gateway.driver.session_driver import SessionDriver
from gateway.elicitation_gate import ElicitationGate
from gateway.errors import INVALID_REQUEST, POLICY_UNAVAILABLE, HostProtocolError, error_to_wire, jsonrpc_error
from gateway.http.admin import AdminSources, ServerStatus, add_admin_routes, count_or_none, transport_summary
from gateway.http.auth import ADMIN_GUARD_KEY, IDENTITY_KEY, AdminGuard, Authenticator, AuthFailed, admin_guard
from gateway.http.endpoint import SESSION_HEADER, ServerEndpoint
from gateway.http.guards import UserSessions, boundary_middleware, read_body
from gateway.http.servers import LiveServers
from gateway.identity import Identity
from gateway.logs import get_logger
from gateway.metrics import GatewayMetrics
from gateway.observed import ObservedRateLimiter, ObservedUpstream, UpstreamHealth, observe_state
from gateway.policy.policy_config import ElicitationPolicy
from gateway.reload import PolicyReloader
from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateLimiter
from gateway.state.store import StateStore, open_state_store
from gateway.upstream.factory import upstream_from_config

log = get_logger("gateway.http")
_UNKNOWN = UpstreamHealth()

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CONFIG_KEY = web.AppKey("config", LoadedConfig)
ENDPOINTS_KEY = web.AppKey("endpoints", dict[str, ServerEndpoint])
REPLICA_KEY = web.AppKey("replica", str)
_HEARTBEAT_SECONDS = 3.0
_REPLICA_TTL_SECONDS = 10.0
STATE_KEY = web.AppKey("state", StateStore)
METRICS_KEY = web.AppKey("metrics", GatewayMetrics)
RELOADER_KEY = web.AppKey("reloader", PolicyReloader)
FEED_KEY = web.AppKey("decision_feed", DecisionFeed)


@web.middleware
async def _error_boundary(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except AuthFailed as exc:
        log.warning("auth.refused", path=request.path, status=exc.status, reason=exc.reason)
        headers = {"WWW-Authenticate": 'Bearer realm="elicitation-gateway"'} if exc.status == 401 else None
        return web.Response(body=encode(jsonrpc_error(None, INVALID_REQUEST, exc.message)), status=exc.status,
                            content_type="application/json", headers=headers)
    except HostProtocolError as exc:
        status, body = error_to_wire(exc)
        log.info("host.rejected", path=request.path, status=status, reason=exc.message)
        resp = web.Response(body=encode(body), status=status, content_type="application/json")
        if status == 408:  # the rest of a late body must never be read as a next request
            resp.force_close()
        return resp
    except StateUnavailable:
        log.error("state.unavailable", path=request.path)
        return web.Response(
            body=encode(jsonrpc_error(None, POLICY_UNAVAILABLE, "gateway state unavailable")),
            status=503, content_type="application/json",
        )
    except Exception as exc:
        log.exception("gateway.error", path=request.path, error_type=type(exc).__name__)
        status, body = error_to_wire(exc)
        return web.Response(body=encode(body), status=status, content_type="application/json")


def _protocol(server: ServerConfig) -> Literal["auto", "legacy", "2026-07-28"]:
    # A stdio child speaks one era per process: probing it would start children for nothing;
    # a legacy HTTP+SSE server (2024-11-05) speaks the handshake era only.
    if (server.command is not None or server.transport == "sse") and server.protocol == "auto":
        return "legacy"
    return server.protocol


def create_app(cfg: LoadedConfig) -> web.Application:
    gw = cfg.gateway
    app = web.Application(
        client_max_size=gw.listen.max_body_bytes, middlewares=[_error_boundary, boundary_middleware(gw.listen)]
    )
    auth = Authenticator(gw.auth, cfg.path.parent)
    app[ADMIN_GUARD_KEY] = AdminGuard(gw.admin)
    metrics = GatewayMetrics()
    app[CONFIG_KEY] = cfg
    app[METRICS_KEY] = metrics
    state = observe_state(open_state_store(gw.state.url, gw.state.backend, gw.state.key_prefix), metrics)
    app[STATE_KEY] = state
    round_trips = getattr(state, "round_trips", None)
    if round_trips is not None:
        metrics.watch_state_round_trips(round_trips)
    limiter = ObservedRateLimiter(RateLimiter(
        gw.state.url if gw.state.backend == "redis" and gw.state.url else "memory://",
        key_prefix=f"{gw.state.key_prefix}rl",
    ), metrics)
    feed = app[FEED_KEY] = DecisionFeed(gw.admin.recent_decisions, state if gw.admin.enabled else None)

    def make_gate(name: str, policy: ElicitationPolicy) -> ElicitationGate:
        return ElicitationGate(name, policy, limiter, feed.record)

    replica = uuid.uuid4().hex[:12]
    app[REPLICA_KEY] = replica
    sweep_every = min(60.0, gw.sessions.idle_timeout_seconds / 2)
    settings = DriverSettings(
        # The record outlives the idle timeout by two sweeps, so the sweeper still finds
        # the upstream session to end.
        session_ttl=gw.sessions.idle_timeout_seconds + 2 * sweep_every,
        buffer_ttl=gw.sessions.buffer_ttl_seconds,
        owner_ttl=gw.sessions.elicitation_owner_ttl_seconds,
        completion_grace=gw.sessions.completion_grace_seconds,
        max_sessions=gw.sessions.max_sessions,
        max_pending=gw.sessions.max_pending_server_requests,
        max_notifications_per_second=gw.sessions.max_notifications_per_second,
        resume_grace=gw.sessions.resume_grace_seconds,
        keepalive=gw.sessions.keepalive_seconds,
        elicitation_timeout=gw.sessions.elicitation_timeout_seconds,
        request_lines=gw.logging.request_lines,
    )

    def build(name: str, server: ServerConfig, policy: ElicitationPolicy, generation: str) -> SessionDriver:
        return SessionDriver(
            name, ObservedUpstream(upstream_from_config(name, server, cfg.path.parent), metrics),
            make_gate(name, policy), state, metrics,
            dataclasses.replace(settings, protocol=_protocol(server), generation=generation,
                                request_timeout=server.request_timeout_seconds),
            replica,
        )

    servers = LiveServers(build)
    for name, server in gw.servers.items():
        servers.put(name, server, cfg.policies[name].elicitation)
    drivers, endpoints = servers.drivers, servers.endpoints  # changed in place by live reloads
    app[ENDPOINTS_KEY] = endpoints
    aggregate = AggregateDriver(drivers, state, AggregateSettings(
        list_timeout=gw.aggregate.list_timeout_seconds, discover_every=gw.aggregate.discover_seconds,
        session_ttl=settings.session_ttl,
    )) if gw.aggregate.enabled else None
    per_user = UserSessions(state, gw.sessions.max_sessions_per_user)
    reloader = app[RELOADER_KEY] = PolicyReloader(cfg, servers, make_gate, metrics)
    metrics.watch_live(lambda: {
        n: (len(d.live), sum(lv.awaiting_completions for lv in d.live.values()))
        for n, d in drivers.items()
    })

    async def endpoint_for(request: web.Request) -> tuple[ServerEndpoint, Identity]:
        """The server's endpoint for an authenticated host allowed to use it (401, 403, 404 otherwise);
        on /mcp, every server this host may use."""
        identity = await auth.identify(request)
        request[IDENTITY_KEY] = identity
        name = request.match_info.get("name")
        if name is None:
            if aggregate is None:
                raise HostProtocolError(404, INVALID_REQUEST, "the aggregated endpoint /mcp is not enabled")
            return ServerEndpoint(aggregate.bind(tuple(n for n in endpoints if auth.may_use(identity, n)))), identity
        endpoint = endpoints.get(name)
        if endpoint is None:
            raise HostProtocolError(404, INVALID_REQUEST, "no such server")
        if not auth.may_use(identity, name):
            log.warning("auth.server_denied", server=name, user=identity.user)
            raise HostProtocolError(403, INVALID_REQUEST, "Forbidden: this server is not allowed for this user")
        return endpoint, identity

    async def post(request: web.Request) -> web.StreamResponse:
        endpoint, identity = await endpoint_for(request)
        if request.content_type != "application/json":
            raise HostProtocolError(415, INVALID_REQUEST, "Content-Type must be application/json")
        msg = await read_body(request, gw.listen)
        server = request.match_info.get("name", "*")
        with tracing.span("mcpgw.host_request", parent_headers=request.headers, server=server):
            if not identity.authenticated:
                return await endpoint.post(request)
            initialize = isinstance(msg, dict) and msg.get("method") == "initialize"
            if not initialize or SESSION_HEADER in request.headers:
                return await endpoint.post(request, identity.user)
            await per_user.admit(identity.user)
            created: str | None = None
            try:
                resp = await endpoint.post(request, identity.user)
                created = resp.headers.get(SESSION_HEADER)
                return resp
            finally:
                per_user.settle(identity.user, created)

    async def get(request: web.Request) -> web.StreamResponse:
        endpoint, _ = await endpoint_for(request)
        if "text/event-stream" not in request.headers.get("Accept", ""):
            raise HostProtocolError(406, INVALID_REQUEST, "Not Acceptable: GET needs Accept: text/event-stream")
        return await endpoint.get(request)

    async def delete(request: web.Request) -> web.StreamResponse:
        endpoint, _ = await endpoint_for(request)
        return await endpoint.delete(request)

    async def healthz(_: web.Request) -> web.StreamResponse:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.StreamResponse:
        try:
            await state.ping()
            await limiter.check_ready()
        except StateUnavailable:
            return web.json_response({"status": "unavailable", "state": gw.state.backend}, status=503)
        return web.json_response({"status": "ready", "servers": sorted(endpoints), "state": gw.state.backend,
                                  "upstreams": {n: _health(d) for n, d in sorted(drivers.items())}})

    async def metrics_view(request: web.Request) -> web.StreamResponse:
        await admin_guard(request)
        with contextlib.suppress(StateUnavailable):
            metrics.sessions.set(await state.count_sessions())
            pending = await state.pending_counts()
            for name in drivers:
                metrics.elicitations_pending.labels(name).set(pending.get(name, 0))
        return web.Response(body=metrics.render(), content_type="text/plain", charset="utf-8")

    app.router.add_post("/servers/{name}/mcp", post)
    app.router.add_get("/servers/{name}/mcp", get)
    app.router.add_delete("/servers/{name}/mcp", delete)
    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", get)
    app.router.add_delete("/mcp", delete)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_view)
    if gw.admin.enabled:
        add_admin_routes(app, AdminSources(
            feed=feed,
            servers=lambda: _server_statuses(reloader, drivers),
            stored_sessions=lambda: count_or_none(state.count_sessions), replica=replica,
        ))

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        await servers.start()
        reloader.start()
        feed.start()
        background = [
            asyncio.create_task(_sweep(state, drivers, gw.sessions.idle_timeout_seconds, sweep_every)),
            asyncio.create_task(_heartbeat(state, replica)),
        ]
        yield
        await reloader.stop()
        await feed.stop()
        for task in background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await servers.close()
        if gw.state.backend == "memory":  # sessions die with this process: end them upstream too
            with contextlib.suppress(StateUnavailable):
                await _end_idle(state, drivers, 0.0, "shutdown", limit=gw.sessions.max_sessions * len(drivers))
        for driver in drivers.values():
            await driver.upstream.close()
        await limiter.close()
        await state.close()

    app.cleanup_ctx.append(lifecycle)
    return app


def _health(driver: SessionDriver) -> dict[str, object]:
    """What this replica last saw of a server (readiness does not depend on it: a server that is down
    never makes the gateway unready, it is left out of /mcp lists and reported here)."""
    upstream = driver.upstream
    health = upstream.health if isinstance(upstream, ObservedUpstream) else _UNKNOWN
    return {"up": health.up, "last_error": health.last_error_reason if health.up is False else None}


def _server_statuses(reloader: PolicyReloader, drivers: dict[str, SessionDriver]) -> list[ServerStatus]:
    out = []
    for name, driver in sorted(drivers.items()):
        server = reloader.current.gateway.servers[name]
        path = reloader.policy_paths.get(name)
        upstream = driver.upstream
        health = upstream.health if isinstance(upstream, ObservedUpstream) else None
        out.append(ServerStatus(
            name=name, transport=transport_summary(server.url, server.command),
            policy=path.name if path is not None else "default policy",
            health=health if health is not None else _UNKNOWN,
            active_sessions=len(driver.live),
            pending_url=sum(lv.awaiting_completions for lv in driver.live.values()),
        ))
    return out


async def _end_idle(
    state: StateStore, drivers: Mapping[str, SessionDriver], idle_seconds: float, reason: str, limit: int = 100
) -> None:
    for sid, raw in await state.take_idle(idle_seconds, limit):
        driver = drivers.get(raw.get("s", ""))
        # A session of a server since removed or re-pointed: its upstream is not the current one.
        if driver is not None and raw.get("g", driver.settings.generation) == driver.settings.generation:
            await driver.expired(sid, raw, reason)


async def _sweep(state: StateStore, drivers: Mapping[str, SessionDriver], idle_seconds: float, every: float) -> None:
    """Sessions idle on every replica are claimed (by exactly one replica) and ended upstream."""
    while True:
        await asyncio.sleep(every)
        try:
            await _end_idle(state, drivers, idle_seconds, "idle_timeout")
        except StateUnavailable:
            log.warning("sessions.sweep_failed")


async def _heartbeat(state: StateStore, replica: str) -> None:
    """Tells other replicas this one is alive, so they can fail its dropped streams cleanly."""
    while True:
        with contextlib.suppress(StateUnavailable):
            await state.beat(replica, _REPLICA_TTL_SECONDS)
        await asyncio.sleep(_HEARTBEAT_SECONDS)
