"""RateLimiter against the memory storage and the real Redis (DB 15)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateLimiter, RateVerdict, validate_rate_spec

from .conftest import delete_prefix

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/15"

LimiterFactory = Callable[[], RateLimiter]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def make_limiter(request: pytest.FixtureRequest) -> AsyncIterator[LimiterFactory]:
    """Builds limiters sharing one storage namespace (like replicas), closes them all."""
    redis_prefix = f"mcpgw-test:{uuid.uuid4().hex}:"
    made: list[RateLimiter] = []
    memory_limiter: list[RateLimiter] = []

    def make() -> RateLimiter:
        if request.param == "memory":
            # One process, one storage: "replicas" are the same limiter.
            if not memory_limiter:
                memory_limiter.append(RateLimiter("memory://"))
                made.append(memory_limiter[0])
            return memory_limiter[0]
        limiter = RateLimiter(REDIS_URL, key_prefix=redis_prefix.rstrip(":"))
        made.append(limiter)
        return limiter

    try:
        yield make
    finally:
        for limiter in made:
            await limiter.close()
        if request.param == "redis":
            await delete_prefix(redis_prefix)


async def hits(limiter: RateLimiter, spec: str, n: int, *key: str) -> list[RateVerdict]:
    return [await limiter.hit(spec, *key) for _ in range(n)]


async def test_allows_up_to_the_limit_then_refuses(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    verdicts = await hits(limiter, "3/minute", 5, "server", "crm")
    assert [v.allowed for v in verdicts] == [True, True, True, False, False]
    assert verdicts[0] == RateVerdict(allowed=True, limit=None, retry_after_seconds=0.0)
    refused = verdicts[3]
    assert refused.limit == "3 per 1 minute"
    assert 0 < refused.retry_after_seconds <= 60
    assert round(refused.retry_after_seconds, 3) == refused.retry_after_seconds


async def test_multi_window_reports_longest_exhausted_window(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    first, second = await hits(limiter, "1/second;1/minute", 2, "server", "crm")
    assert first.allowed
    assert not second.allowed
    assert second.limit == "1 per 1 minute"
    assert 1 < second.retry_after_seconds <= 60


async def test_multi_window_short_window_exhausted_alone(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    verdicts = await hits(limiter, "2/second;100/hour", 3, "server", "crm")
    assert [v.allowed for v in verdicts] == [True, True, False]
    assert verdicts[2].limit == "2 per 1 second"
    assert 0 < verdicts[2].retry_after_seconds <= 1


async def test_refused_attempts_count_in_every_window(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    # One allowed, two refused by the minute window: all three count in the hour window.
    verdicts = await hits(limiter, "1/minute;3/hour", 3, "server", "crm")
    assert [v.allowed for v in verdicts] == [True, False, False]
    # Same hour window (same key and limit), checked alone: already at 3, so this 4th is refused.
    fourth = await limiter.hit("3/hour", "server", "crm")
    assert not fourth.allowed
    assert fourth.limit == "3 per 1 hour"


async def test_keys_are_isolated(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    assert (await limiter.hit("1/minute", "server", "crm")).allowed
    assert not (await limiter.hit("1/minute", "server", "crm")).allowed
    assert (await limiter.hit("1/minute", "server", "tickets")).allowed
    assert (await limiter.hit("1/minute", "user", "crm", "alice")).allowed
    assert (await limiter.hit("1/minute", "user", "crm", "bob")).allowed
    assert not (await limiter.hit("1/minute", "user", "crm", "alice")).allowed
    # '/' inside a part must not alias another key (limits joins parts with '/').
    assert (await limiter.hit("1/minute", "a/b", "c")).allowed
    assert (await limiter.hit("1/minute", "a", "b/c")).allowed


async def test_retry_after_is_accurate(make_limiter: LimiterFactory) -> None:
    limiter = make_limiter()
    assert (await limiter.hit("1/second", "server", "crm")).allowed
    refused = await limiter.hit("1/second", "server", "crm")
    assert not refused.allowed
    assert 0 < refused.retry_after_seconds <= 1
    await asyncio.sleep(refused.retry_after_seconds + 0.05)
    assert (await limiter.hit("1/second", "server", "crm")).allowed


async def test_replicas_share_counts(make_limiter: LimiterFactory) -> None:
    a, b = make_limiter(), make_limiter()
    assert (await a.hit("2/minute", "server", "crm")).allowed
    assert (await b.hit("2/minute", "server", "crm")).allowed
    assert not (await a.hit("2/minute", "server", "crm")).allowed


async def test_concurrent_hits_never_exceed_the_limit(make_limiter: LimiterFactory) -> None:
    limiters = [make_limiter(), make_limiter()]
    verdicts = await asyncio.gather(*(limiters[i % 2].hit("5/minute", "server", "crm") for i in range(20)))
    assert sum(v.allowed for v in verdicts) == 5


async def test_check_ready(make_limiter: LimiterFactory) -> None:
    await make_limiter().check_ready()


async def test_async_memory_scheme_accepted() -> None:
    limiter = RateLimiter("async+memory://")
    try:
        assert (await limiter.hit("1/second", "k")).allowed
        await limiter.check_ready()
    finally:
        await limiter.close()


@pytest.mark.redis
async def test_async_redis_scheme_accepted(redis_prefix: str) -> None:
    limiter = RateLimiter(f"async+{REDIS_URL}", key_prefix=redis_prefix.rstrip(":"))
    try:
        assert (await limiter.hit("1/second", "k")).allowed
        await limiter.check_ready()
    finally:
        await limiter.close()


def test_unsupported_storage() -> None:
    with pytest.raises(ValueError, match="memory:// or redis://"):
        RateLimiter("memcached://127.0.0.1:11211")


async def test_unreachable_redis_raises_state_unavailable() -> None:
    limiter = RateLimiter("redis://127.0.0.1:1/0", socket_timeout_s=0.2)
    try:
        with pytest.raises(StateUnavailable):
            await limiter.hit("5/second;100/hour", "server", "crm")
        with pytest.raises(StateUnavailable):
            await limiter.check_ready()
    finally:
        await limiter.close()


@pytest.mark.parametrize("spec", ["10/minute", "5/second;100/hour", "5 per 2 seconds", "1/day"])
def test_validate_accepts(spec: str) -> None:
    validate_rate_spec(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty rate limit"),
        ("   ", "empty rate limit"),
        ("ten/minute", "invalid rate limit 'ten/minute'"),
        ("5/fortnight", "invalid rate limit '5/fortnight'"),
        ("5/second;", "invalid rate limit"),
        ("0/minute", "allows nothing"),
    ],
)
def test_validate_rejects(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_rate_spec(spec)


async def test_hit_rejects_bad_spec() -> None:
    limiter = RateLimiter("memory://")
    try:
        with pytest.raises(ValueError, match="limits notation"):
            await limiter.hit("often", "k")
    finally:
        await limiter.close()
