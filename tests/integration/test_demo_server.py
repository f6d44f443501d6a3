"""The bundled demo server and the example host, talking directly (no gateway in between)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client, types
from mcp.client.session import ClientRequestContext, IncomingMessage

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "examples" / "host.py"
TOOLS = {"book_table", "connect_account", "ask_password", "ask_with_link", "echo"}


class Recorder:
    """An elicitation callback answering with a fixed action/content and remembering what it saw."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.requests: list[types.ElicitRequestParams] = []
        self.notifications: list[Any] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.requests.append(params)
        if self.action != "accept" or isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=self.content)

    async def on_message(self, message: IncomingMessage) -> None:
        self.notifications.append(message)


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(url: str, recorder: Recorder, tool: str, args: dict[str, Any] | None = None) -> str:
    with anyio.fail_after(20):
        async with Client(
            url, mode="legacy", elicitation_callback=recorder.elicit, message_handler=recorder.on_message
        ) as client:
            return text_of(await client.call_tool(tool, args or {}))


@pytest.mark.anyio
async def test_lists_tools_and_echoes(demo_server_url: str) -> None:
    recorder = Recorder()
    with anyio.fail_after(20):
        async with Client(demo_server_url, mode="legacy", elicitation_callback=recorder.elicit) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None and client.server_info.name == "demo"
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == TOOLS
            assert text_of(await client.call_tool("echo", {"text": "hello gateway"})) == "hello gateway"
    assert recorder.requests == []


@pytest.mark.anyio
async def test_book_table_accept(demo_server_url: str) -> None:
    recorder = Recorder(content={"name": "Ada", "party_size": 3, "date": "2026-12-01", "outdoor": True})
    text = await call(demo_server_url, recorder, "book_table")
    assert text == "Booked a table for 3 under 'Ada' on 2026-12-01 (outdoor seating)."

    [params] = recorder.requests
    assert isinstance(params, types.ElicitRequestFormParams)
    props = params.requested_schema["properties"]
    assert props["name"]["type"] == "string"
    assert props["party_size"]["type"] == "integer"
    assert props["date"] == {**props["date"], "type": "string", "format": "date"}
    assert props["outdoor"]["type"] == "boolean"
    assert props["outdoor"]["title"] == "Outdoor seating"
    assert set(params.requested_schema["required"]) == {"name", "party_size", "date"}


@pytest.mark.anyio
@pytest.mark.parametrize(("action", "expected"), [("decline", "declined"), ("cancel", "cancelled")])
async def test_book_table_decline_and_cancel(demo_server_url: str, action: str, expected: str) -> None:
    assert await call(demo_server_url, Recorder(action), "book_table") == expected


@pytest.mark.anyio
async def test_connect_account_url_mode_and_completion(demo_server_url: str) -> None:
    recorder = Recorder()
    text = await call(demo_server_url, recorder, "connect_account")

    [params] = recorder.requests
    assert isinstance(params, types.ElicitRequestURLParams)
    url = urlsplit(params.url)
    assert (url.scheme, url.hostname, url.path) == ("https", "auth.example.com", "/connect")
    assert url.query.startswith("session=") and len(url.query) > len("session=")
    assert params.elicitation_id
    completes = [n for n in recorder.notifications if isinstance(n, types.ElicitCompleteNotification)]
    assert [n.params.elicitation_id for n in completes] == [params.elicitation_id]
    assert params.elicitation_id in text

    # A fresh id and URL every time.
    again = Recorder()
    await call(demo_server_url, again, "connect_account")
    other = again.requests[0]
    assert isinstance(other, types.ElicitRequestURLParams)
    assert other.elicitation_id != params.elicitation_id and other.url != params.url


@pytest.mark.anyio
async def test_connect_account_declined_sends_no_completion(demo_server_url: str) -> None:
    recorder = Recorder("decline")
    assert await call(demo_server_url, recorder, "connect_account") == "declined"
    assert not [n for n in recorder.notifications if isinstance(n, types.ElicitCompleteNotification)]


@pytest.mark.anyio
async def test_ask_password_form(demo_server_url: str) -> None:
    recorder = Recorder(content={"password": "hunter2"})
    text = await call(demo_server_url, recorder, "ask_password")
    assert text == "password received"
    assert "hunter2" not in text
    [params] = recorder.requests
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.requested_schema["properties"]["password"] == {
        **params.requested_schema["properties"]["password"],
        "type": "string",
        "format": "password",
    }


@pytest.mark.anyio
async def test_ask_with_link_form(demo_server_url: str) -> None:
    recorder = Recorder(content={"agree": True})
    assert await call(demo_server_url, recorder, "ask_with_link") == "agreed to the terms"
    [params] = recorder.requests
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.message == "Read the terms at https://example.com/terms before you confirm"
    assert params.requested_schema["properties"]["agree"]["type"] == "boolean"


def run_host(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOST), url, *args],
        capture_output=True,
        text=True,
        timeout=40,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_example_host_auto_book_table(demo_server_url: str) -> None:
    proc = run_host(demo_server_url, "--auto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "tools: " in out and all(name in out for name in TOOLS)
    assert "Book a table: who, how many, which day?" in out
    assert "Booked a table for 2 under 'demo' on 2026-12-01 (outdoor seating)." in out


def test_example_host_auto_url_mode(demo_server_url: str) -> None:
    proc = run_host(demo_server_url, "--tool", "connect_account", "--auto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Host: auth.example.com" in out
    assert "*** elicitation complete: " in out
    elicitation_id = out.split("*** elicitation complete: ", 1)[1].split()[0]
    assert f"Account connected (elicitation {elicitation_id} completed)." in out


def test_example_host_echo_and_unknown_tool(demo_server_url: str) -> None:
    proc = run_host(demo_server_url, "--tool", "echo", "--args", '{"text": "ping"}', "--auto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("ping")
    proc = run_host(demo_server_url, "--tool", "nope", "--auto")
    assert proc.returncode == 1
    assert "no tool named 'nope'" in proc.stdout


def test_demo_server_logs_to_stderr_only(demo_server: Any, demo_server_url: str) -> None:
    assert run_host(demo_server_url, "--tool", "echo", "--auto").returncode == 0
    # demo_server is conftest.DemoServer (not imported: conftest modules are not importable by name)
    assert demo_server.stdout() == ""
    assert "POST /mcp" in demo_server.stderr()
