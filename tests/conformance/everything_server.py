"""Reference server for the MCP conformance suite's server scenarios, written for this project.

One endpoint (`/mcp`) serves both protocol eras: the SDK routes a request by its
`MCP-Protocol-Version` header (absent or a handshake version: the 2025 session path;
`2026-07-28`: the stateless path). Each tool, prompt and resource below is the one a
scenario of `@modelcontextprotocol/conformance` names, shaped as that scenario's text
asks. Two families exist because the eras ask for input differently:

* 2025-11-25 tools (`test_elicitation*`, `test_sampling`, `test_reconnection`) send a
  request to the client mid-call over the session's SSE stream;
* 2026-07-28 tools (`test_input_required_result_*`) answer with an
  `InputRequiredResult` and finish when the client retries with `inputResponses`.
  `MCPServer` seals every `requestState` it sends (and refuses a tampered one), so the
  handlers below see their own plaintext state on the retry.

Run: python everything_server.py PORT
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.shared.exceptions import MCPError
from mcp.types import (
    AudioContent,
    CallToolResult,
    ClientCapabilities,
    Completion,
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    JSONRPCMessage,
    ListRootsResult,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

SSE_RETRY_MS = 100
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021

# A 1x1 PNG and a 10-sample silent WAV, small enough to inline.
PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2d4a6e40000000049454e44ae426082"
    )
).decode()
WAV_SILENCE = base64.b64encode(
    b"RIFF" + (36 + 20).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    + b"data" + (20).to_bytes(4, "little") + bytes(20)
).decode()

mcp = MCPServer("conformance-reference", version="1.0.0")


class MemoryEventStore(EventStore):
    """All events in arrival order; a replay resends the later events of the same stream."""

    def __init__(self) -> None:
        self._events: list[tuple[EventId, StreamId, JSONRPCMessage | None]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{stream_id}_{next(self._ids)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        start = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if start is None:
            return None
        stream_id = self._events[start][1]
        for eid, sid, message in self._events[start + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream_id


def _text(text: str) -> list[TextContent]:
    return [TextContent(type="text", text=text)]


def _input_required(requests: dict[str, Any], state: str | None = None) -> InputRequiredResult:
    wire: dict[str, Any] = {"inputRequests": requests}
    if state is not None:
        wire["requestState"] = state
    return InputRequiredResult.model_validate(wire)


def _form(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def _sampling(text: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


ROOTS_REQUEST: dict[str, Any] = {"method": "roots/list", "params": {}}


def _accepted(responses: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer under `key`, else None."""
    answer = (responses or {}).get(key)
    if isinstance(answer, ElicitResult) and answer.action == "accept":
        return dict(answer.content or {})
    return None


# --- tools for both eras -------------------------------------------------------------------------


@mcp.tool()
def test_simple_text() -> str:
    """Returns one fixed text block."""
    return "This is a simple text response for testing."


@mcp.tool()
def test_image_content() -> CallToolResult:
    """Returns a 1x1 PNG image block."""
    return CallToolResult(content=[ImageContent(type="image", data=PNG_1X1, mime_type="image/png")])


@mcp.tool()
def test_audio_content() -> CallToolResult:
    """Returns a short silent WAV audio block."""
    return CallToolResult(content=[AudioContent(type="audio", data=WAV_SILENCE, mime_type="audio/wav")])


@mcp.tool()
def test_embedded_resource() -> CallToolResult:
    """Returns an embedded text resource."""
    resource = TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=resource)])


@mcp.tool()
def test_multiple_content_types() -> CallToolResult:
    """Returns text, image and embedded resource blocks."""
    resource = TextResourceContents(
        uri="test://mixed-content-resource", mime_type="application/json", text=json.dumps({"test": "data", "value": 123})
    )
    return CallToolResult(
        content=[
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]
    )


@mcp.tool()
def test_error_handling() -> CallToolResult:
    """Always fails, as a tool result with isError set."""
    return CallToolResult(content=_text("This tool intentionally returns an error for testing"), is_error=True)


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 (when the request carries a progress token)."""
    for step, value in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(value, 100)
    return "Progress tool completed"


# --- 2025-11-25 tools: requests to the client during the call ------------------------------------


@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages while running."""
    for step, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if step:
            await asyncio.sleep(0.05)
        await ctx.session.send_log_message(level="info", data=text, related_request_id=ctx.request_id)
    return "Logging tool completed"


