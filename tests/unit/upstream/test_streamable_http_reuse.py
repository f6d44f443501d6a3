"""The HTTP connector's connections go back to its pool when a reply was read to its end: a JSON answer, a 202
(a notification's) and an SSE stream the server ended all leave one connection in use for the next request.
Driven against a real aiohttp server on loopback that records each request's client port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.upstream.streamable_http import StreamableHttpUpstream

pytestmark = pytest.mark.anyio

NOTE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'
SSE_CALL = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sse"}}'


@pytest.fixture
async def server() -> AsyncIterator[tuple[TestServer, list[int]]]:
    ports: list[int] = []

    async def mcp(request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        ports.append(peer[1] if peer else -1)
        body = await request.json()
        if "id" not in body:
            return web.Response(status=202)
        if body["params"]["name"] == "sse":
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(b'data: {"jsonrpc":"2.0","id":3,"result":{}}\n\n')
            await resp.write_eof()
            return resp
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {}})

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    yield srv, ports
    await srv.close()


async def test_answers_read_to_their_end_leave_the_connection_for_the_next_request(
        server: tuple[TestServer, list[int]]) -> None:
    srv, ports = server
    up = StreamableHttpUpstream("s", str(srv.make_url("/mcp")), {})
    await up.start()
    try:
        for body in (NOTE, CALL, SSE_CALL, NOTE, CALL):
            async with up.post(body, session_id="s1", protocol_version="2025-11-25") as reply:
                messages = [m async for m in reply.messages]
                assert (reply.status, len(messages)) in ((202, 0), (200, 1))
        assert len(ports) == 5 and len(set(ports)) == 1, ports
    finally:
        await up.close()
