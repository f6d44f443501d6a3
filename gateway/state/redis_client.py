"""One place that builds redis.asyncio clients with gateway-friendly timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import RedisError

from gateway.state.errors import StateUnavailable

DEFAULT_SOCKET_TIMEOUT_S = 1.0


def connect_redis(url: str, *, socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> Redis:
    """A client with its own connection pool; connections are opened lazily.

    redis-py defaults to 10 retries with up to 1 s backoff: seconds of stall on
    every request while Redis is down. The gateway fails closed instead, so it
    retries once (enough to replace a connection Redis closed while idle) and
    bounds every socket operation.
    """
    return Redis.from_url(
        url,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
        retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), retries=1),
        health_check_interval=30,
    )


@contextmanager
def unavailable_on_redis_error(operation: str) -> Iterator[None]:
    """Turn any Redis failure into StateUnavailable.

    Not only connection errors: READONLY after a failover, OOM or auth errors
    also mean the backend cannot serve us, and callers fail closed on all.
    """
    try:
        yield
    except (RedisError, OSError) as exc:  # builtin TimeoutError is an OSError
        raise StateUnavailable(f"state backend unavailable during {operation}: {type(exc).__name__}") from exc
