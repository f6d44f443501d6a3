"""A tiny raw aiohttp server on loopback for upstream connector tests: each test scripts its handler.

It speaks just enough Streamable HTTP to exercise the connector's edges the SDK
server does not reach on demand: priming and closing early, breaking mid-event,
refusing resumption, and holding streams open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import orjson
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class RawServer:
    url: str
    runner: web.AppRunner
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def connections(self) -> int:
        """TCP connections the server holds open now."""
        server = self.runner.server
        assert server is not None
        return len(server.connections)

    def gets(self) -> list[dict[str, str]]:
        return [h for verb, h in self.seen if verb == "GET"]

    async def wait_connections(self, n: int, timeout: float = 2.0) -> None:
        async with asyncio.timeout(timeout):
            while self.connections != n:
                await asyncio.sleep(0.01)


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[RawServer]:
    holder: list[RawServer] = []

    async def entry(request: web.Request) -> web.StreamResponse:
        holder[0].seen.append((request.method, dict(request.headers)))
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/mcp", entry)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    holder.append(RawServer(f"http://127.0.0.1:{port}/mcp", runner))
    try:
        yield holder[0]
    finally:
        await runner.cleanup()


async def sse_open(request: web.Request, session_id: str = "s-1") -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": session_id})
    await resp.prepare(request)
    return resp


def event(message: object | None = None, *, id: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event in CRLF form, as the SDK server writes it; no message means a priming event."""
    out = b""
    if id is not None:
        out += b"id: " + id.encode() + b"\r\n"
    if retry is not None:
        out += b"retry: " + str(retry).encode() + b"\r\n"
    data = b"" if message is None else orjson.dumps(message)
    return out + b"data: " + data + b"\r\n\r\n"


async def hold_open(resp: web.StreamResponse, period: float = 0.02) -> web.StreamResponse:
    """Keep a stream open with comments until the client leaves."""
    try:
        while True:
            await asyncio.sleep(period)
            await resp.write(b": ping\r\n\r\n")
    except (ConnectionError, RuntimeError):
        return resp


def result(rid: object, value: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def notification(method: str, params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
