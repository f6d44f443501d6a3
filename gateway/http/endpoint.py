"""`/servers/{name}/mcp` (one configured server) and `/mcp` (all of them): the Streamable HTTP verbs.

Only parsing, the verbs, headers and SSE writing live here; the session driver
does the rest. Exceptions become wire errors only in the app's error boundary.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from gateway.core import eras, host_side
from gateway.core.messages import SUPPORTED_VERSIONS, kind_of
from gateway.core.raw_json import encode, parse
from gateway.driver.aggregate import AggregateDriver
from gateway.driver.contracts import HostGone
from gateway.driver.session_driver import SessionDriver
from gateway.errors import INVALID_REQUEST, PARSE_ERROR, HostProtocolError
from gateway.http.guards import BODY_KEY, WRITE_TIMEOUT_KEY, load_owned, slow_consumer
from gateway.sse import frame

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
_SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}


class SseStream:
    """A prepared aiohttp SSE response as the driver's `HostStream`."""

    def __init__(self, resp: web.StreamResponse, request: web.Request) -> None:
        self._resp = resp
        self._request = request
        self._timeout = request.get(WRITE_TIMEOUT_KEY, 30.0)

    async def write(self, payload: bytes, event_id: str | None) -> None:
        await self._write(frame(payload, event_id))

    async def write_many(self, events: list[tuple[bytes, str | None]]) -> None:
        await self._write(b"".join(frame(payload, event_id) for payload, event_id in events))

    async def comment(self) -> None:
        await self._write(b": keepalive\n\n")

    async def _write(self, data: bytes) -> None:
        """A host that takes nothing for write_timeout (its socket buffer full) is disconnected."""
        transport = self._request.transport
        if transport is None or transport.is_closing():
            raise HostGone()
        try:
            if transport.get_write_buffer_size() + len(data) < transport.get_write_buffer_limits()[1]:
                # Stays under the high-water mark: the transport is not paused, so the write cannot wait on
                # the host. No deadline needed (arming one costs more than the write: a timer per event).
                await self._resp.write(data)
                return
            async with asyncio.timeout(self._timeout):
                await self._resp.write(data)
        except TimeoutError as exc:
            slow_consumer(self._request)
            raise HostGone() from exc
        except (ConnectionResetError, RuntimeError) as exc:
            raise HostGone() from exc