@mcp.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to answer `prompt` (sampling/createMessage)."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = result.content
    return f"LLM response: {content.text if isinstance(content, TextContent) else content}"


async def _elicit(ctx: Context, message: str, properties: dict[str, Any], required: list[str]) -> ElicitResult:
    schema = {"type": "object", "properties": properties, "required": required}
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


@mcp.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address (form elicitation)."""
    if ctx.client_capabilities is None or ctx.client_capabilities.elicitation is None:
        raise MCPError(code=-32602, message="client did not declare elicitation")
    result = await _elicit(
        ctx,
        message,
        {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        ["username", "email"],
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """A form whose every primitive field carries a default (SEP-1034)."""
    result = await _elicit(
        ctx,
        "Please review your details",
        {
            "name": {"type": "string", "description": "Name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Age", "default": 30},
            "score": {"type": "number", "description": "Score", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
        [],
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """A form with the five enum shapes of SEP-1330."""
    result = await _elicit(
        ctx,
        "Please pick some options",
        {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        [],
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream before answering: the answer arrives after the client resumes (SEP-1699)."""
    await ctx.close_sse_stream()
    await asyncio.sleep(SSE_RETRY_MS * 3 / 1000)
    return "Reconnection test completed"


# --- 2026-07-28 tools: InputRequiredResult and a retry (SEP-2322) --------------------------------


@mcp.tool()
def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Round 1 asks for a name under key user_name; the retry that answers it greets the user."""
    content = _accepted(ctx.input_responses, "user_name")
    if content is None or not isinstance(content.get("name"), str):
        return _input_required(
            {"user_name": _form("What is your name?", {"name": {"type": "string"}}, ["name"])}
        )
    return f"Hello, {content['name']}!"


@mcp.tool()
def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    """Round 1 asks the client's model a question; the retry returns its answer."""
    answer = (ctx.input_responses or {}).get("capital_question")
    if not isinstance(answer, CreateMessageResult):
        return _input_required({"capital_question": _sampling("What is the capital of France?", 100)})
    content = answer.content
    return f"Sampling answered: {content.text if isinstance(content, TextContent) else content}"


@mcp.tool()
def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    """Round 1 asks for the client's roots; the retry lists them."""
    answer = (ctx.input_responses or {}).get("client_roots")
    if not isinstance(answer, ListRootsResult):
        return _input_required({"client_roots": ROOTS_REQUEST})
    return "Roots: " + ", ".join(str(root.uri) for root in answer.roots)


REQUEST_STATE = "request-state-v1"


@mcp.tool()
def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    """Round 1 sends a requestState; the retry must echo it (the text then says state-ok)."""
    content = _accepted(ctx.input_responses, "confirm")
    if content is None or ctx.request_state != REQUEST_STATE:
        return _input_required(
            {"confirm": _form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}, REQUEST_STATE
        )
    return f"state-ok: confirmed={content.get('ok')}"


@mcp.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    """Round 1 asks for an elicitation, a sampling and the roots at once, with a requestState."""
    responses = ctx.input_responses or {}
    name = _accepted(responses, "user_name")
    greeting = responses.get("greeting")
    roots = responses.get("client_roots")
    if (
        ctx.request_state != "multiple-inputs"
        or name is None
        or not isinstance(greeting, CreateMessageResult)
        or not isinstance(roots, ListRootsResult)
    ):
        return _input_required(
            {
                "user_name": _form("What is your name?", {"name": {"type": "string"}}, ["name"]),
                "greeting": _sampling("Generate a greeting", 50),
                "client_roots": ROOTS_REQUEST,
            },
            "multiple-inputs",
        )
    return f"All inputs received: name={name.get('name')}, roots={len(roots.roots)}"


