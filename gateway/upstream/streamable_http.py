"""Upstream connector for Streamable HTTP servers: one long-lived aiohttp ClientSession per server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from gateway.core.raw_json import parse
from gateway.errors import (
    UPSTREAM_FAILED,
    UPSTREAM_STREAM_LOST,
    UPSTREAM_UNREACHABLE,
    UpstreamFailure,
    UpstreamSessionGone,
)
from gateway.http.sse import SseParser
from gateway.upstream.connector import UpstreamReply, no_messages

_MAX_ERROR_BODY = 64 * 1024
_MAX_JSON_BODY = 16 * 1024 * 1024


class StreamableHttpUpstream:
    def __init__(
        self,
        name: str,
        url: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float = 10.0,
        request_timeout: float | None = None,
    ) -> None:
        self.name = name
        self.url = url
        self._headers = dict(headers)
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=connect_timeout, sock_connect=connect_timeout, sock_read=request_timeout
        )
        self._client: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if self._client is None:
            # No cookie jar: cookies from one upstream session must never leak into another.
            self._client = aiohttp.ClientSession(
                cookie_jar=aiohttp.DummyCookieJar(), timeout=self._timeout, auto_decompress=True
            )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _request_headers(self, session_id: str | None, protocol_version: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", **self._headers}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if protocol_version is not None:
            headers["MCP-Protocol-Version"] = protocol_version
        return headers

    async def _send(self, method: str, headers: dict[str, str], body: bytes | None) -> aiohttp.ClientResponse:
        if self._client is None:
            await self.start()
        assert self._client is not None
        try:
            return await self._client.request(method, self.url, data=body, headers=headers, allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.name!r} is unreachable ({type(exc).__name__})"
            ) from None

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None
    ) -> AsyncIterator[UpstreamReply]:
        headers = self._request_headers(session_id, protocol_version)
        headers["Content-Type"] = "application/json"
        resp = await self._send("POST", headers, body)
        try:
            yield await self._reply(resp, session_id)
        finally:
            resp.release()

    @asynccontextmanager
    async def open_stream(self, *, session_id: str, protocol_version: str | None) -> AsyncIterator[UpstreamReply]:
        headers = self._request_headers(session_id, protocol_version)
        headers["Accept"] = "text/event-stream"
        resp = await self._send("GET", headers, None)
        try:
            if resp.status == 405:
                yield UpstreamReply(405, session_id, False, no_messages())
                return
            yield await self._reply(resp, session_id)
        finally:
            resp.release()

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        resp = await self._send("DELETE", self._request_headers(session_id, protocol_version), None)
        resp.release()

    async def _reply(self, resp: aiohttp.ClientResponse, session_id: str | None) -> UpstreamReply:
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
            return UpstreamReply(resp.status, sid, True, self._sse_messages(resp))
        if ctype == "application/json":
            raw = await resp.content.read(_MAX_JSON_BODY + 1)
            if len(raw) > _MAX_JSON_BODY:
                raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} sent an oversized body")
            try:
                parsed = parse(raw)
            except orjson.JSONDecodeError:
                raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} sent malformed JSON") from None
            return UpstreamReply(resp.status, sid, False, _many(parsed))
        raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} answered with content type {ctype!r}")

    async def _error_body(self, resp: aiohttp.ClientResponse) -> dict[str, Any] | None:
        """A JSON-RPC error body at a non-2xx status is relayed as that error."""
        if resp.content_type != "application/json":
            return None
        try:
            parsed = orjson.loads(await resp.content.read(_MAX_ERROR_BODY))
        except (orjson.JSONDecodeError, aiohttp.ClientError):
            return None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            return parsed
        return None

    async def _sse_messages(self, resp: aiohttp.ClientResponse) -> AsyncIterator[Any]:
        parser = SseParser()
        try:
            async for chunk in resp.content.iter_any():
                for event in parser.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue  # priming events and other event types carry no JSON-RPC
                    try:
                        yield parse(event.data.encode())
                    except orjson.JSONDecodeError:
                        raise UpstreamFailure(
                            UPSTREAM_FAILED, f"server {self.name!r} sent malformed JSON on its stream"
                        ) from None
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise UpstreamFailure(
                UPSTREAM_STREAM_LOST, f"stream from server {self.name!r} broke ({type(exc).__name__})"
            ) from None


async def _one(message: Any) -> AsyncIterator[Any]:
    yield message


async def _many(parsed: Any) -> AsyncIterator[Any]:
    for message in parsed if isinstance(parsed, list) else [parsed]:
        yield message
