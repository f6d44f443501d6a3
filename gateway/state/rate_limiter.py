"""Rate limits on elicitation attempts, backed by the `limits` library.

Strategy: fixed window (`limits` FixedWindowRateLimiter). Chosen because
- every attempt must count, allowed or not (contract: a server probing with
  blocked requests is throttled too). A fixed window is one atomic INCR per
  window per attempt, so a refused attempt still counts in every window; the
  moving window only records attempts it accepts.
- it is O(1) memory per key and one round trip per window on Redis.
- the reset time is exact (the window key's TTL), so retry_after is exact.
Trade-off: a burst straddling a window boundary can reach twice the limit
within one window length. Pair a short window with a long one
("5/second;100/hour") where that matters.

Storages: "memory://" (per process) or "redis://host:port/db" (shared by
replicas; keys "<key_prefix>:LIMITER/<key parts>/<amount>/<multiples>/<unit>").
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote, urlsplit

from limits import RateLimitItem, parse_many
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.aio.storage.redis.redispy import RedispyBridge
from limits.aio.strategies import FixedWindowRateLimiter
from limits.errors import StorageError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.state.errors import StateUnavailable
from gateway.state.redis_client import DEFAULT_SOCKET_TIMEOUT_S, connect_redis, unavailable_on_redis_error
from gateway.state.redis_lean import LeanScripts

_EXAMPLE = "expected limits notation such as '10/minute' or '5/second;100/hour'"
_STORAGE_ERRORS = (RedisError, OSError, StorageError)


@dataclass(frozen=True, slots=True)
class RateVerdict:
    allowed: bool
    limit: str | None  # the exceeded limit, e.g. "5 per 1 second"; None when allowed
    retry_after_seconds: float  # 0 when allowed; else seconds until a hit is allowed again


_ALLOWED = RateVerdict(allowed=True, limit=None, retry_after_seconds=0.0)


def validate_rate_spec(spec: str) -> None:
    """Raise ValueError with a readable message for bad notation (config loading)."""
    _parse(spec)


@functools.lru_cache(maxsize=256)
def _parse(spec: str) -> tuple[RateLimitItem, ...]:
    if not spec.strip():
        raise ValueError(f"empty rate limit; {_EXAMPLE}")
    try:
        items = tuple(parse_many(spec))
    except ValueError as exc:
        raise ValueError(f"invalid rate limit {spec!r} ({exc}); {_EXAMPLE}") from None
    for item in items:
        if item.amount < 1:
            raise ValueError(
                f"invalid rate limit {spec!r}: {item} allows nothing; "
                "to forbid elicitation use `modes: []` instead"
            )
    return items


def _round_up_ms(seconds: float) -> float:
    return math.ceil(seconds * 1000) / 1000


class RateLimiter:
    def __init__(
        self,
        storage_uri: str,
        *,
        key_prefix: str = "mcpgw:rl",
        socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
    ) -> None:
        scheme = urlsplit(storage_uri).scheme.removeprefix("async+")
        self._redis: Redis | None = None
        self._lean: LeanScripts | None = None
        self._storage: MemoryStorage | RedisStorage
        if scheme == "memory":
            self._storage = MemoryStorage()
        elif scheme in ("redis", "rediss"):
            plain_uri = storage_uri.removeprefix("async+")
            # Our own client (short timeouts, one retry) lends its pool to limits,
            # so close() knows what to release and PTTL can read exact resets.
            self._redis = connect_redis(plain_uri, socket_timeout_s=socket_timeout_s)
            options: dict[str, Any] = {"connection_pool": self._redis.connection_pool}
            self._storage = RedisStorage(
                f"async+{plain_uri}", implementation="redispy", key_prefix=key_prefix, **options
            )
            # A hit runs limits' own script on its own key over a pipelined connection of the limiter's own
            # (redis_lean.py: about a tenth of redis-py's CPU per script, docs/performance.md); one hit per
            # elicitation and window. None unless plain TCP: then limits' client does it.
            self._lean = LeanScripts.for_client(self._redis)
        else:
            raise ValueError(f"unsupported rate-limit storage {storage_uri!r}; use memory:// or redis://")
        self._limiter = FixedWindowRateLimiter(self._storage)

    async def hit(self, spec: str, *key: str) -> RateVerdict:
        """Count one attempt against every window of `spec` for `key`.

        Raises StateUnavailable when the storage fails (callers fail closed) and
        ValueError for bad notation (configs are validated on load).
        """
        items = _parse(spec)
        # Encoded so a '/' inside a part cannot alias another key (limits joins with '/').
        parts = [quote(p, safe="") for p in key]
        results = await self._gather([self._hit(item, parts) for item in items])
        exhausted = [item for item, ok in zip(items, results, strict=True) if not ok]
        if not exhausted:
            return _ALLOWED
        waits = await self._gather([self._reset_in(item, parts) for item in exhausted])
        wait, item = max(zip(waits, exhausted, strict=True), key=lambda pair: pair[0])
        # Never 0 when refused: "retry now" would invite a busy loop.
        return RateVerdict(allowed=False, limit=str(item), retry_after_seconds=max(0.001, _round_up_ms(wait)))

    async def _hit(self, item: RateLimitItem, parts: Sequence[str]) -> bool:
        if self._lean is None:
            return await self._limiter.hit(item, *parts)
        # What FixedWindowRateLimiter.hit does (INCRBY, EXPIRE when new), with limits' script and key.
        bridge = cast(RedispyBridge, cast(RedisStorage, self._storage).bridge)
        script = bridge.lua_incr_expire
        key = bridge.prefixed_key(item.key_for(*parts))
        count = await self._lean.evalsha(script.sha, cast(str, script.script), [key], [item.get_expiry(), 1])
        return int(count) <= item.amount

    async def _reset_in(self, item: RateLimitItem, parts: Sequence[str]) -> float:
        """Seconds until this window's counter resets."""
        window_key = item.key_for(*parts)
        if self._redis is None:
            return max(0.0, await self._storage.get_expiry(window_key) - time.time())
        # limits reads TTL in whole seconds (rounded to nearest); PTTL is exact.
        storage = cast(RedisStorage, self._storage)
        pttl = int(await self._redis.pttl(storage.bridge.prefixed_key(window_key)))
        if pttl == -1:  # no expiry set (cannot happen via limits' script): assume a full window
            return float(item.get_expiry())
        return max(0, pttl) / 1000

    async def _gather(self, calls: Sequence[Any]) -> list[Any]:
        # return_exceptions: a failure in one window must not leave the others'
        # exceptions unretrieved.
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, _STORAGE_ERRORS):
                raise StateUnavailable(f"rate-limit storage unavailable: {type(result).__name__}") from result
            if isinstance(result, BaseException):
                raise result
        return list(results)

    async def check_ready(self) -> None:
        if self._redis is not None:
            with unavailable_on_redis_error("rate-limit readiness check"):
                await self._redis.ping()

    async def close(self) -> None:
        if self._redis is not None:
            if self._lean is not None:
                self._lean.close()
            await self._redis.aclose()
            return
        # MemoryStorage schedules an expiry sweep task; do not leave it pending.
        timer = cast(MemoryStorage, self._storage).timer
        if timer is not None and not timer.done():
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)
