"""Redis state store: shared by every gateway replica.

Key layout (prefix default "mcpgw:"; every id part is percent-encoded, so ':'
and '{' inside ids cannot collide with the separators or hash tags):

    <p>sess:<sid>                         hash {r: orjson record, p:<key>: pending server request}, PX = session TTL
    <p>sessions                           sorted set sid -> last seen (unix s): the idle-sweep index
    <p>pending_counts                     hash server -> elicitations waiting for a host answer (all replicas)
    <p>decisions                          list: the latest /admin decision summaries (no values), newest first
    <p>wake:<sid>                         pub/sub channel: "something was appended to <sid>'s buffer"
    <p>replica:<id>                       string, PX = heartbeat TTL: the replica is alive
    <p>owner:<server>:<upstream>:<eid>    hash {h: host session, u: user, done?: 1}
    <p>events:{<sid>}:seq                 string counter (INCR), PX = buffer TTL
    <p>events:{<sid>}:log                 sorted set, score = event id, member = b"<id>:<payload>"

Every operation is one command, one MULTI or one Lua script, so racing replicas
never observe half an update. Scripts touch a session's keys together with the
shared indexes (`sessions`, `pending_counts`): one Redis, not Cluster (docs/state.md).
Scripts and the commands on a request's path go over one pipelined connection
(redis_lean.py) when Redis is plain TCP; pipelines and pub/sub use redis-py.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import quote

import orjson
from redis.commands.core import AsyncScript

from gateway.logs import get_logger
from gateway.state.owner import Owner, OwnerKey
from gateway.state.redis_client import DEFAULT_SOCKET_TIMEOUT_S, connect_redis, unavailable_on_redis_error
from gateway.state.redis_lean import LeanScripts
from gateway.state.ttl import COUNTED, DEFAULT_MAX_EVENT_BYTES, check_max_events, grace_ms, parse_event_id, ttl_ms

log = get_logger("gateway.state")

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

# INCR gives ids that increase across replicas; the oldest entries go while the
# log holds more than max_events or max_bytes (the newest one always stays). A
# sorted set (not a stream) tolerates the counter and the log being evicted
# independently: ZADD has no "id must grow" rule to violate. PUBLISH wakes the
# replica that holds the session's open stream, wherever it is.
_APPEND = """
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local member = n .. ':' .. ARGV[1]
redis.call('ZADD', KEYS[2], n, member)
local size = redis.call('INCRBY', KEYS[3], #member)
local count = redis.call('ZCARD', KEYS[2])
while count > 1 and (count > tonumber(ARGV[3]) or size > tonumber(ARGV[4])) do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, 0)
  size = redis.call('INCRBY', KEYS[3], -#oldest)
  count = count - 1
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('PUBLISH', ARGV[5], n)
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


# Pending server requests per session are capped: a flooding server cannot grow the record. A new entry
# counted as ARGV[4] (an elicitation: its server's name) adds one to that count in KEYS[2].
_PUT_PENDING = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local new = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0
if new and redis.call('HLEN', KEYS[1]) > tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if not new then return 1 end
if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[4], 1) end
return 2
"""

# A pending entry taken (a JSON object) that was counted: field `field` names the count in hash `counts`.
_UNCOUNT = """
local function uncount(raw, field, counts)
  local ok, value = pcall(cjson.decode, raw)
  local counted = ok and type(value) == 'table' and value[field]
  if type(counted) == 'string' then redis.call('HINCRBY', counts, counted, -1) end
end
"""

# Load a session KEYS[1]: its record, TTL refreshed to ARGV[1] ms, marked seen at ARGV[2] in the index KEYS[2]
# (member ARGV[3]), and with ARGV[4] ~= '' that pending entry taken (and uncounted in KEYS[3], the count it
# was put with: an answered elicitation). One command instead of a MULTI pipeline of five: redis-py builds and
# parses every command and reply in Python, on every request.
_LOAD_SESSION = _UNCOUNT + """
local record = redis.call('HGET', KEYS[1], 'r')
if not record then return {false, false} end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 'XX', ARGV[2], ARGV[3])
local pending = false
if ARGV[4] ~= '' then
  pending = redis.call('HGET', KEYS[1], ARGV[4])
  if pending then
    redis.call('HDEL', KEYS[1], ARGV[4])
    uncount(pending, ARGV[5], KEYS[3])
  end
