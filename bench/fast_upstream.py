"""A minimal raw-aiohttp MCP server for benchmarks: fast enough that the proxy in front is what is measured.

Run: python fast_upstream.py PORT. Streamable HTTP: `initialize` (issues a session id),
notifications (202), `tools/list`, `tools/call` `echo` (JSON reply) and `ask_name`
(an SSE reply carrying a form `elicitation/create`, answered by a second POST).
No SDK, no validation: it trusts its client, which is the benchmark.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from typing import Any

from aiohttp import web

TOOLS = {"tools": [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "ask_name", "inputSchema": {"type": "object", "properties": {}}},
]}
FORM = {"mode": "form", "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}},
                            "required": ["name"]}}


def make_app() -> web.Application:
    sessions: set[str] = set()
    waiting: dict[tuple[str, Any], asyncio.Future[Any]] = {}
    ids = itertools.count(1)
    app = web.Application()

    def reply(rid: Any, result: Any) -> web.Response:
        return web.Response(body=json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}),
                            content_type="application/json")

    async def post(request: web.Request) -> web.StreamResponse:
        msg = json.loads(await request.read())
        sid = request.headers.get("Mcp-Session-Id", "")
        if msg.get("method") == "initialize":
            sid = f"s{next(ids)}"
            sessions.add(sid)
            resp = reply(msg["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                     "serverInfo": {"name": "fast", "version": "1"}})
            resp.headers["Mcp-Session-Id"] = sid
            return resp
        if sid not in sessions:
            return web.Response(status=404)
        if "method" not in msg:  # a host's answer to our elicitation
            future = waiting.pop((sid, msg.get("id")), None)
            if future is not None:
                future.set_result(msg.get("result"))
            return web.Response(status=202)
        if "id" not in msg:
            return web.Response(status=202)
        if msg["method"] == "tools/list":
            return reply(msg["id"], TOOLS)
        if msg["method"] == "tools/call" and msg["params"]["name"] == "echo":
            text = msg["params"].get("arguments", {}).get("text", "")
            return reply(msg["id"], {"content": [{"type": "text", "text": text}]})
        if msg["method"] == "tools/call" and msg["params"]["name"] == "ask_name":
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": sid})
            await resp.prepare(request)
            eid = next(ids)
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            waiting[(sid, eid)] = future
            ask = {"jsonrpc": "2.0", "id": eid, "method": "elicitation/create", "params": FORM}
            await resp.write(f"event: message\ndata: {json.dumps(ask)}\n\n".encode())
            answer = await asyncio.wait_for(future, 30)
            done = {"jsonrpc": "2.0", "id": msg["id"],
                    "result": {"content": [{"type": "text", "text": json.dumps(answer)}]}}
            await resp.write(f"event: message\ndata: {json.dumps(done)}\n\n".encode())
            return resp
        return reply(msg["id"], {})

    async def get(request: web.Request) -> web.StreamResponse:
        return web.Response(status=405)

    async def delete(request: web.Request) -> web.StreamResponse:
        sessions.discard(request.headers.get("Mcp-Session-Id", ""))
        return web.Response(status=200)

    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", get)
    app.router.add_delete("/mcp", delete)
    return app


if __name__ == "__main__":
    web.run_app(make_app(), host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