class HttpResponder:
    """Answers one HTTP request for the driver: a JSON body, or an SSE stream opened on demand."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None:
        if self.response is not None:  # a stream already started: the body goes in it as an event
            await self.response.write(frame(encode(body)))
            return
        headers = {SESSION_HEADER: session_id} if session_id else None
        self.response = web.Response(
            body=encode(body), status=status, content_type="application/json", headers=headers
        )

    async def stream(self, session_id: str) -> SseStream:
        headers = {**_SSE_HEADERS, SESSION_HEADER: session_id} if session_id else dict(_SSE_HEADERS)
        resp = web.StreamResponse(status=200, headers=headers)
        await resp.prepare(self.request)
        self.response = resp
        return SseStream(resp, self.request)

    def result(self) -> web.StreamResponse:
        return self.response if self.response is not None else web.Response(status=202)


class ServerEndpoint:
    def __init__(self, driver: SessionDriver | AggregateDriver) -> None:
        self.driver = driver

    async def post(self, request: web.Request, user: str | None = None) -> web.StreamResponse:
        msg = request[BODY_KEY] if BODY_KEY in request else _parse_json(await request.read())
        responder = HttpResponder(request)
        if isinstance(msg, list):
            await self._batch(request, msg, responder)
            return responder.result()
        kind = kind_of(msg)
        if SESSION_HEADER not in request.headers and _modern(request, msg):
            if kind != "request":
                return web.Response(status=202)  # 2026-07-28 defines no notifications to a server over HTTP
            await self.driver.modern.host_request(msg, responder, user, request.headers)
            return responder.result()
        if kind == "request" and msg["method"] == "initialize" and SESSION_HEADER not in request.headers:
            await self.driver.initialize(msg, responder, user)
            return responder.result()
        if kind == "request" and msg["method"] == host_side.DISCOVER and SESSION_HEADER not in request.headers:
            await responder.json(host_side.discover_refusal(msg))
            return responder.result()
        sid = _session_id(request)
        take = host_side.pending_key(msg["id"]) if kind == "response" else None
        rec, pending = await load_owned(self.driver, request, sid, take)
        if kind == "request":
            await self.driver.host_request(rec, msg, responder)
            return responder.result()
        await self.driver.host_oneway(rec, msg, pending)
        return web.Response(status=202)

    async def get(self, request: web.Request) -> web.StreamResponse:
        if SESSION_HEADER not in request.headers and eras.is_modern(request.headers.get(VERSION_HEADER)):
            return web.Response(status=405, headers={"Allow": "POST"})  # 2026-07-28 has no standalone stream
        rec, _ = await load_owned(self.driver, request, _session_id(request))
        responder = HttpResponder(request)
        stream = await responder.stream(rec.session_id)
        await self.driver.attach(rec, request.headers.get("Last-Event-ID"), stream)
        return responder.result()

    async def delete(self, request: web.Request) -> web.StreamResponse:
        if SESSION_HEADER not in request.headers and eras.is_modern(request.headers.get(VERSION_HEADER)):
            return web.Response(status=405, headers={"Allow": "POST"})
        rec, _ = await load_owned(self.driver, request, _session_id(request))
        await self.driver.end(rec, reason="host_delete")
        return web.Response(status=200)

    async def _batch(self, request: web.Request, batch: list[Any], responder: HttpResponder) -> None:
        """JSON-RPC batches (2025-03-26 only): requests answered one after another on one SSE stream."""
        if not batch:
            raise HostProtocolError(400, INVALID_REQUEST, "empty batch")
        rec, _ = await load_owned(self.driver, request, _session_id(request))
        if rec.host_version != "2025-03-26":
            raise HostProtocolError(400, INVALID_REQUEST, f"batches are not allowed in {rec.host_version}")
        answers = _BatchResponder(responder, rec.session_id)
        for m in batch:
            if kind_of(m) == "request":
                await self.driver.host_request(rec, m, answers)
            else:
                take = host_side.pending_key(m["id"]) if kind_of(m) == "response" else None
                _, pending = await load_owned(self.driver, request, rec.session_id, take) if take else (rec, None)
                await self.driver.host_oneway(rec, m, pending)


class _BatchResponder:
    """Every answer of a batch goes on the one SSE stream opened for it."""

    def __init__(self, outer: HttpResponder, session_id: str) -> None:
        self._outer = outer
        self._sid = session_id
        self._stream: SseStream | None = None

    async def stream(self, session_id: str) -> SseStream:
        if self._stream is None:
            self._stream = await self._outer.stream(session_id)
        return self._stream

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None:
        stream = await self.stream(self._sid)
        await stream.write(encode(body), None)


def _modern(request: web.Request, msg: Any) -> bool:
    """A 2026-07-28 request: says so in its header, or (no header) in its envelope."""
    header = request.headers.get(VERSION_HEADER)
    if header is not None:
        return header not in SUPPORTED_VERSIONS
    return isinstance(msg, dict) and eras.envelope_version(msg) is not None


def _session_id(request: web.Request) -> str:
    sid = request.headers.get(SESSION_HEADER)
    if not sid:
        raise HostProtocolError(400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in SUPPORTED_VERSIONS:
        raise HostProtocolError(400, INVALID_REQUEST, f"Unsupported protocol version: {version[:40]}")
    return sid


def _parse_json(body: bytes) -> Any:
    try:
        return parse(body)
    except orjson.JSONDecodeError:
        raise HostProtocolError(400, PARSE_ERROR, "Parse error: body is not valid JSON") from None
