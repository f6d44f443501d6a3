"""The simplest aiohttp reverse proxy: the floor any aiohttp gateway is measured against.

Run: python plain_forwarder.py PORT UPSTREAM_URL. One long-lived ClientSession, no cookie
jar, bodies and SSE streams passed through chunk by chunk. No sessions, no policy.
"""

from __future__ import annotations

import sys

import aiohttp
from aiohttp import web

DROP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


def make_app(upstream: str) -> web.Application:
    app = web.Application(client_max_size=4 * 1024 * 1024)

    async def start(app: web.Application) -> None:
        app["client"] = aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(), timeout=aiohttp.ClientTimeout(total=None),
            connector=aiohttp.TCPConnector(limit=0),
        )

    async def stop(app: web.Application) -> None:
        await app["client"].close()

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in DROP}
        async with app["client"].request(request.method, upstream, data=await request.read(), headers=headers) as up:
            resp = web.StreamResponse(status=up.status, headers={
                k: v for k, v in up.headers.items() if k.lower() not in DROP})
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            return resp

    app.router.add_route("*", "/{tail:.*}", forward)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


if __name__ == "__main__":
    web.run_app(make_app(sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
