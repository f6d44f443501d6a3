"""A bounded pool of HTTP connections to one server: one long-lived aiohttp ClientSession (or, for the
request path of Streamable HTTP, the lean client of `http1.py`) and a slot count.

A slot is taken before a request is sent and given back when its response is
closed, so at most `limit` requests of this pool are in flight and a caller that
cannot get a slot within `acquire_timeout` fails at once with `UpstreamFailure`
instead of queueing without end inside aiohttp.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp

from gateway.errors import UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.upstream.http1 import Http1Pool, Http1Response


class PooledResponse:
    """A response holding one slot of its pool until `finish` (idempotent)."""

    __slots__ = ("_done", "_pool", "resp")

    def __init__(self, resp: aiohttp.ClientResponse | Http1Response, pool: HttpPool) -> None:
        self.resp = resp
        self._pool = pool
        self._done = False

    def finish(self, *, reusable: bool) -> None:
        """Give the slot back. The connection goes back to the pool only if the body was read to its end
        and the caller says so; otherwise it is closed, so the server sees the client leave."""
        if self._done:
            return
        self._done = True
        if reusable and self.resp.content.at_eof():
            self.resp.release()
        else:
            self.resp.close()
        self._pool._give_back()


class HttpPool:
    def __init__(
        self,
        server: str,
        kind: str,
        *,
        limit: int,
        acquire_timeout: float,
        timeout: aiohttp.ClientTimeout,
        http1: bool = False,
    ) -> None:
        """`http1`: requests go through `Http1Pool` (one origin, no redirects, no content codings) instead
        of aiohttp's client; for the request path, where its lower cost per request counts."""
        self.server = server
        self.kind = kind
        self.limit = limit
        self.acquire_timeout = acquire_timeout
        self._timeout = timeout
        self._slots = asyncio.Semaphore(limit)
        self._in_use = 0
        self._client: aiohttp.ClientSession | None = None
        self._http1 = http1
        self._lean: Http1Pool | None = None

    @property
    def in_use(self) -> int:
        """Slots taken now (requests sent whose response is not finished)."""
        return self._in_use

    def _give_back(self) -> None:
        self._in_use -= 1
        self._slots.release()

    def _session(self) -> aiohttp.ClientSession:
        if self._client is None or self._client.closed:
            # No cookie jar: cookies from one upstream session must never leak into another.
            self._client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.limit, limit_per_host=0),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=self._timeout,
                auto_decompress=True,
            )
        return self._client

    async def start(self) -> None:
        if not self._http1:  # the lean client connects on its first request; no aiohttp session is needed
            self._session()

    async def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
            self._lean = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> PooledResponse:
        try:
            if self._slots.locked():  # only a wait needs a deadline (and its timer)
                async with asyncio.timeout(self.acquire_timeout):
                    await self._slots.acquire()
            else:
                await self._slots.acquire()
        except TimeoutError:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE,
                f"server {self.server!r}: all {self.limit} {self.kind} connections stayed busy for "
                f"{self.acquire_timeout:g}s",
                status=503,
            ) from None
        self._in_use += 1
        try:
            resp: aiohttp.ClientResponse | Http1Response
            if self._http1:
                if self._lean is None:
                    self._lean = Http1Pool(url, connect_timeout=self._timeout.connect or 10.0)
                resp = await self._lean.request(method, url, headers, body)
            else:
                resp = await self._session().request(method, url, data=body, headers=headers, allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self._give_back()
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.server!r} is unreachable ({type(exc).__name__})"
            ) from None
        except BaseException:
            self._give_back()
            raise
        return PooledResponse(resp, self)
