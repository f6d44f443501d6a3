"""One pipelined Redis connection for the store's scripts and the commands on a request's path.

Why: through redis-py's asyncio client one EVALSHA cost 43–45 µs of the gateway's CPU (a pool checkout,
a lock, a deadline per socket read), and through this about 4 µs (32 concurrent callers, `make
bench-clients`, docs/performance.md); the session load is paid on every host request, and an elicitation
runs half a dozen scripts. Pipelines, pub/sub and the admin reads keep redis-py.

How: one TCP connection; commands packed by hiredis (redis-py's own C parser) and written once per turn
of the event loop, replies parsed by hiredis and matched to callers in order (Redis answers a
connection's commands in order). Replies are hiredis's raw ones (bytes, ints, lists; no redis-py
response callbacks). It speaks AUTH and SELECT on connect, EVALSHA (and EVAL when Redis answers
NOSCRIPT, after a restart or SCRIPT FLUSH) and plain commands. Plain TCP only: for `rediss://` or a Unix
socket, `for_client` returns None and redis-py serves every command.

Failure is loud, never silent: a reply later than `socket_timeout` fails every caller waiting on the
connection (`TimeoutError`) and closes it; a lost connection fails them too (`ConnectionError`); the store
turns both into StateUnavailable (the request is refused: fail closed); the next call connects again. A
command is never sent twice.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any, cast

import hiredis
from redis.asyncio import Redis
from redis.asyncio.connection import Connection
from redis.exceptions import ResponseError


def _command(args: tuple[Any, ...]) -> bytes:
    """One command in RESP, packed by hiredis (its type stub takes a one-element tuple: hence `Any` here)."""
    packed: bytes = hiredis.pack_command(args)
    return packed


class _Link(asyncio.Protocol):
    """The connection: commands written once per turn of the loop (those of every caller of that turn in one
    write), replies matched in order, one deadline watch for the oldest command instead of a timer per call."""

    def __init__(self, timeout: float) -> None:
        self.reader = hiredis.Reader()
        self.timeout = timeout
        self.waiting: deque[tuple[asyncio.Future[Any], float]] = deque()  # (caller, sent at)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._out: list[bytes] = []
        self._watch: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are no asyncio subclasses

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while self.waiting:
            try:
                reply = self.reader.gets()
            except hiredis.ProtocolError:
                self.close()
                return
            if reply is False:
                return
            waiter, _ = self.waiting.popleft()
            if not waiter.done():  # a caller cancelled meanwhile; its reply is skipped
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail_all(ConnectionError("Redis connection lost"))

    def send(self, command: bytes) -> asyncio.Future[Any]:
        waiter = self._loop.create_future()
        if self.lost:
            waiter.set_exception(ConnectionError("Redis connection lost"))
            return waiter
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(command)
        self.waiting.append((waiter, self._loop.time()))
        if self._watch is None:
            self._watch = self._loop.call_later(self.timeout, self._check)
        return waiter

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self.transport is not None and not self.lost:
            self.transport.write(b"".join(out))

    def _check(self) -> None:
        """The oldest command waited `timeout`: Redis is stuck or gone, every caller fails (fail closed)."""
        self._watch = None
        if not self.waiting:
            return
        due = self.waiting[0][1] + self.timeout
        if self._loop.time() >= due:
            self._fail_all(TimeoutError(f"Redis did not answer within {self.timeout:g} s"))
            self.close()
        else:
            self._watch = self._loop.call_at(due, self._check)

    def _fail_all(self, error: Exception) -> None:
        self.lost = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        while self.waiting:
            waiter, _ = self.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(error)

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class LeanScripts:
    """EVALSHA and plain commands over one pipelined connection (see the module's docstring)."""

    def __init__(self, host: str, port: int, *, db: int = 0, username: str | None = None,
                 password: str | None = None, timeout: float = 1.0) -> None:
        self._host, self._port, self._db = host, port, db
        self._username, self._password = username, password
        self._timeout = timeout
        self._link: _Link | None = None
        self._connecting: asyncio.Future[_Link] | None = None

    @classmethod
    def for_client(cls, client: Redis) -> LeanScripts | None:
        """Built from redis-py's own connection settings, so both reach the same server and database; None
        unless the connection is plain TCP."""
        pool = client.connection_pool
        if pool.connection_class is not Connection:
            return None
        kw = pool.connection_kwargs
        return cls(kw.get("host", "localhost"), int(kw.get("port", 6379)), db=int(kw.get("db", 0) or 0),
                   username=kw.get("username"), password=kw.get("password"),
                   timeout=float(kw.get("socket_timeout") or 1.0))

    async def evalsha(self, sha: str, script: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        reply = await self._call(_command((b"EVALSHA", sha, len(keys), *keys, *args)))
        if isinstance(reply, hiredis.ReplyError) and str(reply).startswith("NOSCRIPT"):
            reply = await self._call(_command((b"EVAL", script, len(keys), *keys, *args)))
        if isinstance(reply, hiredis.ReplyError):
            raise ResponseError(str(reply))
        return reply

    async def command(self, *args: Any) -> Any:
        """One command (`GET`, `SET` ...), its raw reply; an error reply raises ResponseError."""
        reply = await self._call(_command(args))
        if isinstance(reply, hiredis.ReplyError):
            raise ResponseError(str(reply))
        return reply

    async def _call(self, command: bytes) -> Any:
        link = self._link if self._link is not None and not self._link.lost else await self._connect()
        return await link.send(command)

    async def _connect(self) -> _Link:
        if self._connecting is not None:  # one connection for every caller that arrives meanwhile
            return await asyncio.shield(self._connecting)
        self._connecting = asyncio.get_running_loop().create_future()
        try:
            link = await self._open()
        except BaseException as exc:
            self._connecting.set_exception(exc)
            self._connecting.exception()  # retrieved: callers that wait get it, nobody else needs it
            raise
        finally:
            done, self._connecting = self._connecting, None
        self._link = link
        done.set_result(link)
        return link

    async def _open(self) -> _Link:
        async with asyncio.timeout(self._timeout):
            _, link = await asyncio.get_running_loop().create_connection(
                lambda: _Link(self._timeout), self._host, self._port)
            try:
                hello = []
                if self._password is not None:
                    auth = (self._username, self._password) if self._username else (self._password,)
                    hello.append(link.send(_command((b"AUTH", *auth))))
                if self._db:
                    hello.append(link.send(_command((b"SELECT", self._db))))
                for reply in await asyncio.gather(*hello):
                    if isinstance(reply, hiredis.ReplyError):
                        raise ResponseError(str(reply))
            except BaseException:
                link.close()
                raise
        return link

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
