"""A small round-robin HTTP load balancer for tests: no affinity, streams passed through unbuffered.

Run: python balancer.py PORT BACKEND_URL [BACKEND_URL ...]. Each request goes to the next
backend in turn; a backend that refuses the connection is skipped (like a health-checked
balancer after a replica dies). Every request is printed as one line: `<method> <backend index>`.
"""

from __future__ import annotations

import itertools
import sys

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


def make_app(backends: list[str]) -> web.Application:
    turn = itertools.cycle(range(len(backends)))
    app = web.Application(client_max_size=64 * 1024 * 1024)

    async def start(app: web.Application) -> None:
        app["client"] = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=2), auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def stop(app: web.Application) -> None:
        await app["client"].close()

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        for _ in range(len(backends)):
            index = next(turn)
            try:
                upstream = await app["client"].request(
                    request.method, backends[index] + request.path_qs, data=body, headers=headers,
                    allow_redirects=False,
                )
            except aiohttp.ClientConnectionError:
                continue
            print(f"{request.method} {index}", flush=True)
            resp = web.StreamResponse(status=upstream.status, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP})
            await resp.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
            except (aiohttp.ClientError, ConnectionResetError):
                upstream.close()
                raise  # the client sees its stream break, as behind a real balancer
            finally:
                upstream.release()
            return resp
        return web.Response(status=502, text="no backend")

    app.router.add_route("*", "/{tail:.*}", forward)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def main() -> None:
    port = int(sys.argv[1])
    web.run_app(make_app(sys.argv[2:]), host="127.0.0.1", port=port, print=None, access_log=None,
                handler_cancellation=True)


if __name__ == "__main__":
    main()
