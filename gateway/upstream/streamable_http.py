"""Upstream connector for Streamable HTTP servers.

Two pools per server (see `http_pool.py`): requests (POST, DELETE, and the GETs
that resume a POST's reply), on the lean HTTP/1.1 client of `http1.py` since every
host call pays for it, and standalone GET streams, on aiohttp's client; a request
never waits behind idle streams.

A POST's SSE reply that ends or breaks before any JSON-RPC response came on it
is resumed when the server gave an event id (SSE polling, 2025-11-25): wait the
server's `retry` (bounded), reopen with GET + `Last-Event-ID`, keep yielding.
A resumed stream is read until the first response, then closed: servers keep a
replayed stream open after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from gateway import tracing
from gateway.core.raw_json import parse
from gateway.errors import UPSTREAM_FAILED, UPSTREAM_STREAM_LOST, UpstreamFailure, UpstreamSessionGone
from gateway.sse import DEFAULT_MAX_EVENT_BYTES, SseEvent, SseParser
from gateway.upstream.connector import UpstreamReply, no_messages
from gateway.upstream.credentials import UpstreamCredentials, as_credentials
from gateway.upstream.http1 import Http1Response
from gateway.upstream.http_pool import HttpPool, PooledResponse
from gateway.upstream.resume import ResumePolicy, resume_refused

_MAX_ERROR_BODY = 64 * 1024
_MAX_JSON_BODY = 16 * 1024 * 1024
_STREAM_BROKE = (TimeoutError, aiohttp.ClientError, OSError)


class StreamableHttpUpstream:
    def __init__(
        self,
        name: str,
        url: str,
        credentials: Mapping[str, str] | UpstreamCredentials,
        *,
        connect_timeout: float = 10.0,
        max_connections: int = 100,
        max_streams: int = 1000,
        acquire_timeout: float = 5.0,
        resume: ResumePolicy | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_json_bytes: int = _MAX_JSON_BODY,
    ) -> None:
        self.name = name
        self.url = url
        # This server's own credential; nothing of the host's request headers ever gets here.
        self._credentials = as_credentials(name, credentials)
        self.resume = resume or ResumePolicy()
        self._max_event_bytes = max_event_bytes
        self._max_json_bytes = max_json_bytes
        self.requests = HttpPool(
            name, "request", limit=max_connections, acquire_timeout=acquire_timeout, http1=True,
            # No read deadline here: a reply may rightly be quiet while a person answers an elicitation.
            # The driver bounds a request by `request_timeout_seconds`, pausing while a person answers.
            timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_connect=connect_timeout),
        )
        self.streams = HttpPool(
            name, "stream", limit=max_streams, acquire_timeout=acquire_timeout,
            timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_connect=connect_timeout),
        )

    async def start(self) -> None:
        await self.requests.start()
        await self.streams.start()

    async def close(self) -> None:
        await self.requests.close()
        await self.streams.close()

    def _request_headers(self, session_id: str | None, protocol_version: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", **self._credentials.headers()}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if protocol_version is not None:
            headers["MCP-Protocol-Version"] = protocol_version
        tracing.inject(headers)  # W3C traceparent of the current span, when tracing is on
        return headers

    def _get_headers(self, session_id: str | None, protocol_version: str | None, last_event_id: str | None) -> dict[
        str, str
    ]:
        headers = self._request_headers(session_id, protocol_version)
        headers["Accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> _PostExchange:
        return _PostExchange(self, body, session_id, protocol_version, headers)

    @asynccontextmanager
    async def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AsyncIterator[UpstreamReply]:
        headers = self._get_headers(session_id, protocol_version, last_event_id)
        held = await self.streams.send("GET", self.url, headers, None)
        reply: UpstreamReply | None = None
        try:
            if held.resp.status == 405:
                reply = UpstreamReply(405, session_id, False, no_messages())
            else:
                reply = await self._reply(held, session_id)
                reply.last_event_id = last_event_id
                if reply.streaming:
                    reply.messages = self._standalone(reply, held, last_event_id)
            yield reply
        finally:
            if reply is not None and isinstance(reply.messages, AsyncGenerator):
                await reply.messages.aclose()
            held.finish(reusable=False)

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        held = await self.requests.send("DELETE", self.url, self._request_headers(session_id, protocol_version), None)
        try:
            await _read_body(held.resp, _MAX_ERROR_BODY)
        except _STREAM_BROKE:
            pass
        finally:
            held.finish(reusable=True)

    async def _reply(self, held: PooledResponse, session_id: str | None) -> UpstreamReply:
        resp = held.resp
        sid = resp.headers.get("Mcp-Session-Id", session_id)
        if resp.status == 404 and session_id is not None:
            raise UpstreamSessionGone()
        if resp.status == 202:
            return UpstreamReply(202, sid, False, no_messages())
        ctype = resp.content_type
        if resp.status >= 400:
            error = await self._error_body(resp)
            if error is None:
                raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} answered HTTP {resp.status}")
            return UpstreamReply(resp.status, sid, False, _one(error))
        if ctype == "text/event-stream":
            return UpstreamReply(resp.status, sid, True, no_messages())
        if ctype == "application/json":
            try:
                raw = await _read_body(resp, self._max_json_bytes)
            except _STREAM_BROKE as exc:
                raise UpstreamFailure(
                    UPSTREAM_STREAM_LOST, f"reply from server {self.name!r} broke ({type(exc).__name__})"
                ) from None
            if raw is None:
                raise UpstreamFailure(
                    UPSTREAM_FAILED, f"server {self.name!r} sent a JSON body over {self._max_json_bytes} bytes"
                )
            try:
                parsed = parse(raw)
            except orjson.JSONDecodeError:
                raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} sent malformed JSON") from None
            held.finish(reusable=True)
            return UpstreamReply(resp.status, sid, False, _many(parsed))
        raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} answered with content type {ctype!r}")

    async def _error_body(self, resp: aiohttp.ClientResponse | Http1Response) -> dict[str, Any] | None:
        """A JSON-RPC error body at a non-2xx status is relayed as that error."""
        if resp.content_type != "application/json":
            return None
        try:
            raw = await _read_body(resp, _MAX_ERROR_BODY)
            parsed = orjson.loads(raw) if raw is not None else None
        except (orjson.JSONDecodeError, *_STREAM_BROKE):
            return None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            return parsed
        return None

    def _parser(self, last_event_id: str | None) -> SseParser:
        return SseParser(self._max_event_bytes, last_event_id=last_event_id)

    async def _events(
        self, held: PooledResponse, parser: SseParser, reply: UpstreamReply
    ) -> AsyncGenerator[Any, None]:
        """The JSON-RPC messages of one SSE response; transport errors propagate, bad content is UpstreamFailure."""
        async for chunk in held.resp.content.iter_any():
            try:
                events = parser.feed(chunk)
            except ValueError as exc:
                raise UpstreamFailure(
                    UPSTREAM_STREAM_LOST, f"stream from server {self.name!r} broke ({exc})"
                ) from None
            carrying = [_carries_message(event) for event in events]
            left = sum(carrying)
            for event, carries in zip(events, carrying, strict=True):
                reply.last_event_id, reply.retry_ms = event.id, parser.reconnection_ms
                if not carries:
                    continue  # priming events and other event types carry no JSON-RPC
                try:
                    message = parse(event.data.encode())
                except orjson.JSONDecodeError:
                    raise UpstreamFailure(
                        UPSTREAM_FAILED, f"server {self.name!r} sent malformed JSON on its stream"
                    ) from None
                left -= 1
                reply.queued = left
                yield message
            reply.queued = 0
            reply.last_event_id, reply.retry_ms = parser.last_event_id, parser.reconnection_ms

    async def _standalone(
        self, reply: UpstreamReply, held: PooledResponse, last_event_id: str | None
    ) -> AsyncIterator[Any]:
        try:
            async for message in self._events(held, self._parser(last_event_id), reply):
                yield message
        except _STREAM_BROKE as exc:
            raise UpstreamFailure(
                UPSTREAM_STREAM_LOST, f"stream from server {self.name!r} broke ({type(exc).__name__})"
            ) from None
        held.finish(reusable=True)

    async def _post_reply(
        self, reply: UpstreamReply, first: PooledResponse, protocol_version: str | None
    ) -> AsyncIterator[Any]:
        """A POST's SSE reply, resumed with GET + Last-Event-ID while it ends or breaks unanswered."""
        held: PooledResponse | None = first
        parser = self._parser(None)
        answered = resumed_stream = False
        failures = 0
        try:
            while True:
                assert held is not None
                ids_before = parser.last_event_id
                broke: BaseException | None = None
                events = self._events(held, parser, reply)
                try:
                    async for message in events:
                        answered = answered or _is_response(message)
                        yield message
                        if answered and resumed_stream:
                            return  # a replayed stream stays open after the answer
                except _STREAM_BROKE as exc:
                    broke = exc
                finally:
                    await events.aclose()
                held.finish(reusable=broke is None)
                held = None
                if resumed_stream and parser.last_event_id != ids_before:
                    failures = 0  # the reopened stream made progress
                if answered:
                    return
                if parser.last_event_id is None or self.resume.max_attempts == 0:
                    if broke is not None:
                        raise UpstreamFailure(
                            UPSTREAM_STREAM_LOST, f"stream from server {self.name!r} broke ({type(broke).__name__})"
                        )
                    return  # ended unanswered and not resumable: the caller reports it
                held, failures = await self._reopen(reply, parser, failures, protocol_version)
                parser = self._parser(parser.last_event_id)
                parser.reconnection_ms = reply.retry_ms
                resumed_stream = True
        finally:
            if held is not None:
                held.finish(reusable=False)

    async def _reopen(
        self, reply: UpstreamReply, parser: SseParser, failures: int, protocol_version: str | None
    ) -> tuple[PooledResponse, int]:
        """GET with Last-Event-ID until a stream opens; bounded by `max_attempts` failures in a row and
        `max_resumes` reopens in total."""
        while True:
            self.resume.check_budget(self.name, reply.resumed, failures)
            await asyncio.sleep(self.resume.delay(parser.reconnection_ms))
            reply.resumed += 1
            headers = self._get_headers(reply.session_id, protocol_version, parser.last_event_id)
            try:
                held = await self.requests.send("GET", self.url, headers, None)
            except UpstreamFailure:
                failures += 1
                continue
            status, ctype = held.resp.status, held.resp.content_type
            if status == 200 and ctype == "text/event-stream":
                return held, failures + 1  # counts as failed until the new stream delivers a new event id
            held.finish(reusable=False)
            if status == 404 and reply.session_id is not None:
                raise UpstreamSessionGone()
            if status == 405:
                raise resume_refused(self.name)
            failures += 1