@mcp.tool()
def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    """Three rounds: a name, then a colour (a new requestState each time), then the answer."""
    responses = ctx.input_responses
    step1 = {"step1": _form("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])}
    if ctx.request_state is None or not ctx.request_state.startswith("round-"):
        return _input_required(step1, "round-1")
    if ctx.request_state == "round-1":
        name = _accepted(responses, "step1")
        if name is None:
            return _input_required(step1, "round-1")
        state = "round-2:" + json.dumps({"name": name.get("name")})
        step2 = _form("Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])
        return _input_required({"step2": step2}, state)
    color = _accepted(responses, "step2")
    if color is None:
        return _input_required(step1, "round-1")
    earlier = json.loads(ctx.request_state.split(":", 1)[1])
    return f"{earlier.get('name')} likes {color.get('color')}"


@mcp.tool()
def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    """Round 1 sends a requestState (sealed by the SDK); a retry with a tampered one is refused."""
    if ctx.request_state != "tamper-check" or _accepted(ctx.input_responses, "confirm") is None:
        return _input_required(
            {"confirm": _form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}, "tamper-check"
        )
    return "state verified"


@mcp.tool()
def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    """Asks only for what the request's declared client capabilities allow."""
    caps = ctx.client_capabilities or ClientCapabilities()
    requests: dict[str, Any] = {}
    if caps.elicitation is not None:
        requests["user_name"] = _form("What is your name?", {"name": {"type": "string"}}, ["name"])
    if caps.sampling is not None:
        requests["greeting"] = _sampling("Generate a greeting", 50)
    if caps.roots is not None:
        requests["client_roots"] = ROOTS_REQUEST
    if not requests or ctx.input_responses:
        return "capabilities respected"
    return _input_required(requests)


# Diagnostic tools of `server-stateless` (2026-07-28).


@mcp.tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs the sampling capability; refuses with -32021 when the request did not declare it."""
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="Missing required client capability: sampling",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return "sampling declared"


@mcp.tool()
def test_streaming_elicitation() -> InputRequiredResult:
    """Asks for input the 2026 way (never as a request on the response stream)."""
    return _input_required({"user_name": _form("What is your name?", {"name": {"type": "string"}}, ["name"])})


@mcp.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs one message; the SDK only sends it when the request opted in with a log level."""
    await ctx.session.send_log_message(level="info", data="logging tool ran", related_request_id=ctx.request_id)
    return "logged"


@mcp.tool()
async def test_trigger_tool_change(ctx: Context) -> str:
    """Publishes a tools list-changed event to subscriptions/listen streams."""
    await ctx.notify_tools_changed()
    return "tools changed"


@mcp.tool()
async def test_trigger_prompt_change(ctx: Context) -> str:
    """Publishes a prompts list-changed event to subscriptions/listen streams."""
    await ctx.notify_prompts_changed()
    return "prompts changed"


# --- prompts ---------------------------------------------------------------------------------------


@mcp.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    """A prompt that embeds the resource named by resourceUri."""
    resource = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [
        {"role": "user", "content": {"type": "resource", "resource": resource}},
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[dict[str, Any]]:
    """A prompt carrying an image."""
    return [
        {"role": "user", "content": {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


@mcp.prompt()
def test_input_required_result_prompt(ctx: Context) -> str | InputRequiredResult:
    """2026-07-28: asks for context first (InputRequiredResult), then renders the prompt."""
    content = _accepted(ctx.input_responses, "user_context")
    if content is None:
        return _input_required(
            {
                "user_context": _form(
                    "What context should the prompt use?", {"context": {"type": "string"}}, ["context"]
                )
            }
        )
    return f"Prompt rendered with context: {content.get('context')}"


# --- resources -------------------------------------------------------------------------------------


@mcp.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", description="A static PNG", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG_1X1)


@mcp.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to")
def watched_resource() -> str:
    return "Watched resource content."


@mcp.resource(
    "test://template/{id}/data", name="template-data", description="Data by id", mime_type="application/json"
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.completion()
async def complete(ref: Any, argument: Any, context: Any) -> Completion:
    candidates = ["paris", "park", "party"]
    return Completion(values=[c for c in candidates if c.startswith(argument.value)] or candidates, has_more=False)


# The 2025 methods MCPServer has no decorator for: resources/subscribe, resources/unsubscribe and
# logging/setLevel. They only need to answer {} for the scenarios.
_subscriptions: set[str] = set()


async def _subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
    _subscriptions.add(str(params.uri))
    return EmptyResult()


async def _unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
    _subscriptions.discard(str(params.uri))
    return EmptyResult()


async def _set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


mcp._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, _subscribe)
mcp._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, _unsubscribe)
mcp._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)


def main() -> None:
    port = int(sys.argv[1])
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp", event_store=MemoryEventStore(), retry_interval=SSE_RETRY_MS, host="127.0.0.1"
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
