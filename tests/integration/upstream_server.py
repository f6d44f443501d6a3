"""The upstream MCP server integration tests put behind the gateway: the real SDK, real HTTP.

Run: python upstream_server.py PORT [legacy|modern|sse] (or `stdio` instead of PORT). Tools let a
test make the server send any elicitation, report what it saw, or die in the middle of a stream.
It serves both revision families on one endpoint unless told `legacy` (handshake era only) or
`modern` (2026-07-28 only); `sse` serves the legacy HTTP+SSE transport (2024-11-05) instead of
Streamable HTTP: GET /sse, POST /messages/. `greet` and `sign_in` elicit through `Resolve`, so they
work in both.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Annotated, Any

import mcp_types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp.types import ElicitRequestURLParams
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel


async def legacy_only(ctx: Any, call_next: Any) -> Any:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(code=UNSUPPORTED_PROTOCOL_VERSION, message="Unsupported protocol version",
                       data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": ctx.protocol_version})
    return await call_next(ctx)


async def modern_only(ctx: Any, call_next: Any) -> Any:
    if ctx.method == "initialize":
        requested = (ctx.params or {}).get("protocolVersion", "")
        raise MCPError(code=UNSUPPORTED_PROTOCOL_VERSION, message="Unsupported protocol version",
                       data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested})
    return await call_next(ctx)


ERA = sys.argv[2] if len(sys.argv) > 2 else "both"
mcp = MCPServer("upstream", middleware={"legacy": [legacy_only], "modern": [modern_only]}.get(ERA, []))


class Name(BaseModel):
    name: str


class Password(BaseModel):
    password: str


def ask_for_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_for_password() -> Elicit[Password]:
    return Elicit("Sign in to continue", Password)


@mcp.tool()
async def greet(who: Annotated[Name, Resolve(ask_for_name)], ctx: Context) -> str:
    """Elicits a name in either revision family; says which one it ran in."""
    return f"Hello {who.name} ({ctx.protocol_version})"


def ask_for_a_haiku() -> Sample:
    return Sample([mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text="A haiku"))],
                  max_tokens=50)


@mcp.tool()
async def haiku(poem: Annotated[mcp_types.CreateMessageResult, Resolve(ask_for_a_haiku)]) -> str:
    """Samples the host's model in either revision family (sampling/createMessage or an input request)."""
    content = poem.content
    return f"model said: {getattr(content, 'text', '?')}"


@mcp.tool()
async def url_consent(url: str, ctx: Context) -> Any:
    """2026-07-28 only: a URL-mode input request; the retry tells the outcome."""
    answer = (ctx.input_responses or {}).get("u")
    if answer is not None:
        return f"url {answer.action}"
    request = mcp_types.ElicitRequest(params=mcp_types.ElicitRequestURLParams(mode="url", message="Connect", url=url))
    return mcp_types.InputRequiredResult(input_requests={"u": request})


@mcp.tool()
async def sign_in(secret: Annotated[Password, Resolve(ask_for_password)]) -> str:
    """Asks for a password (policy must block it) in either revision family."""
    return "signed in"


@mcp.tool()
def echo(text: str) -> str:
    return text


@mcp.tool()
def client_caps(ctx: Context) -> str:
    """What this upstream session was told in initialize."""
    params = ctx.request_context.session.client_params
    assert params is not None
    return json.dumps(
        {
            "capabilities": params.capabilities.model_dump(mode="json", exclude_none=True, by_alias=True),
            "protocolVersion": params.protocol_version,
        }
    )


@mcp.tool()
def request_headers(ctx: Context) -> str:
    """The HTTP headers this upstream received for this call."""
    return json.dumps({k.lower(): v for k, v in (ctx.headers or {}).items()})


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    result = await ctx.elicit("What is your name?", Name)
    data = result.data.name if result.action == "accept" else None  # type: ignore[union-attr]
    return json.dumps({"action": result.action, "name": data})


_in_flight = {"ask_and_wait": 0, "cancelled": 0, "slow_cancelled": 0}


@mcp.tool()
async def ask_and_wait(ctx: Context) -> str:
    """An elicitation whose call stays open until answered; counts itself while in flight."""
    _in_flight["ask_and_wait"] += 1
    try:
        result = await ctx.elicit("What is your name?", Name)
        return str(result.action)
    except asyncio.CancelledError:
        _in_flight["cancelled"] += 1
        raise
    finally:
        _in_flight["ask_and_wait"] -= 1


