"""A small example MCP host that answers elicitations on the terminal.

Usage:
    python examples/host.py [URL] [--tool NAME] [--args JSON] [--auto]

URL defaults to the gateway's demo endpoint, http://127.0.0.1:8808/servers/demo/mcp.
The host connects with the initialize handshake (protocol 2025-11-25), lists the
tools, calls one (default ``book_table``) and prints the result text.

Form elicitations are asked field by field with ``input()``; URL elicitations show
the URL and its host and ask for consent (the URL is never opened or fetched).
``--auto`` answers everything with fixed defaults, for scripted runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp import Client, types
from mcp.client.session import ClientRequestContext, IncomingMessage

DEFAULT_URL = "http://127.0.0.1:8808/servers/demo/mcp"
AUTO_STRINGS = {
    "date": "2026-12-01",
    "date-time": "2026-12-01T19:00:00Z",
    "email": "demo@example.com",
    "uri": "https://example.com/",
}

Answer = str | int | float | bool | list[str] | None


def out(text: str = "") -> None:
    print(text, flush=True)


async def ask(prompt: str) -> str:
    """input() in a worker thread, so the connection keeps being served while the user types."""
    try:
        return await anyio.to_thread.run_sync(input, prompt)
    except EOFError:
        return ""


def enum_choices(prop: dict[str, Any]) -> list[tuple[str, str]]:
    """(value, label) pairs of a single-select enum property ([] when it is not one)."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames") or prop["enum"]
        return [(str(v), str(n)) for v, n in zip(prop["enum"], names, strict=False)]
    if isinstance(prop.get("oneOf"), list):
        return [(str(o.get("const")), str(o.get("title", o.get("const")))) for o in prop["oneOf"] if "const" in o]
    return []


def multi_choices(prop: dict[str, Any]) -> list[tuple[str, str]]:
    """(value, label) pairs of a multi-select (type array) property."""
    items = prop.get("items") or {}
    if isinstance(items.get("enum"), list):
        return [(str(v), str(v)) for v in items["enum"]]
    if isinstance(items.get("anyOf"), list):
        return [(str(o.get("const")), str(o.get("title", o.get("const")))) for o in items["anyOf"] if "const" in o]
    return []


def auto_value(prop: dict[str, Any]) -> Answer:
    """The --auto answer: strings "demo", numbers 2, booleans true, first enum value, date 2026-12-01."""
    kind = prop.get("type")
    if kind == "array":
        choices = multi_choices(prop)
        return [choices[0][0]] if choices else []
    choices = enum_choices(prop)
    if choices:
        return choices[0][0]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        value = 2
        if isinstance(prop.get("minimum"), int | float) and value < prop["minimum"]:
            value = int(prop["minimum"]) if kind == "integer" else prop["minimum"]
        if isinstance(prop.get("maximum"), int | float) and value > prop["maximum"]:
            value = int(prop["maximum"]) if kind == "integer" else prop["maximum"]
        return value
    return AUTO_STRINGS.get(str(prop.get("format")), "demo")


async def ask_field(name: str, prop: dict[str, Any], required: bool) -> Answer:
    """Ask one form field until the answer parses; None means "left empty" (optional fields only)."""
    kind = prop.get("type", "string")
    label = prop.get("title") or name
    if prop.get("description"):
        out(f"  {label}: {prop['description']}")
    default = prop.get("default")
    hint = f" [default {json.dumps(default)}]" if default is not None else ("" if required else " [optional]")
    while True:
        if kind == "array":
            choices = multi_choices(prop)
            for i, (_, title) in enumerate(choices, 1):
                out(f"    {i}. {title}")
            raw = (await ask(f"  {label} (numbers, comma separated){hint}: ")).strip()
        elif enum_choices(prop):
            choices = enum_choices(prop)
            for i, (_, title) in enumerate(choices, 1):
                out(f"    {i}. {title}")
            raw = (await ask(f"  {label} (number){hint}: ")).strip()
        elif kind == "boolean":
            raw = (await ask(f"  {label} (y/n){hint}: ")).strip().lower()
        else:
            fmt = f", {prop['format']}" if prop.get("format") else ""
            raw = (await ask(f"  {label} ({kind}{fmt}){hint}: ")).strip()
        if not raw:
            if default is not None:
                return default  # type: ignore[no-any-return]
            if not required:
                return None
            out("    an answer is required")
            continue
        try:
            return parse_answer(kind, raw, prop)
        except ValueError as exc:
            out(f"    {exc}")


def parse_answer(kind: str, raw: str, prop: dict[str, Any]) -> Answer:
    if kind == "array":
        choices = multi_choices(prop)
        try:
            indexes = [int(part) - 1 for part in raw.split(",") if part.strip()]
        except ValueError:
            raise ValueError("numbers, comma separated") from None
        if any(not 0 <= i < len(choices) for i in indexes):
            raise ValueError(f"pick from 1..{len(choices)}")
        return [choices[i][0] for i in indexes]
    choices = enum_choices(prop)
    if choices:
        index = int(raw) - 1 if raw.isdigit() else -1
        if not 0 <= index < len(choices):
            raise ValueError(f"pick 1..{len(choices)}")
        return choices[index][0]
    if kind == "boolean":
        if raw in ("y", "yes", "true", "1"):
            return True
        if raw in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            number: int | float = int(raw) if kind == "integer" else float(raw)
        except ValueError:
            raise ValueError(f"not {'an integer' if kind == 'integer' else 'a number'}") from None
        if isinstance(prop.get("minimum"), int | float) and number < prop["minimum"]:
            raise ValueError(f"at least {prop['minimum']}")
        if isinstance(prop.get("maximum"), int | float) and number > prop["maximum"]:
            raise ValueError(f"at most {prop['maximum']}")
        return number
    return raw


