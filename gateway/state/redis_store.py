"""Redis state store: shared by every gateway replica.

Key layout (prefix default "mcpgw:"; every id part is percent-encoded, so ':'
and '{' inside ids cannot collide with the separators or hash tags):

    <p>session:<sid>                      string, orjson record, PX = session TTL
    <p>owner:<server>:<upstream>:<eid>    hash {h: host session, u: user, done?: 1}
    <p>events:{<sid>}:seq                 string counter (INCR), PX = buffer TTL
    <p>events:{<sid>}:log                 sorted set, score = event id, member = b"<id>:<payload>"

Multi-key scripts only touch keys sharing one {hash tag}, so they also run on
Redis Cluster. Every operation is one command, one MULTI or one Lua script,
so racing replicas never observe half an update.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import quote

import orjson

from gateway.state.owner import Owner, OwnerKey
from gateway.state.redis_client import DEFAULT_SOCKET_TIMEOUT_S, connect_redis, unavailable_on_redis_error
from gateway.state.ttl import check_max_events, grace_ms, parse_event_id, ttl_ms

# First completion wins: a replay (or a second replica racing on the same
# notification) finds `done` set and gets nothing. The marker lives grace ms.
_COMPLETE = """
local v = redis.call('HMGET', KEYS[1], 'h', 'u', 'done')
if not v[1] or v[3] then return false end
if tonumber(ARGV[1]) <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'done', '1')
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return {v[1], v[2]}
"""

# INCR gives ids that increase across replicas; ZREMRANGEBYRANK keeps the newest
# max_events. A sorted set (not a stream) tolerates the counter and the log
# being evicted independently: ZADD has no "id must grow" rule to violate.
_APPEND = """
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], n, n .. ':' .. ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[3]) + 1))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return n
"""

# ARGV[1] = last seen id, or '' for none. An id above the counter was issued
# before the counter expired, so everything buffered now is newer than it.
_EVENTS_AFTER = """
if ARGV[1] ~= '' then
  local n = redis.call('GET', KEYS[1])
  if not n or tonumber(ARGV[1]) <= tonumber(n) then
    return redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf')
  end
end
return redis.call('ZRANGE', KEYS[2], 0, -1)
"""


def _enc(part: str) -> str:
    return quote(part, safe="")


class RedisStateStore:
    def __init__(
        self, url: str, *, prefix: str = "mcpgw:", socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S
    ) -> None:
        self._redis = connect_redis(url, socket_timeout_s=socket_timeout_s)
        self._prefix = prefix
        self._complete = self._redis.register_script(_COMPLETE)
        self._append = self._redis.register_script(_APPEND)
        self._events_after = self._redis.register_script(_EVENTS_AFTER)

    # -- keys ----------------------------------------------------------------------------
    def _session_key(self, session_id: str) -> str:
        return f"{self._prefix}session:{_enc(session_id)}"

    def _owner_key(self, key: OwnerKey) -> str:
        parts = (key.server, key.upstream_session, key.elicitation_id)
        return f"{self._prefix}owner:" + ":".join(_enc(p) for p in parts)

    def _event_keys(self, host_session: str) -> list[str]:
        base = f"{self._prefix}events:{{{_enc(host_session)}}}"
        return [f"{base}:seq", f"{base}:log"]

    # -- sessions ------------------------------------------------------------------------
    async def put_session(self, session_id: str, record: dict[str, Any], ttl_s: float) -> None:
        px = ttl_ms(ttl_s, "ttl_s")
        data = orjson.dumps(record)
        with unavailable_on_redis_error("put_session"):
            await self._redis.set(self._session_key(session_id), data, px=px)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        with unavailable_on_redis_error("get_session"):
            raw = await self._redis.get(self._session_key(session_id))
        if raw is None:
            return None
        record: dict[str, Any] = orjson.loads(raw)
        return record

    async def touch_session(self, session_id: str, ttl_s: float) -> bool:
        px = ttl_ms(ttl_s, "ttl_s")
        with unavailable_on_redis_error("touch_session"):
            return bool(await self._redis.pexpire(self._session_key(session_id), px))

    async def delete_session(self, session_id: str) -> bool:
        with unavailable_on_redis_error("delete_session"):
            return bool(await self._redis.delete(self._session_key(session_id)))

    # -- ownership -----------------------------------------------------------------------
    async def register_owner(self, key: OwnerKey, owner: Owner, ttl_s: float) -> None:
        px = ttl_ms(ttl_s, "ttl_s")
        name = self._owner_key(key)
        with unavailable_on_redis_error("register_owner"):
            # DEL first so a stale `done` marker from a reused id cannot survive.
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(name)
                pipe.hset(name, mapping={"h": owner.host_session, "u": owner.user})
                pipe.pexpire(name, px)
                await pipe.execute()

    async def owner_of(self, key: OwnerKey) -> Owner | None:
        with unavailable_on_redis_error("owner_of"):
            raw = await self._redis.hmget(self._owner_key(key), ["h", "u", "done"])
        host, user, done = cast(list[bytes | None], raw)
        if host is None or user is None or done is not None:
            return None
        return Owner(host_session=host.decode(), user=user.decode())

    async def complete(self, key: OwnerKey, grace_s: float) -> Owner | None:
        grace = grace_ms(grace_s)
        with unavailable_on_redis_error("complete"):
            raw = await self._complete(keys=[self._owner_key(key)], args=[grace])
        if not raw:
            return None
        host, user = cast(list[bytes], raw)
        return Owner(host_session=host.decode(), user=user.decode())

    # -- buffered events -----------------------------------------------------------------
    async def append_event(
        self, host_session: str, payload: bytes, ttl_s: float, max_events: int = 1000
    ) -> str:
        px = ttl_ms(ttl_s, "ttl_s")
        check_max_events(max_events)
        with unavailable_on_redis_error("append_event"):
            n = await self._append(keys=self._event_keys(host_session), args=[payload, px, max_events])
        return str(int(n))

    async def events_after(self, host_session: str, last_event_id: str | None) -> list[tuple[str, bytes]]:
        after = parse_event_id(last_event_id)
        with unavailable_on_redis_error("events_after"):
            members = await self._events_after(
                keys=self._event_keys(host_session), args=["" if after is None else str(after)]
            )
        events: list[tuple[str, bytes]] = []
        for member in cast(list[bytes], members):
            event_id, _, payload = member.partition(b":")
            events.append((event_id.decode(), payload))
        return events

    async def drop_events(self, host_session: str) -> None:
        # The counter stays (until its TTL) so ids keep increasing for this session.
        with unavailable_on_redis_error("drop_events"):
            await self._redis.delete(self._event_keys(host_session)[1])

    # -- lifecycle -----------------------------------------------------------------------
    async def ping(self) -> None:
        with unavailable_on_redis_error("ping"):
            await self._redis.ping()

    async def close(self) -> None:
        await self._redis.aclose()
