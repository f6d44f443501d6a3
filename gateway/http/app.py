"""The aiohttp application: routes, Origin check, body limit, the one exception boundary."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from gateway.config import LoadedConfig
from gateway.elicitation_gate import ElicitationGate
from gateway.errors import INVALID_REQUEST, HostProtocolError, error_to_wire
from gateway.http.server_endpoint import ServerEndpoint, _dumps
from gateway.logs import get_logger
from gateway.metrics import GatewayMetrics
from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateLimiter
from gateway.state.store import StateStore, open_state_store
from gateway.upstream.connector import Upstream
from gateway.upstream.stdio import StdioUpstream
from gateway.upstream.streamable_http import StreamableHttpUpstream

log = get_logger("gateway.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}

CONFIG_KEY = web.AppKey("config", LoadedConfig)
ENDPOINTS_KEY = web.AppKey("endpoints", dict[str, ServerEndpoint])
STATE_KEY = web.AppKey("state", StateStore)
METRICS_KEY = web.AppKey("metrics", GatewayMetrics)


def _origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """DNS-rebinding guard: no Origin (non-browser host), a loopback origin, or a configured one."""
    if origin is None:
        return True
    if origin in allowed:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return host in _LOOPBACK


@web.middleware
async def _error_boundary(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except HostProtocolError as exc:
        status, body = error_to_wire(exc)
        log.info("host.rejected", path=request.path, status=status, reason=exc.message)
        return web.json_response(body, status=status, dumps=_dumps)
    except Exception as exc:
        log.exception("gateway.error", path=request.path, error_type=type(exc).__name__)
        status, body = error_to_wire(exc)
        return web.json_response(body, status=status, dumps=_dumps)


def build_upstream(name: str, cfg: LoadedConfig) -> Upstream:
    server = cfg.gateway.servers[name]
    if server.url is not None:
        return StreamableHttpUpstream(
            name, server.url, server.headers,
            connect_timeout=server.connect_timeout_seconds, request_timeout=server.request_timeout_seconds,
        )
    assert server.command is not None
    return StdioUpstream(name, server.command, server.args, server.env, server.cwd)


def create_app(cfg: LoadedConfig) -> web.Application:
    gw = cfg.gateway
    app = web.Application(client_max_size=gw.listen.max_body_bytes, middlewares=[_error_boundary])
    metrics = GatewayMetrics()
    app[CONFIG_KEY] = cfg
    app[METRICS_KEY] = metrics
    state = open_state_store(gw.state.url, gw.state.backend, gw.state.key_prefix)
    app[STATE_KEY] = state
    limiter = RateLimiter(
        gw.state.url if gw.state.backend == "redis" and gw.state.url else "memory://",
        key_prefix=f"{gw.state.key_prefix}rl",
    )
    endpoints = {
        name: ServerEndpoint(
            name,
            build_upstream(name, cfg),
            ElicitationGate(name, cfg.policies[name].elicitation, limiter),
            metrics,
            state,
            max_sessions=gw.sessions.max_sessions,
            buffer_ttl=gw.sessions.buffer_ttl_seconds,
            owner_ttl=gw.sessions.elicitation_owner_ttl_seconds,
            completion_grace=gw.sessions.completion_grace_seconds,
        )
        for name in gw.servers
    }
    app[ENDPOINTS_KEY] = endpoints
    allowed_origins = gw.listen.allowed_origins

    def endpoint_for(request: web.Request) -> ServerEndpoint:
        origin = request.headers.get("Origin")
        if not _origin_allowed(origin, allowed_origins):
            raise HostProtocolError(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        endpoint = endpoints.get(request.match_info["name"])
        if endpoint is None:
            raise HostProtocolError(404, INVALID_REQUEST, "no such server")
        return endpoint

    async def post(request: web.Request) -> web.StreamResponse:
        endpoint = endpoint_for(request)
        if request.content_type != "application/json":
            raise HostProtocolError(415, INVALID_REQUEST, "Content-Type must be application/json")
        return await endpoint.post(request)

    async def get(request: web.Request) -> web.StreamResponse:
        endpoint = endpoint_for(request)
        if "text/event-stream" not in request.headers.get("Accept", ""):
            raise HostProtocolError(406, INVALID_REQUEST, "Not Acceptable: GET needs Accept: text/event-stream")
        return await endpoint.get(request)

    async def delete(request: web.Request) -> web.StreamResponse:
        return await endpoint_for(request).delete(request)

    async def healthz(_: web.Request) -> web.StreamResponse:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.StreamResponse:
        try:
            await state.ping()
            await limiter.check_ready()
        except StateUnavailable:
            return web.json_response({"status": "unavailable", "state": gw.state.backend}, status=503)
        return web.json_response({"status": "ready", "servers": sorted(endpoints), "state": gw.state.backend})

    async def metrics_view(_: web.Request) -> web.StreamResponse:
        return web.Response(body=metrics.render(), content_type="text/plain", charset="utf-8")

    app.router.add_post("/servers/{name}/mcp", post)
    app.router.add_get("/servers/{name}/mcp", get)
    app.router.add_delete("/servers/{name}/mcp", delete)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_view)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        for endpoint in endpoints.values():
            await endpoint.upstream.start()
        sweeper = asyncio.create_task(_sweep(endpoints, gw.sessions.idle_timeout_seconds))
        yield
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        for endpoint in endpoints.values():
            for sid in list(endpoint.sessions):
                await endpoint.end_session(sid, reason="shutdown")
            await endpoint.upstream.close()
        await limiter.close()
        await state.close()

    app.cleanup_ctx.append(lifecycle)
    return app


async def _sweep(endpoints: dict[str, ServerEndpoint], idle_seconds: float) -> None:
    while True:
        await asyncio.sleep(min(60.0, idle_seconds / 2))
        for endpoint in endpoints.values():
            await endpoint.expire_idle(idle_seconds)
