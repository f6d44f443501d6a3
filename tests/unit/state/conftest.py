"""Fixtures: one store contract, run against memory and the real Redis (DB 15)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
from redis.asyncio import Redis

from gateway.state.memory_store import MemoryStateStore
from gateway.state.redis_store import RedisStateStore
from gateway.state.store import StateStore

REDIS_URL = "redis://127.0.0.1:6379/15"
UNREACHABLE_REDIS_URL = "redis://127.0.0.1:1/0"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def delete_prefix(prefix: str) -> None:
    """Remove only this test's keys: DB 15 may be shared, never FLUSHDB."""
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    prefix = f"mcpgw-test:{uuid.uuid4().hex}:"
    yield prefix
    await delete_prefix(prefix)


@dataclass
class StoreHarness:
    store: StateStore
    # Lets TTL tests run unchanged on both backends: moves the fake clock for
    # memory, really waits for Redis.
    advance: Callable[[float], Awaitable[None]]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[StoreHarness]:
    if request.param == "memory":
        clock = FakeClock()

        async def advance_clock(seconds: float) -> None:
            clock.now += seconds

        yield StoreHarness(MemoryStateStore(clock=clock), advance_clock)
        return

    prefix = f"mcpgw-test:{uuid.uuid4().hex}:"
    store = RedisStateStore(REDIS_URL, prefix=prefix)
    try:
        yield StoreHarness(store, asyncio.sleep)
    finally:
        await store.close()
        await delete_prefix(prefix)