def url_host(url: str) -> str:
    try:
        return urlsplit(url).hostname or "(no host)"
    except ValueError:
        return "(unparseable URL)"


class TerminalHost:
    """The elicitation callback and message handler, answering on the terminal (or automatically)."""

    def __init__(self, auto: bool) -> None:
        self.auto = auto
        self.completed: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        out()
        out(f"=== elicitation ({params.mode}) ===")
        out(params.message)
        if isinstance(params, types.ElicitRequestURLParams):
            return await self.url_consent(params)
        return await self.fill_form(params)

    async def url_consent(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        host = url_host(params.url)
        out(f"URL:  {params.url}")
        out(f"Host: {host}")
        if host.startswith("xn--") or ".xn--" in host or not host.isascii():
            out("WARNING: internationalised (punycode) host name; check it is the site you expect.")
        out(f"(elicitationId {params.elicitation_id}; this host never opens the URL itself)")
        if self.auto:
            out("--auto: consenting")
            return types.ElicitResult(action="accept")
        answer = (await ask(f"Open {host} in your browser yourself? [y/N/c=cancel] ")).strip().lower()
        if answer in ("y", "yes"):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="cancel" if answer == "c" else "decline")

    async def fill_form(self, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        schema = params.requested_schema
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        content: dict[str, Answer] = {}
        if self.auto:
            for name, prop in props.items():
                content[name] = auto_value(prop)
                out(f"  {prop.get('title') or name}: {json.dumps(content[name])}")
            out("--auto: accepting")
            return types.ElicitResult(action="accept", content=content)
        answer = (await ask("Answer this form? [Y/n=decline/c=cancel] ")).strip().lower()
        if answer in ("n", "no"):
            return types.ElicitResult(action="decline")
        if answer == "c":
            return types.ElicitResult(action="cancel")
        for name, prop in props.items():
            value = await ask_field(name, prop, name in required)
            if value is not None:
                content[name] = value
        return types.ElicitResult(action="accept", content=content)

    async def on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)
            out(f"*** elicitation complete: {message.params.elicitation_id}")
        elif isinstance(message, Exception):
            print(f"connection error: {message!r}", file=sys.stderr, flush=True)


def tool_arguments(tool: types.Tool | None, given: dict[str, Any]) -> dict[str, Any]:
    """The given arguments, plus --auto-style values for required ones that are missing."""
    args = dict(given)
    if tool is None:
        return args
    props: dict[str, Any] = tool.input_schema.get("properties") or {}
    for name in tool.input_schema.get("required") or []:
        if name not in args:
            args[name] = auto_value(props.get(name) or {})
    return args


def result_text(result: types.CallToolResult) -> str:
    parts = [c.text if isinstance(c, types.TextContent) else f"<{c.type} content>" for c in result.content]
    return "\n".join(parts)


async def run(url: str, tool_name: str, given: dict[str, Any], auto: bool) -> int:
    host = TerminalHost(auto)
    async with Client(
        url,
        mode="legacy",
        elicitation_callback=host.elicit,
        message_handler=host.on_message,
        client_info=types.Implementation(name="example-host", version="0.1.0"),
    ) as client:
        info = client.server_info
        out(f"connected to {url} ({info.name if info else 'unknown server'}, protocol {client.protocol_version})")
        tools = (await client.list_tools()).tools
        out("tools: " + ", ".join(t.name for t in tools))
        tool = next((t for t in tools if t.name == tool_name), None)
        if tool is None:
            out(f"no tool named {tool_name!r}")
            return 1
        out(f"calling {tool_name} ...")
        result = await client.call_tool(tool_name, tool_arguments(tool, given))
    out()
    out("=== result" + (" (error)" if result.is_error else "") + " ===")
    out(result_text(result))
    return 1 if result.is_error else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Example MCP host answering elicitations on the terminal.")
    parser.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"MCP endpoint (default {DEFAULT_URL})")
    parser.add_argument("--tool", default="book_table", help="tool to call (default book_table)")
    parser.add_argument("--args", default="{}", help='tool arguments as a JSON object, e.g. \'{"text": "hi"}\'')
    parser.add_argument("--auto", action="store_true", help="answer every elicitation with defaults, no prompts")
    ns = parser.parse_args(argv)
    try:
        given = json.loads(ns.args)
    except json.JSONDecodeError as exc:
        parser.error(f"--args is not JSON: {exc}")
    if not isinstance(given, dict):
        parser.error("--args must be a JSON object")
    try:
        return anyio.run(run, ns.url, ns.tool, given, ns.auto)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
            cause = cause.exceptions[0]
        print(f"host failed: {cause!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
