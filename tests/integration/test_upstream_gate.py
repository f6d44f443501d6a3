"""Every shape a hostile server can use to slip past the policy, through the real gateway.

The upstream is a raw aiohttp server that sends what an SDK server never would; the
host is the real SDK client. For each shape: the host never sees it unchecked, the
server learns what was refused where a request was refused, and the session keeps working.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_harness import HERE, Proc, free_port, gateway, received_by, running, text_of
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

pytestmark = pytest.mark.anyio

POLICY = {"modes": ["form", "url"], "url_mode": {"allowed_hosts": ["auth.example.com"]}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, Proc]]:
    tmp = tmp_path_factory.mktemp("hostile")
    port = free_port()
    with running([sys.executable, str(HERE / "hostile_upstream.py"), str(port)], port, tmp / "hostile.log") as up:
        with gateway(tmp, {"hostile": (up.base + "/mcp", POLICY)}) as gw:
            yield up, gw


async def call(gw: Proc, scenario: str) -> tuple[Any, list[Any]]:
    seen: list[Any] = []

    async def host(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "x"})

    async with Client(f"{gw.base}/servers/hostile/mcp", mode="legacy", elicitation_callback=host) as client:
        try:
            result: Any = await client.call_tool(scenario, {})
        except MCPError as exc:
            result = exc.error
    return result, seen


received = received_by
text = text_of


async def test_elicitation_without_an_id_never_reaches_the_host(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    result, seen = await call(gw, "elicit_without_id")
    assert text(result) == "end" and seen == []
    assert gw.logged('"reason":"server request sent without an id"')


async def test_elicitations_inside_a_json_array_are_each_policed(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    result, seen = await call(gw, "elicit_in_array")
    assert text(result) == "end" and seen == []  # the password form is blocked, the id-less one refused
    [refusal] = [m for m in await received(up) if m.get("id") == 41]
    assert refusal["error"]["code"] == -32050 and "sensitive_fields" in refusal["error"]["message"]


async def test_a_string_error_code_never_passes_as_url_elicitation_required(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    error, seen = await call(gw, "string_code")
    assert error.code == -32011 and error.data is None and seen == []
    assert "evil.example" not in error.message


async def test_a_url_required_entry_that_says_form_is_judged_as_url_mode(env: tuple[Proc, Proc]) -> None:
    _, gw = env
    error, _ = await call(gw, "form_entry")
    assert error.code == -32050  # its https://evil.example target is not an allowed host
    assert gw.logged('"rules":["url_mode.target"]')


async def test_a_message_too_deep_to_re_encode_fails_alone(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    result, seen = await call(gw, "too_deep")
    assert text(result) == "end" and seen == []
    [refusal] = [m for m in await received(up) if m.get("id") == 42]
    assert refusal["error"]["code"] == -32602 and "nested too deeply" in refusal["error"]["message"]


async def test_an_elicitation_whose_mode_is_an_object_is_refused_not_crashed(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    result, seen = await call(gw, "mode_is_object")
    assert text(result) == "end" and seen == []
    [refusal] = [m for m in await received(up) if m.get("id") == 46]
    assert refusal["error"]["code"] == -32602 and "not offered" in refusal["error"]["message"]


async def test_unknown_requests_foreign_responses_and_unknown_notifications_are_refused(env: tuple[Proc, Proc]) -> None:
    up, gw = env
    for scenario in ("unknown_request", "foreign_response", "unknown_notification"):
        result, seen = await call(gw, scenario)
        assert text(result) == "end" and seen == []
    [refusal] = [m for m in await received(up) if m.get("id") == 43]
    assert refusal["error"]["code"] == -32601
    log = gw.output()
    for event in ("upstream.request_refused", "upstream.response_dropped", "upstream.notification_dropped"):
        assert f'"event":"{event}"' in log
    assert "stolen" not in log