@mcp.tool()
async def announce(ctx: Context) -> str:
    """Tell the host, on the standalone stream, that the tool list changed."""
    await ctx.request_context.session.send_tool_list_changed()
    return "announced"


@mcp.tool()
async def ask_then_work(seconds: float, ctx: Context) -> str:
    """An elicitation, then `seconds` of work after the answer (the server's own time again)."""
    result = await ctx.elicit("What is your name?", Name)
    await asyncio.sleep(seconds)
    return str(result.action)


@mcp.tool()
def in_flight() -> str:
    """How many ask_and_wait calls are open, and how many were cancelled."""
    return json.dumps(_in_flight)


@mcp.tool()
async def elicit_raw(params_json: str, ctx: Context) -> str:
    """Send `elicitation/create` with exactly these params; return the host's answer or the error."""
    params: dict[str, Any] = json.loads(params_json)
    outbound = ctx.request_context.session._request_outbound  # test-only: raw params, no SDK validation
    try:
        result = await outbound.send_raw_request("elicitation/create", params, None)
    except Exception as exc:  # the gateway's JSON-RPC error surfaces here
        error = getattr(exc, "error", None)
        return json.dumps(
            {
                "error": {
                    "code": getattr(error, "code", None),
                    "message": getattr(error, "message", str(exc)),
                    "data": getattr(error, "data", None),
                }
            }
        )
    return json.dumps({"result": result})


@mcp.tool()
async def slow_echo(text: str, seconds: float, ctx: Context) -> str:
    await ctx.report_progress(0.5, 1.0, "half way")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _in_flight["slow_cancelled"] += 1
        raise
    return text


@mcp.tool()
async def die_mid_stream(ctx: Context) -> str:
    """Send a progress notification on the response stream, then kill the process."""
    await ctx.report_progress(0.1, 1.0, "about to die")
    await asyncio.sleep(0.2)
    os._exit(3)


_background: set[asyncio.Task[None]] = set()


@mcp.tool()
async def url_flow(url: str, elicitation_id: str, complete: str, delay: float, ctx: Context) -> str:
    """URL elicitation; on accept, send the completion on the request stream ("related"),
    the standalone stream ("standalone"), or not at all ("none")."""
    result = await ctx.elicit_url("Please sign in", url, elicitation_id)
    if result.action == "accept" and complete != "none":
        await asyncio.sleep(delay)
        related = ctx.request_id if complete == "related" else None
        await ctx.request_context.session.send_elicit_complete(elicitation_id, related)
    return result.action


@mcp.tool()
async def url_later(url: str, elicitation_id: str, delay: float, ctx: Context) -> str:
    """URL elicitation, then return at once; the completion follows later on the standalone stream."""
    result = await ctx.elicit_url("Please sign in", url, elicitation_id)
    session = ctx.request_context.session

    async def complete_later() -> None:
        await asyncio.sleep(delay)
        await session.send_elicit_complete(elicitation_id)

    task = asyncio.create_task(complete_later())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return result.action


@mcp.tool()
async def send_complete(elicitation_id: str, ctx: Context) -> str:
    """A completion notice for any id, on the standalone stream (forged or replayed ids)."""
    await ctx.request_context.session.send_elicit_complete(elicitation_id)
    return "sent"


@mcp.tool()
def url_required(entries_json: str) -> str:
    """Answer with -32042 listing these URL elicitations."""
    entries = [ElicitRequestURLParams.model_validate(e) for e in json.loads(entries_json)]
    raise UrlElicitationRequiredError(entries)


@mcp.tool()
async def die_during_elicitation(ctx: Context) -> str:
    """Ask the host a question, then die before the answer can arrive."""
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, os._exit, 4)
    result = await ctx.elicit("Still there?", Name)
    return str(result.action)


@mcp.tool()
def crash(note: str) -> str:
    """Write `note` to stderr, then exit at once: a server that crashes in the middle of a call."""
    sys.stderr.write(note + "\n")
    sys.stderr.flush()
    os._exit(1)


@mcp.tool()
def process_id() -> str:
    return str(os.getpid())


def main() -> None:
    if sys.argv[1] == "stdio":
        mcp.run("stdio")
        return
    port = int(sys.argv[1])
    app = mcp.sse_app() if ERA == "sse" else mcp.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
