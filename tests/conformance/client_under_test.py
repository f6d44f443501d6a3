"""The client the conformance suite's client scenarios test: the `mcp` SDK `Client`, either pointed
straight at the suite's test server or at a real gateway process placed in front of it.

The suite runs `python client_under_test.py [--via-gateway] <server-url>` (it appends the URL) with
`MCP_CONFORMANCE_SCENARIO` and `MCP_CONFORMANCE_PROTOCOL_VERSION` set. 2025-11-25 connects with the
initialize handshake (`mode="legacy"`); 2026-07-28 lets the client negotiate (`mode="auto"`), which
is what the `request-metadata` scenario's version retry needs.

With `--via-gateway` a gateway is started for that URL (one server `suite`), the client talks to
`/servers/suite/mcp`, and the gateway is stopped afterwards. Exit status: 0 when every call of the
scenario returned, 1 otherwise (the reason goes to stderr, which the suite keeps in stderr.txt).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import (
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from gateway_harness import gateway  # noqa: E402 - the integration tests' process starter

# What the gateway allows the suite's server: both modes, and the default policy otherwise.
GATEWAY_POLICY: dict[str, Any] = {"modes": ["form", "url"], "sensitive_fields": "block"}
CALL_TIMEOUT_S = 20.0


def _value_for(schema: dict[str, Any]) -> Any:
    """What a user who accepts the form's defaults would submit for one property."""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("oneOf", "anyOf"):
        if schema.get(key):
            return schema[key][0].get("const")
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        return 1
    if kind == "array":
        return []
    return "conformance"


async def on_elicit(context: Any, params: Any) -> ElicitResult:
    if getattr(params, "mode", "form") == "url":
        return ElicitResult(action="accept")
    properties = (params.requested_schema or {}).get("properties", {})
    return ElicitResult(action="accept", content={name: _value_for(s) for name, s in properties.items()})


async def on_sample(context: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="conformance answer"), model="conformance-model"
    )


async def on_roots(context: Any) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///conformance/root", name="conformance root")])  # type: ignore[arg-type]


async def _tools_call(client: Client) -> None:
    await client.list_tools()
    await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def _list_only(client: Client) -> None:
    await client.list_tools()


async def _elicitation_defaults(client: Client) -> None:
    await client.call_tool("test_client_elicitation_defaults", {})


async def _sse_retry(client: Client) -> None:
    await client.call_tool("test_reconnection", {})


async def _request_state(client: Client) -> None:
    errors: list[str] = []
    for tool in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"):
        try:
            await client.call_tool(tool, {})
        except Exception as exc:  # report every tool, not only the first failing one
            errors.append(f"{tool}: {type(exc).__name__}: {exc}")
    if errors:
        raise RuntimeError("; ".join(errors))


SCENARIOS: dict[str, Callable[[Client], Awaitable[None]]] = {
    "initialize": _list_only,
    "tools_call": _tools_call,
    "elicitation-sep1034-client-defaults": _elicitation_defaults,
    "sse-retry": _sse_retry,
    "request-metadata": _tools_call,
    "sep-2322-client-request-state": _request_state,
}


async def drive(url: str, scenario: str, version: str) -> None:
    mode = "legacy" if version < "2026-07-28" else "auto"
    async with Client(
        url,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
    ) as client:
        await asyncio.wait_for(SCENARIOS[scenario](client), CALL_TIMEOUT_S)


def main(argv: list[str]) -> int:
    via_gateway = "--via-gateway" in argv
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    if scenario not in SCENARIOS:
        print(f"client_under_test: no driver for scenario {scenario!r}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        target = url
        if via_gateway:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="conformance-client-")))
            proc = stack.enter_context(gateway(tmp, {"suite": (url, GATEWAY_POLICY)}))
            target = f"{proc.base}/servers/suite/mcp"
        try:
            asyncio.run(drive(target, scenario, version))
        except BaseException:
            traceback.print_exc()
            if via_gateway:
                print("---- gateway log (tail) ----\n" + proc.output()[-4000:], file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
