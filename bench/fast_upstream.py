"""A minimal raw-aiohttp MCP server for benchmarks: fast enough that the proxy in front is what is measured.

Run: python fast_upstream.py PORT. Streamable HTTP, both protocol families:

- handshake era (2025-11-25): `initialize` (issues a session id), notifications (202),
  `ping`, `tools/list`, `tools/call` of `echo` (JSON reply), `echo_sse` (the same answer as
  one SSE event), `ask_name` (an SSE reply carrying a form `elicitation/create`, answered
  by a second POST) and `stream` (`arguments.count` `notifications/message` events on the
  call's SSE stream, then the result);
- 2026-07-28 (no session; the `_meta` envelope names the revision): `server/discover`,
  `echo`, and `ask_name` as an `input_required` result, completed by the retry that
  carries `inputResponses` and the same `requestState`.

No SDK, no validation: it trusts its client, which is the benchmark.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

import orjson
from aiohttp import web

MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
TOOLS = {"tools": [
    {"name": name, "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
    for name in ("echo", "echo_sse", "ask_name", "stream")
]}
FORM = {"mode": "form", "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}},
                            "required": ["name"]}}
SERVER_INFO = {"name": "fast", "version": "1"}
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def event(msg: Any) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(msg) + b"\n\n"


def make_app() -> web.Application:
    sessions: set[str] = set()
    waiting: dict[tuple[str, Any], asyncio.Future[Any]] = {}
    ids = itertools.count(1)
    app = web.Application()

    def reply(rid: Any, result: Any, sid: str | None = None) -> web.Response:
        resp = web.Response(body=orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}),
                            content_type="application/json")
        if sid:
            resp.headers["Mcp-Session-Id"] = sid
        return resp

    async def modern(msg: dict[str, Any]) -> web.StreamResponse:
        method, params = msg.get("method"), msg.get("params") or {}
        if "id" not in msg:
            return web.Response(status=202)
        if method == "server/discover":
            return reply(msg["id"], {"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                                     "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                                     "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}})
        if method == "tools/list":
            return reply(msg["id"], {**TOOLS, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        if method == "tools/call" and params.get("name") == "ask_name":
            answers = params.get("inputResponses")
            if not answers:
                return reply(msg["id"], {"resultType": "input_required", "inputRequests": {
                    "name": {"method": "elicitation/create", "params": FORM}}, "requestState": f"rs{next(ids)}"})
            text = orjson.dumps(answers.get("name")).decode()
            return reply(msg["id"], {"resultType": "complete", "content": [{"type": "text", "text": text}]})
        if method == "tools/call":
            text = (params.get("arguments") or {}).get("text", "")
            return reply(msg["id"], {"resultType": "complete", "content": [{"type": "text", "text": text}]})
        return web.json_response({"jsonrpc": "2.0", "id": msg["id"],
                                  "error": {"code": -32601, "message": "Method not found"}})

    async def post(request: web.Request) -> web.StreamResponse:
        msg = orjson.loads(await request.read())
        sid = request.headers.get("Mcp-Session-Id", "")
        method = msg.get("method")
        if not sid and ((msg.get("params") or {}).get("_meta") or {}).get(META_VERSION) == MODERN:
            return await modern(msg)
        if method == "server/discover":  # a handshake-era caller asking: not spoken that way
            return web.json_response(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
        if method == "initialize":
            sid = f"s{next(ids)}"
            sessions.add(sid)
            return reply(msg["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "logging": {}},
                                     "serverInfo": SERVER_INFO}, sid)
        if sid not in sessions:
            return web.Response(status=404)
        if method is None:  # a host's answer to our elicitation
            future = waiting.pop((sid, msg.get("id")), None)
            if future is not None and not future.done():
                future.set_result(msg.get("result"))
            return web.Response(status=202)
        if "id" not in msg:
            return web.Response(status=202)
        params = msg.get("params") or {}
        name = params.get("name")
        if method == "tools/call" and name == "echo":
            return reply(msg["id"], {"content": [{"type": "text", "text": params["arguments"].get("text", "")}]})
        if method == "tools/list":
            return reply(msg["id"], TOOLS)
        if method != "tools/call" or name not in ("echo_sse", "ask_name", "stream"):
            return reply(msg["id"], {})
        resp = web.StreamResponse(headers={**SSE_HEADERS, "Mcp-Session-Id": sid})
        await resp.prepare(request)
        result: Any
        if name == "echo_sse":
            result = {"content": [{"type": "text", "text": params["arguments"].get("text", "")}]}
        elif name == "stream":
            count = int(params["arguments"].get("count", 100))
            note = event({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "logger": "bench", "data": "tick"}})
            for i in range(count):
                await resp.write(note)
                if i % 64 == 63:
                    await asyncio.sleep(0)  # let the writes reach the socket in batches, as a busy server's do
            result = {"content": [{"type": "text", "text": str(count)}]}
        else:
            eid = next(ids)
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            waiting[(sid, eid)] = future
            await resp.write(event({"jsonrpc": "2.0", "id": eid, "method": "elicitation/create", "params": FORM}))
            answer = await asyncio.wait_for(future, 30)
            result = {"content": [{"type": "text", "text": orjson.dumps(answer).decode()}]}
        await resp.write(event({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        return resp

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
