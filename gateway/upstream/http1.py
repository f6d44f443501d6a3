"""A lean HTTP/1.1 client for the upstream request path: keep-alive connections to one origin, responses
parsed by httptools (llhttp, the parser uvicorn uses).

Why not aiohttp's client here: one JSON POST cost 69–73 µs of CPU through `ClientSession.request` and
29 µs through this, both through `HttpPool` (`make bench-clients`, docs/performance.md), and every host call
pays it. It does only what the Streamable HTTP connector needs, and refuses the rest:

- no redirects, no cookies, no proxies (as the aiohttp pools were configured);
- no content codings: it asks for `identity`, and a response with any other `Content-Encoding` is broken;
- a connect deadline and nothing else: the driver bounds the call (`driver/call_clock.py`);
- TLS verified against the system's trust store (`ssl.create_default_context()`), as aiohttp did;
- header names and values with CR, LF or NUL are refused before anything is sent (no header injection
  through a session id or an event id an upstream chose);
- a body read at the consumer's pace: reading from the socket pauses above `_HIGH_WATER` buffered bytes.

A connection goes back to the pool only when its response was read to the end and both sides keep it alive;
an idle one is dropped after `idle_timeout` (aiohttp's default, 15 s), before the server's own keep-alive
timeout is likely to close it under a request. A request is never retried: a POST the server may have
seen is not sent twice.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import cast
from urllib.parse import SplitResult, urlsplit

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

_HIGH_WATER = 256 * 1024  # buffered body bytes before the socket is paused
_FORBIDDEN = ("\r", "\n", "\0")
_USER_AGENT = "mcp-elicitation-gateway"


class ResponseBroken(ConnectionError):
    """The connection closed before the response was complete, or the response was malformed."""


class Http1Response:
    """One response: status and headers at once, the body as it arrives (`content.iter_any()`)."""

    __slots__ = ("_buffered", "_chunks", "_conn", "_done", "_error", "_head", "_interim", "_paused",
                 "_raw_headers", "_settled", "_waiter", "content_type", "headers", "status")

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._head: asyncio.Future[None] = conn.loop.create_future()
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._done = self._paused = self._interim = self._settled = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.status = 0
        self.headers: CIMultiDictProxy[str] = _NO_HEADERS
        self.content_type = ""

    @property
    def content(self) -> Http1Response:
        """The body reader (aiohttp's `resp.content` shape: `iter_any`, `at_eof`)."""
        return self

    async def iter_any(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive, joined per wake-up; raises `ResponseBroken` if the body is cut short."""
        while True:
            if self._chunks:
                data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
                self._chunks.clear()
                self._buffered = 0
                if self._paused and not self._settled and self._conn.transport is not None:
                    self._paused = False
                    self._conn.transport.resume_reading()
                yield data
                continue
            if self._error is not None:
                raise self._error
            if self._done:
                return
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes of what has arrived (all of it for -1), after waiting for some; b"" at the end."""
        async for data in self.iter_any():
            if 0 <= n < len(data):
                self._chunks.appendleft(data[n:])
                self._buffered += len(data) - n
                return data[:n]
            return data
        return b""

    def at_eof(self) -> bool:
        return self._done and not self._chunks

    def release(self) -> None:
        """Done with it. The connection went back to the pool when the response ended; a response left
        before its end closes it (the server sees its client leave)."""
        self._let_go(reuse=False)

    close = release

    def _let_go(self, *, reuse: bool) -> None:
        if self._settled:
            return
        self._settled = True
        conn = self._conn
        conn.response = None
        if self._paused and conn.transport is not None:
            self._paused = False
            conn.transport.resume_reading()
        if reuse:
            conn.pool.idle(conn)
        else:
            conn.close()

    # Called by the connection's parser.

    def _headers_done(self, status: int) -> None:
        if 100 <= status < 200:  # an interim response (100 Continue, 103 Early Hints): the real one follows
            self._interim = True
            self._raw_headers.clear()
            return
        headers: CIMultiDict[str] = CIMultiDict(
            (name.decode("latin-1"), value.decode("utf-8", "surrogateescape")) for name, value in self._raw_headers
        )
        self.status = status
        self.headers = CIMultiDictProxy(headers)
        self.content_type = headers.get("Content-Type", "application/octet-stream").partition(";")[0].strip().lower()
        coding = headers.get("Content-Encoding", "identity").strip().lower()
        if coding != "identity":
            self._fail(ResponseBroken(f"response has Content-Encoding {coding[:40]!r}; only identity is accepted"))
            return
        if not self._head.done():
            self._head.set_result(None)

    def _feed(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > _HIGH_WATER and not self._paused and self._conn.transport is not None:
            self._paused = True
            self._conn.transport.pause_reading()
        self._wake()

    def _complete(self, keep_alive: bool) -> None:
        if self._interim:
            self._interim = False
            return
        self._done = True
        if keep_alive and self._error is None:
            # As aiohttp does: the connection is free as soon as the response ended, its body buffered here.
            self._let_go(reuse=True)
        self._wake()

    def _lost(self) -> None:
        if self._done:
            return
        if self._head.done() and not _framed(self.headers):
            self._done = True  # a body delimited by the connection's end: complete, not reusable
            self._wake()
            return
        self._fail(ResponseBroken("the server closed the connection before its response was complete"))

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        if not self._head.done():
            self._head.set_exception(error)
        self._wake()
        if not self._settled:
            self._let_go(reuse=False)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


_NO_HEADERS: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())


def _framed(headers: CIMultiDictProxy[str]) -> bool:
    return "Content-Length" in headers or "chunked" in headers.get("Transfer-Encoding", "").lower()


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection; feeds the response in flight, if any."""

    def __init__(self, pool: Http1Pool) -> None:
        self.pool = pool
        self.loop = pool.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Http1Response | None = None
        self.lost = False
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are no asyncio subclasses

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes nobody asked for: this connection cannot be trusted any more
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self.response is not None:
                self.response._fail(ResponseBroken(f"malformed HTTP response ({type(exc).__name__})"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.pool.forget(self)
        if self.response is not None:
            self.response._lost()

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    # httptools callbacks. Bytes after the response ended belong to no request: raising stops the parser
    # (feed_data raises HttpParserCallbackError, an HttpParserError) and data_received closes the connection.

    def _current(self) -> Http1Response:
        if self.response is None:
            raise ResponseBroken("bytes after the response ended")
        return self.response

    def on_header(self, name: bytes, value: bytes) -> None:
        self._current()._raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._current()._headers_done(self.parser.get_status_code())

    def on_body(self, body: bytes) -> None:
        self._current()._feed(body)

    def on_message_complete(self) -> None:
        self._current()._complete(self.parser.should_keep_alive())


def _origin(parts: SplitResult) -> str:
    """scheme://host[:port], without user info."""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


class Http1Pool:
    """Keep-alive connections to the origin of `url` (one server). The caller bounds how many are in use."""

    def __init__(self, url: str, *, connect_timeout: float, idle_timeout: float = 15.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url[:200]!r}")
        self.loop = asyncio.get_running_loop()
        self._tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._host = parts.hostname
        default_port = 443 if self._tls else 80
        self._port = parts.port or default_port
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._origin = _origin(parts)
        self._host_header = host if self._port == default_port else f"{host}:{self._port}"
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self._idle: deque[_Connection] = deque()  # newest on the right: taken first, while still warm
        self._open: set[_Connection] = set()
        self._targets: dict[str, str] = {}

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> Http1Response:
        """Send one request and return when the response's status and headers arrived."""
        head = self._head(method, url, headers, body)
        conn = self._take() or await self._connect()
        response = Http1Response(conn)
        conn.response = response
        assert conn.transport is not None
        conn.transport.write(head + body if body else head)
        try:
            await response._head
        except BaseException:
            response.close()
            raise
        return response

    def _head(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        target = self._targets.get(url)
        if target is None:
            target = self._target(url)
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        for name, value in headers.items():
            if any(c in name or c in value for c in _FORBIDDEN) or ":" in name:
                raise ValueError(f"header {name[:40]!r}: CR, LF, NUL or ':' where they may not be")
            lines.append(f"{name}: {value}\r\n")
        if "User-Agent" not in headers:
            lines.append(f"User-Agent: {_USER_AGENT}\r\n")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("Accept-Encoding: identity\r\n\r\n")
        return "".join(lines).encode()

    def _target(self, url: str) -> str:
        parts = urlsplit(url)
        if _origin(parts) != self._origin:
            raise ValueError("a request to another origin than this pool's")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if len(self._targets) < 64:
            self._targets[url] = target
        return target

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.lost or now - conn.idle_since > self.idle_timeout:
                conn.close()
                continue
            return conn
        return None

    async def _connect(self) -> _Connection:
        async with asyncio.timeout(self.connect_timeout):
            _, conn = await self.loop.create_connection(
                lambda: _Connection(self), self._host, self._port, ssl=self._tls,
                server_hostname=self._host if self._tls else None,
            )
        self._open.add(conn)
        return conn

    def idle(self, conn: _Connection) -> None:
        if conn.lost:
            return
        conn.idle_since = now = time.monotonic()
        self._idle.append(conn)
        while now - self._idle[0].idle_since > self.idle_timeout:  # the oldest, never taken again: closed
            self._idle.popleft().close()

    def forget(self, conn: _Connection) -> None:
        self._open.discard(conn)

    def close(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._idle.clear()
        self._open.clear()