async def _read_body(resp: aiohttp.ClientResponse | Http1Response, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes `limit` bytes (`content.read(n)` may return less than n)."""
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _carries_message(event: SseEvent) -> bool:
    return event.event == "message" and bool(event.data.strip())


def _is_response(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


class _PostExchange:
    """One POST and its reply, released on exit (a class, not `@asynccontextmanager`: every host call enters
    one, and a generator-based manager costs four times as much)."""

    __slots__ = ("_body", "_extra", "_held", "_protocol_version", "_reply", "_session_id", "_upstream")

    def __init__(self, upstream: StreamableHttpUpstream, body: bytes, session_id: str | None,
                 protocol_version: str | None, extra: Mapping[str, str] | None) -> None:
        self._upstream, self._body, self._extra = upstream, body, extra
        self._session_id, self._protocol_version = session_id, protocol_version
        self._held: PooledResponse | None = None
        self._reply: UpstreamReply | None = None

    async def __aenter__(self) -> UpstreamReply:
        up = self._upstream
        headers = up._request_headers(self._session_id, self._protocol_version)
        if self._extra:
            headers.update(self._extra)
        headers["Content-Type"] = "application/json"
        held = self._held = await up.requests.send("POST", up.url, headers, self._body)
        try:
            reply = self._reply = await up._reply(held, self._session_id)
            if reply.streaming:
                reply.messages = up._post_reply(reply, held, self._protocol_version)
        except BaseException:
            held.finish(reusable=False)
            raise
        return reply

    async def __aexit__(self, *_: object) -> bool:
        assert self._held is not None and self._reply is not None
        try:
            if isinstance(self._reply.messages, AsyncGenerator):
                await self._reply.messages.aclose()
        finally:
            self._held.finish(reusable=False)
        return False


async def _one(message: Any) -> AsyncIterator[Any]:
    yield message


async def _many(parsed: Any) -> AsyncIterator[Any]:
    for message in parsed if isinstance(parsed, list) else [parsed]:
        yield message
