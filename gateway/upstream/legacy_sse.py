"""Upstream connector for legacy HTTP+SSE servers (revision 2024-11-05), one SSE stream per session.

The client GETs the server's SSE URL; the first `endpoint` event names the URL
to POST messages to. Every message the client sends is a POST there (the server
answers 202 Accepted with no body); every response, server request and
notification comes back on that one SSE stream. Each session's stream is a
`Channel` (channel.py: sessions, supervision, reconnects; demux.py: per-request
streams rebuilt by id).

The endpoint must be on the SSE URL's origin (scheme, host and port): a server
(or anyone who can write into its stream) that names another origin would
receive every message of the session and the server's configured headers, so
such a stream is refused and closed. Redirects are never followed.

Bounds: each SSE event and line `max_event_bytes` (the stream is closed above
it); the `endpoint` event must come within `connect_timeout`; requests awaiting
an answer per session, queues and flood grace as in demux.py; reconnects as in
restart.py; POSTs and SSE streams take slots of two pools (`pool.*`), as for
Streamable HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urljoin, urlsplit

import aiohttp
import orjson

from gateway import tracing
from gateway.core.raw_json import parse
from gateway.errors import UPSTREAM_FAILED, UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.logs import get_logger
from gateway.sse import DEFAULT_MAX_EVENT_BYTES, SseEvent, SseParser
from gateway.upstream.channel import Channel, ChannelUpstream
from gateway.upstream.credentials import UpstreamCredentials, as_credentials
from gateway.upstream.demux import Demux
from gateway.upstream.http_pool import HttpPool, PooledResponse
from gateway.upstream.restart import RestartPolicy

log = get_logger("gateway.upstream")

_MAX_POST_REPLY = 64 * 1024
_STREAM_BROKE = (TimeoutError, aiohttp.ClientError, OSError)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL without credentials in it; None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]


class _SseChannel(Channel):
    def __init__(self, up: LegacySseUpstream, held: PooledResponse, chunks: AsyncIterator[bytes],
                 parser: SseParser, endpoint: str, early: list[SseEvent]) -> None:
        super().__init__(Demux(up.name, channel="connection"))
        self.up = up
        self.held = held
        self.endpoint = endpoint
        self.reader = asyncio.create_task(self._read(chunks, parser, early))

    async def _read(self, chunks: AsyncIterator[bytes], parser: SseParser, early: list[SseEvent]) -> None:
        name = self.up.name
        reason = UpstreamFailure(UPSTREAM_STREAM_LOST, f"event stream of server {name!r} ended")
        try:
            if not await self._deliver(early):
                reason = self.demux.flooded()
                return
            async for chunk in chunks:
                try:
                    events = parser.feed(chunk)
                except ValueError as exc:
                    reason = UpstreamFailure(UPSTREAM_STREAM_LOST, f"event stream of server {name!r} broke ({exc})")
                    return
                if not await self._deliver(events):
                    reason = self.demux.flooded()
                    return
        except _STREAM_BROKE as exc:
            reason = UpstreamFailure(
                UPSTREAM_STREAM_LOST, f"event stream of server {name!r} broke ({type(exc).__name__})")
        finally:
            self.held.finish(reusable=False)
            self._ended(reason)

    async def _deliver(self, events: list[SseEvent]) -> bool:
        for event in events:
            if event.event != "message" or not event.data.strip():
                continue  # a later `endpoint` cannot move the session; other event types carry no JSON-RPC
            try:
                message = parse(event.data.encode())
            except orjson.JSONDecodeError:
                log.warning("upstream.sse_malformed", server=self.up.name, reason="event data is not JSON")
                continue
            if not await self.demux.dispatch(message):
                return False
        return True

    async def send(self, body: bytes) -> None:
        if self.reason is not None:
            raise self.reason
        headers = {"Content-Type": "application/json", **self.up.headers}
        tracing.inject(headers)
        held = await self.up.requests.send("POST", self.endpoint, headers, body)
        try:
            status = held.resp.status
            try:
                await held.resp.content.read(_MAX_POST_REPLY)
            except _STREAM_BROKE:
                pass
        finally:
            held.finish(reusable=True)
        if not 200 <= status < 300:
            raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.up.name!r} answered HTTP {status} to a message")

    async def stop(self) -> None:
        self.reader.cancel()
        try:
            await self.reader
        except asyncio.CancelledError:
            pass
        self.held.finish(reusable=False)


class LegacySseUpstream(ChannelUpstream):
    channel = "sse"

    def __init__(
        self,
        name: str,
        url: str,
        credentials: Mapping[str, str] | UpstreamCredentials,
        *,
        connect_timeout: float = 10.0,
        request_timeout: float | None = None,
        max_connections: int = 100,
        max_streams: int = 1000,
        acquire_timeout: float = 5.0,
        restart: RestartPolicy | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(name, restart=restart, connect_timeout=connect_timeout)
        self.url = url
        self._credentials = as_credentials(name, credentials)
        self.max_event_bytes = max_event_bytes
        self.requests = HttpPool(
            name, "request", limit=max_connections, acquire_timeout=acquire_timeout,
            timeout=aiohttp.ClientTimeout(
                total=None, connect=connect_timeout, sock_connect=connect_timeout, sock_read=request_timeout
            ),
        )
        self.streams = HttpPool(
            name, "stream", limit=max_streams, acquire_timeout=acquire_timeout,
            timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_connect=connect_timeout),
        )

    @property
    def headers(self) -> dict[str, str]:
        """The server's credentials, secret files re-read when they change (gateway/upstream/credentials.py)."""
        return self._credentials.headers()

    async def start(self) -> None:
        await self.requests.start()
        await self.streams.start()

    async def close(self) -> None:
        await super().close()
        await self.requests.close()
        await self.streams.close()

    async def connect(self) -> Channel:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache", **self.headers}
        held = await self.streams.send("GET", self.url, headers, None)
        try:
            resp = held.resp
            if resp.status != 200 or resp.content_type != "text/event-stream":
                raise UpstreamFailure(
                    UPSTREAM_FAILED,
                    f"server {self.name!r} answered its SSE GET with HTTP {resp.status} {resp.content_type}",
                )
            chunks = aiter(resp.content.iter_any())
            parser = SseParser(self.max_event_bytes)
            endpoint, early = await self._endpoint(chunks, parser)
        except BaseException:
            held.finish(reusable=False)
            raise
        return _SseChannel(self, held, chunks, parser, endpoint, early)

    async def _endpoint(self, chunks: AsyncIterator[bytes], parser: SseParser) -> tuple[str, list[SseEvent]]:
        """The POST URL from the first `endpoint` event, and any events that came with it in the same chunk."""
        try:
            async with asyncio.timeout(self.connect_timeout):
                async for chunk in chunks:
                    events = parser.feed(chunk)
                    for i, event in enumerate(events):
                        if event.event == "endpoint":
                            return self._checked(event.data.strip()), events[i + 1:]
        except TimeoutError:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE,
                f"server {self.name!r} sent no endpoint event within {self.connect_timeout:g}s") from None
        except ValueError as exc:
            raise UpstreamFailure(UPSTREAM_FAILED, f"event stream of server {self.name!r} broke ({exc})") from None
        except _STREAM_BROKE as exc:
            raise UpstreamFailure(
                UPSTREAM_STREAM_LOST, f"event stream of server {self.name!r} broke ({type(exc).__name__})") from None
        raise UpstreamFailure(UPSTREAM_FAILED, f"event stream of server {self.name!r} ended before its endpoint event")

    def _checked(self, data: str) -> str:
        endpoint = urljoin(self.url, data)
        if origin(endpoint) is None or origin(endpoint) != origin(self.url):
            found = origin(endpoint)
            where = f"{found[0]}://{found[1]}:{found[2]}" if found else "not an http(s) URL on an origin"
            log.warning("upstream.endpoint_refused", server=self.name, endpoint_origin=where)
            raise UpstreamFailure(
                UPSTREAM_FAILED,
                f"server {self.name!r} named a message endpoint on another origin ({where}); refused",
            )
        return endpoint
