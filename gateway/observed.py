"""Metrics and spans around the upstream connectors, the state store and the rate limiter.

Wrappers with the same interface as what they wrap, so the session driver needs
no knowledge of metrics for health, reconnects, state latency and errors.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

from gateway import tracing
from gateway.errors import UpstreamFailure
from gateway.metrics import GatewayMetrics
from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateLimiter, RateVerdict
from gateway.state.store import StateStore
from gateway.upstream.connector import Upstream, UpstreamReply


@dataclass
class UpstreamHealth:
    """What this replica last saw of one upstream server (for /admin and mcpgw_upstream_up)."""

    up: bool | None = None
    """None until the first exchange."""
    last_ok: float | None = None
    last_error: float | None = None
    last_error_reason: str | None = None
    errors: int = 0
    reconnects: int = 0


class ObservedUpstream:
    """An `Upstream` that reports health, errors and reconnects, and opens the `mcpgw.upstream` span."""

    def __init__(self, inner: Upstream, metrics: GatewayMetrics) -> None:
        self.inner = inner
        self.name = inner.name
        self.metrics = metrics
        self.health = UpstreamHealth()
        self._up = metrics.upstream_up.labels(self.name)  # set on every upstream request: bound once

    async def start(self) -> None:
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()

    def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> AbstractAsyncContextManager[UpstreamReply]:
        return self._observe("post", self.inner.post(
            body, session_id=session_id, protocol_version=protocol_version, headers=headers))

    def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AbstractAsyncContextManager[UpstreamReply]:
        if last_event_id is not None:
            self._reconnected()
        return self._observe("stream", self.inner.open_stream(
            session_id=session_id, protocol_version=protocol_version, last_event_id=last_event_id))

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        try:
            await self.inner.end_session(session_id=session_id, protocol_version=protocol_version)
        except UpstreamFailure as exc:
            self._failed("delete", exc)
            raise
        self._ok()

    def _observe(self, op: str, inner: AbstractAsyncContextManager[UpstreamReply]) -> _Observed:
        return _Observed(self, op, inner)

    def _ok(self) -> None:
        self.health.up, self.health.last_ok = True, time.time()
        self._up.set(1)

    def _failed(self, op: str, exc: UpstreamFailure) -> None:
        self.health.up, self.health.last_error = False, time.time()
        self.health.last_error_reason = exc.message
        self.health.errors += 1
        self._up.set(0)
        self.metrics.upstream_errors.labels(self.name, op).inc()

    def _reconnected(self) -> None:
        self.health.reconnects += 1
        self.metrics.upstream_reconnects.labels(self.name).inc()


# The `op` label: one of the store's operations (a fixed set), or "rate_limit".
STATE_OPS = frozenset(n for n in dir(StateStore) if not n.startswith("_")) | {"rate_limit"}


class _Observed:
    """One upstream exchange inside the `mcpgw.upstream` span: health kept, failures counted (a class, not
    `@asynccontextmanager`: every host call enters one, and a generator-based manager costs four times as much)."""

    __slots__ = ("_inner", "_op", "_owner", "_reply", "_span")

    def __init__(self, owner: ObservedUpstream, op: str, inner: AbstractAsyncContextManager[UpstreamReply]) -> None:
        self._owner, self._op, self._inner = owner, op, inner
        self._reply: UpstreamReply | None = None

    async def __aenter__(self) -> UpstreamReply:
        self._span = tracing.span("mcpgw.upstream", server=self._owner.name, op=self._op)
        self._span.__enter__()
        try:
            reply = self._reply = await self._inner.__aenter__()
        except BaseException as exc:
            if isinstance(exc, UpstreamFailure):
                self._owner._failed(self._op, exc)
            self._span.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._owner._ok()
        tracing.annotate(status=reply.status, streaming=reply.streaming)
        return reply

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        failure = exc if isinstance(exc, UpstreamFailure) else None
        suppressed = False
        try:
            suppressed = bool(await self._inner.__aexit__(kind, exc, tb))
        except BaseException as raised:
            failure = raised if isinstance(raised, UpstreamFailure) else None
            kind, exc, tb = type(raised), raised, raised.__traceback__
            raise
        finally:
            assert self._reply is not None
            for _ in range(self._reply.resumed):
                self._owner._reconnected()
            if failure is not None and not suppressed:
                self._owner._failed(f"{self._op}_stream", failure)
            self._span.__exit__(*((None, None, None) if suppressed else (kind, exc, tb)))
        return suppressed


def state_op_label(op: str) -> str:
    return op if op in STATE_OPS else "other"


def observe_state(store: StateStore, metrics: GatewayMetrics) -> StateStore:
    """The store with every coroutine method timed (`mcpgw_state_operation_seconds`) and its failures counted."""
    return cast(StateStore, _ObservedStore(store, metrics))


class _ObservedStore:
    def __init__(self, inner: StateStore, metrics: GatewayMetrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr) or name in ("subscribe", "close") or name.startswith("_"):
            return attr
        import inspect

        if not inspect.iscoroutinefunction(attr):
            return attr
        wrapped = _timed(attr, state_op_label(name), self._metrics)
        self.__dict__[name] = wrapped  # later lookups skip __getattr__
        return wrapped


def _timed(call: Callable[..., Awaitable[Any]], op: str, metrics: GatewayMetrics) -> Callable[..., Awaitable[Any]]:
    seconds = metrics.state_seconds.labels(op)
    errors = metrics.state_errors.labels(op)

    @functools.wraps(call)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await call(*args, **kwargs)
        except StateUnavailable:
            errors.inc()
            raise
        finally:
            seconds.observe(time.perf_counter() - started)

    return timed


class ObservedRateLimiter:
    """A `RateLimiter` that counts hits (refusals) by server and scope, and times checks as state operations."""

    def __init__(self, inner: RateLimiter, metrics: GatewayMetrics) -> None:
        self._inner = inner
        self._metrics = metrics
        self._hit = _timed(inner.hit, "rate_limit", metrics)

    async def hit(self, spec: str, *key: str) -> RateVerdict:
        verdict: RateVerdict = await self._hit(spec, *key)
        if not verdict.allowed and len(key) >= 2:
            scope = "user" if key[0] == "user" else "server"
            self._metrics.rate_limited.labels(key[1], scope).inc()
        return verdict

    async def check_ready(self) -> None:
        await self._inner.check_ready()

    async def close(self) -> None:
        await self._inner.close()
