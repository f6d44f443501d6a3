"""The pipelined connection of the store's scripts and commands (gateway/state/redis_lean.py): against the real
Redis for what Redis answers (results in order, the database chosen, NOSCRIPT, plain commands, a connection
Redis closed),
and against raw loopback sockets for a Redis that never answers or dies with a command in flight (the
client's failure handling: every waiting caller fails, nothing is sent twice, the next call connects)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from gateway.state.redis_client import connect_redis
from gateway.state.redis_lean import LeanScripts

from .conftest import REDIS_URL

pytestmark = pytest.mark.anyio

ECHO = "return {ARGV[1], redis.call('GET', KEYS[1])}"


@pytest.fixture
async def redis(redis_prefix: str) -> AsyncIterator[Redis]:
    client = connect_redis(REDIS_URL)
    yield client
    await client.aclose()


async def test_concurrent_callers_each_get_their_own_reply_from_the_configured_database(
        redis: Redis, redis_prefix: str) -> None:
    lean = LeanScripts.for_client(redis)
    assert lean is not None and lean._db == 15
    key = f"{redis_prefix}k"
    await redis.set(key, b"in-db-15")
    sha = await redis.script_load(ECHO)
    try:
        replies = await asyncio.gather(*(lean.evalsha(sha, ECHO, [key], [i]) for i in range(300)))
        assert replies == [[str(i).encode(), b"in-db-15"] for i in range(300)]
        assert len({id(lean._link)}) == 1  # one connection served them all
    finally:
        lean.close()


async def test_an_unknown_script_is_sent_whole_and_an_error_reply_raises(redis: Redis, redis_prefix: str) -> None:
    lean = LeanScripts.for_client(redis)
    assert lean is not None
    script = f"return '{redis_prefix}'"  # a script Redis has never seen: NOSCRIPT, then EVAL
    try:
        assert await lean.evalsha("0" * 40, script, [], []) == redis_prefix.encode()
        with pytest.raises(ResponseError):
            await lean.evalsha("0" * 40, "return redis.call('NO_SUCH_COMMAND')", [], [])
    finally:
        lean.close()


async def test_plain_commands_get_raw_replies_in_the_configured_database(redis: Redis, redis_prefix: str) -> None:
    lean = LeanScripts.for_client(redis)
    assert lean is not None
    key = f"{redis_prefix}plain"
    try:
        assert await lean.command("SET", key, b"v", "PX", 60_000) == b"OK"
        assert await redis.get(key) == b"v"  # the same database as redis-py's client (15)
        assert await lean.command("GET", key) == b"v"
        assert await lean.command("GET", f"{redis_prefix}none") is None
        with pytest.raises(ResponseError):
            await lean.command("INCR", key)  # not an integer: an error reply raises
    finally:
        lean.close()


async def test_a_connection_redis_closed_while_idle_is_replaced(redis: Redis, redis_prefix: str) -> None:
    lean = LeanScripts.for_client(redis)
    assert lean is not None
    try:
        assert await lean.evalsha("0" * 40, "return 1", [], []) == 1
        assert lean._link is not None and lean._link.transport is not None
        port = lean._link.transport.get_extra_info("sockname")[1]
        assert await redis.client_kill_filter(addr=f"127.0.0.1:{port}") == 1
        await asyncio.sleep(0.1)
        assert await lean.evalsha("0" * 40, "return 2", [], []) == 2
    finally:
        lean.close()


def test_only_plain_tcp_is_served() -> None:
    assert LeanScripts.for_client(Redis.from_url("rediss://127.0.0.1:6379/0")) is None
    assert LeanScripts.for_client(Redis.from_url("unix:///tmp/redis.sock")) is None
    lean = LeanScripts.for_client(Redis.from_url("redis://u:p@127.0.0.1:6380/3", socket_timeout=0.5))
    assert lean is not None
    assert (lean._port, lean._db, lean._username, lean._password, lean._timeout) == (6380, 3, "u", "p", 0.5)


async def _silent_server(close_after: float | None) -> tuple[asyncio.Server, int, list[bytes]]:
    """Reads commands and never answers; closes each connection after `close_after` s (None: never)."""
    got: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(close_after):
                while data := await reader.read(65536):
                    got.append(data)
        except TimeoutError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], got


async def test_a_redis_that_dies_mid_command_fails_every_waiting_caller_once() -> None:
    server, port, got = await _silent_server(close_after=0.1)
    lean = LeanScripts("127.0.0.1", port, timeout=5)
    try:
        results = await asyncio.gather(*(lean.evalsha("0" * 40, "return 1", [], [i]) for i in range(3)),
                                       return_exceptions=True)
        assert all(isinstance(r, ConnectionError) for r in results), results
        assert b"".join(got).count(b"EVALSHA") == 3  # each sent once, none again after the loss
    finally:
        lean.close()
        server.close()


async def test_a_redis_that_never_answers_times_out_and_the_connection_is_dropped() -> None:
    server, port, _ = await _silent_server(close_after=None)
    lean = LeanScripts("127.0.0.1", port, timeout=0.2)
    try:
        with pytest.raises(TimeoutError):
            await lean.evalsha("0" * 40, "return 1", [], [])
        assert lean._link is not None and lean._link.lost
    finally:
        lean.close()
        server.close()


async def test_an_unreachable_redis_fails_at_once() -> None:
    lean = LeanScripts("127.0.0.1", 1, timeout=1)
    with pytest.raises(OSError):
        await lean.evalsha("0" * 40, "return 1", [], [])