end
return {record, pending}
"""

# Remove the pending entries named in ARGV[2..] (or, with none, all of them) from the session KEYS[1], uncount
# the counted ones (field ARGV[1] of their JSON names the count in KEYS[2]); return how many were removed.
_TAKE_PENDING = _UNCOUNT + """
local fields = {unpack(ARGV, 2)}
if #fields == 0 then fields = redis.call('HKEYS', KEYS[1]) end
local taken = 0
for _, f in ipairs(fields) do
  if string.sub(f, 1, 2) == 'p:' then
    local v = redis.call('HGET', KEYS[1], f)
    if v then
      redis.call('HDEL', KEYS[1], f)
      taken = taken + 1
      uncount(v, ARGV[1], KEYS[2])
    end
  end
end
return taken
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
        self._put_pending = self._redis.register_script(_PUT_PENDING)
        self._take_pending = self._redis.register_script(_TAKE_PENDING)
        self._load_session = self._redis.register_script(_LOAD_SESSION)
        # On every host request, and half a dozen times per elicitation: one pipelined connection (redis_lean.py).
        self._lean = LeanScripts.for_client(self._redis)
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self.round_trips: collections.Counter[str] = collections.Counter()
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None

    # -- keys ----------------------------------------------------------------------------
    @property
    def _counts_key(self) -> str:
        return f"{self._prefix}pending_counts"

    def _session_key(self, session_id: str) -> str:
        return f"{self._prefix}sess:{_enc(session_id)}"

    def _owner_key(self, key: OwnerKey) -> str:
        parts = (key.server, key.upstream_session, key.elicitation_id)
        return f"{self._prefix}owner:" + ":".join(_enc(p) for p in parts)

    def _event_keys(self, host_session: str) -> list[str]:
        base = f"{self._prefix}events:{{{_enc(host_session)}}}"
        return [f"{base}:seq", f"{base}:log", f"{base}:bytes"]

    def _op(self, name: str) -> contextlib.AbstractContextManager[None]:
        """One round trip to Redis (a command, a pipeline or a script), counted for /metrics."""
        self.round_trips[name] += 1
        return unavailable_on_redis_error(name)

    async def _script(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        if self._lean is not None:
            return await self._lean.evalsha(script.sha, cast(str, script.script), keys, args)
        return await script(keys=keys, args=args)

    async def _command(self, *args: Any) -> Any:
        """One command's raw reply (bytes, not redis-py's parsed forms: callers use only GET and SET)."""
        if self._lean is not None:
            return await self._lean.command(*args)
        return await cast(Any, self._redis).execute_command(*args)

    def _wake_channel(self, host_session: str) -> str:
        return f"{self._prefix}wake:{_enc(host_session)}"

    # -- sessions ------------------------------------------------------------------------
    async def put_session(self, session_id: str, record: dict[str, Any], ttl_s: float) -> None:
        px = ttl_ms(ttl_s, "ttl_s")
        key = self._session_key(session_id)
        with self._op("put_session"):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, "r", orjson.dumps(record))
                pipe.pexpire(key, px)
                pipe.zadd(f"{self._prefix}sessions", {session_id: time.time()})
                await pipe.execute()

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        with self._op("get_session"):
            raw = await self._redis.hget(self._session_key(session_id), "r")
        if raw is None:
            return None
        record: dict[str, Any] = orjson.loads(raw)
        return record

    async def load_session(
        self, session_id: str, ttl_s: float, take: str | None = None
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The record (TTL refreshed, marked seen) and, with `take`, that pending entry removed: one round trip."""
        px = ttl_ms(ttl_s, "ttl_s")
        with self._op("load_session"):
            keys = [self._session_key(session_id), f"{self._prefix}sessions", self._counts_key]
            args = [px, time.time(), session_id, f"p:{take}" if take is not None else "", COUNTED]
            raw, raw_pending = cast(list[bytes | None], await self._script(self._load_session, keys, args))
        if raw is None:
            return None, None
        pending = orjson.loads(raw_pending) if raw_pending is not None else None
        if pending is not None:
            pending.pop(COUNTED, None)
        return orjson.loads(raw), pending

    async def touch_session(self, session_id: str, ttl_s: float) -> bool:
        record, _ = await self.load_session(session_id, ttl_s)
        return record is not None

    async def delete_session(self, session_id: str) -> bool:
        with self._op("delete_session"):
            await self._remove_pending(session_id, [])
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(self._session_key(session_id))
                pipe.zrem(f"{self._prefix}sessions", session_id)
                deleted, _ = await pipe.execute()
        return bool(deleted)

    async def count_sessions(self) -> int:
        with self._op("count_sessions"):
            return int(await self._redis.zcard(f"{self._prefix}sessions"))

    async def put_pending(
        self, session_id: str, key: str, value: dict[str, Any], max_pending: int, counted_as: str | None = None
    ) -> bool:
        stored_value = {**value, COUNTED: counted_as} if counted_as is not None else value
        with self._op("put_pending"):
            stored = await self._script(self._put_pending, [self._session_key(session_id), self._counts_key],
                                        [f"p:{key}", orjson.dumps(stored_value), max_pending, counted_as or ""])
        return bool(stored)

    async def drop_pending(self, session_id: str, key: str) -> bool:
        return await self._remove_pending(session_id, [f"p:{key}"]) > 0

    async def _remove_pending(self, session_id: str, fields: list[str]) -> int:
        """Remove pending entries (all with no fields) and uncount the counted ones; how many were removed."""
        with self._op("take_pending"):
            return int(await self._script(
                self._take_pending, [self._session_key(session_id), self._counts_key], [COUNTED, *fields]))

    async def append_decision(self, entry: bytes, keep: int) -> None:
        with self._op("append_decision"):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lpush(f"{self._prefix}decisions", entry)
                pipe.ltrim(f"{self._prefix}decisions", 0, keep - 1)
                await pipe.execute()

    async def recent_decisions(self, limit: int) -> list[bytes]:
        with self._op("recent_decisions"):
            return cast(list[bytes], await self._redis.lrange(f"{self._prefix}decisions", 0, limit - 1))

    async def pending_counts(self) -> dict[str, int]:
        with self._op("pending_counts"):
            raw = cast(dict[bytes, bytes], await self._redis.hgetall(self._counts_key))
        return {k.decode(): int(v) for k, v in raw.items() if int(v) > 0}

    async def take_idle(self, idle_s: float, limit: int = 100) -> list[tuple[str, dict[str, Any]]]:
        """Claim sessions idle for idle_s (ZREM decides which replica ends each one) and delete them."""
        index = f"{self._prefix}sessions"
        taken: list[tuple[str, dict[str, Any]]] = []
        with self._op("take_idle"):
            sids = await self._redis.zrangebyscore(index, "-inf", time.time() - idle_s, start=0, num=limit)
            for raw_sid in cast(list[bytes], sids):
                sid = raw_sid.decode()
                if not await self._redis.zrem(index, sid):
                    continue  # another replica claimed it
                key = self._session_key(sid)
                await self._remove_pending(sid, [])
                async with self._redis.pipeline(transaction=True) as pipe:
                    pipe.hget(key, "r")
                    pipe.delete(key)
                    record, _ = await pipe.execute()
                if record is not None:
                    taken.append((sid, orjson.loads(record)))
        return taken

    # -- ownership -----------------------------------------------------------------------
    async def register_owner(self, key: OwnerKey, owner: Owner, ttl_s: float) -> None:
        px = ttl_ms(ttl_s, "ttl_s")
        name = self._owner_key(key)
        with self._op("register_owner"):
            # DEL first so a stale `done` marker from a reused id cannot survive.
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(name)
                pipe.hset(name, mapping={"h": owner.host_session, "u": owner.user})
                pipe.pexpire(name, px)
                await pipe.execute()

    async def owner_of(self, key: OwnerKey) -> Owner | None:
        with self._op("owner_of"):
            raw = await self._redis.hmget(self._owner_key(key), ["h", "u", "done"])
        host, user, done = cast(list[bytes | None], raw)
        if host is None or user is None or done is not None:
            return None
        return Owner(host_session=host.decode(), user=user.decode())

    async def complete(self, key: OwnerKey, grace_s: float) -> Owner | None:
        grace = grace_ms(grace_s)
        with self._op("complete"):
            raw = await self._script(self._complete, [self._owner_key(key)], [grace])
        if not raw:
            return None
        host, user = cast(list[bytes], raw)
        return Owner(host_session=host.decode(), user=user.decode())

    # -- buffered events -----------------------------------------------------------------
    async def append_event(
        self, host_session: str, payload: bytes, ttl_s: float, max_events: int = 1000,
        max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> str:
        px = ttl_ms(ttl_s, "ttl_s")
        check_max_events(max_events)
        args: list[bytes | int | str] = [payload, px, max_events, max_bytes, self._wake_channel(host_session)]
        with self._op("append_event"):
            n = await self._script(self._append, self._event_keys(host_session), args)
        return str(int(n))

    async def events_after(self, host_session: str, last_event_id: str | None) -> list[tuple[str, bytes]]:
        after = parse_event_id(last_event_id)
        with self._op("events_after"):
            members = await self._script(self._events_after, self._event_keys(host_session)[:2],
                                         ["" if after is None else str(after)])
        events: list[tuple[str, bytes]] = []
        for member in cast(list[bytes], members):
            event_id, _, payload = member.partition(b":")
            events.append((event_id.decode(), payload))
        return events

    async def drop_events(self, host_session: str) -> None:
        # The counter stays (until its TTL) so ids keep increasing for this session.
        with self._op("drop_events"):
            keys = self._event_keys(host_session)
            await self._redis.delete(keys[1], keys[2])

    @contextlib.asynccontextmanager
    async def subscribe(self, host_session: str) -> AsyncIterator[asyncio.Event]:
        """An event set whenever any replica appends to this session's buffer (Redis pub/sub).

        One pub/sub connection per process; callers still re-read the buffer now and then,
        so a wake-up lost while Redis reconnects delays a message, never loses it.
        """
        wake = asyncio.Event()
        channel = self._wake_channel(host_session)
        first = channel not in self._waiters
        self._waiters.setdefault(channel, set()).add(wake)
        try:
            if first:
                with self._op("subscribe"):
                    if self._pubsub is None:
                        self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
                    await self._pubsub.subscribe(channel)
                if self._reader is None or self._reader.done():
                    self._reader = asyncio.create_task(self._read_wakeups())
            yield wake
        finally:
            waiters = self._waiters.get(channel)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._waiters[channel]
                    with contextlib.suppress(Exception):
                        await self._pubsub.unsubscribe(channel)

    async def _read_wakeups(self) -> None:
        while self._waiters:
            try:
                message = await self._pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnects; subscriptions are restored by redis-py
                log.warning("state.pubsub_error", error_type=type(exc).__name__)
                await asyncio.sleep(0.5)
                continue
            if message and message.get("type") == "message":
                channel = message["channel"].decode()
                for wake in self._waiters.get(channel, ()):
                    wake.set()

    # -- shared secrets and round records ---------------------------------------------
    async def shared_secret(self, name: str) -> bytes:
        """One random secret for every replica: the first to ask creates it (SET NX)."""
        key = f"{self._prefix}secret:{_enc(name)}"
        with self._op("shared_secret"):
            await self._redis.set(key, secrets.token_bytes(32), nx=True)
            value = await self._redis.get(key)
        assert isinstance(value, bytes)
        return value

    async def put_round(self, key: str, record: dict[str, Any], ttl_s: float) -> None:
        with self._op("put_round"):
            await self._command("SET", f"{self._prefix}round:{_enc(key)}", orjson.dumps(record),
                                "PX", ttl_ms(ttl_s, "ttl_s"))

    async def get_round(self, key: str) -> dict[str, Any] | None:
        with self._op("get_round"):
            raw = await self._command("GET", f"{self._prefix}round:{_enc(key)}")
        return None if raw is None else orjson.loads(raw)

    # -- replicas ------------------------------------------------------------------------
    async def beat(self, replica: str, ttl_s: float) -> None:
        with self._op("beat"):
            await self._redis.set(f"{self._prefix}replica:{_enc(replica)}", b"1", px=ttl_ms(ttl_s, "ttl_s"))

    async def replica_alive(self, replica: str) -> bool:
        with self._op("replica_alive"):
            return bool(await self._redis.exists(f"{self._prefix}replica:{_enc(replica)}"))

    # -- lifecycle -----------------------------------------------------------------------
    async def ping(self) -> None:
        with self._op("ping"):
            await self._redis.ping()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._lean is not None:
            self._lean.close()
        await self._redis.aclose()
