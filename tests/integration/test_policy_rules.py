"""Each policy rule through the real gateway, with the real SDK client and server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Proc, free_port, gateway, upstream_server
from mcp import Client
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ORIGIN_KEY = "dev.elicitation-gateway/origin"
STRICT = {"modes": ["form", "url"], "sensitive_fields": "block", "form_urls": "strip", "tag_origin": True}
SECRET = "hunter2-Sup3rSecret-answer"

NAME_FORM = {
    "mode": "form",
    "message": "Who are you?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]},
}
PASSWORD_FORM = {
    "mode": "form",
    "message": "Log in to continue",
    "requestedSchema": {"type": "object", "properties": {"pw": {"type": "string", "title": "Passwort"}}},
}
LINK_FORM = {
    "mode": "form",
    "message": "Read [the terms](https://evil.example/phish) first, or visit www.evil.example",
    "requestedSchema": {
        "type": "object",
        "properties": {"agree": {"type": "boolean", "title": "Agree", "description": "See https://x.evil.example/t"}},
    },
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("rules")
    with upstream_server(tmp) as up:
        url = up.base + "/mcp"
        servers = {
            "strict": (url, STRICT),
            "limited": (url, {**STRICT, "rate_limit": "2/minute"}),
            "monitor": (url, {**STRICT, "enforce": False}),
            "notag": (url, {**STRICT, "tag_origin": False}),
            "permissive": (url, {"modes": ["form"], "sensitive_fields": "allow", "form_urls": "allow"}),
        }
        with gateway(tmp, servers) as g:
            yield g


class Host:
    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.seen: list[Any] = []
        self.answer = answer

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.seen.append(params)
        if self.answer is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=self.answer)


async def elicit(gw: Proc, server: str, params: dict[str, Any], host: Host) -> dict[str, Any]:
    async with Client(f"{gw.base}/servers/{server}/mcp", mode="legacy", elicitation_callback=host) as client:
        result = await client.call_tool("elicit_raw", {"params_json": json.dumps(params)})
    block = result.content[0]
    assert isinstance(block, TextContent)
    out: dict[str, Any] = json.loads(block.text)
    return out


async def test_sensitive_form_is_blocked_and_never_reaches_host(gw: Proc) -> None:
    host = Host({"pw": "x"})
    out = await elicit(gw, "strict", PASSWORD_FORM, host)
    assert host.seen == []
    assert out["error"]["code"] == -32050
    assert "sensitive_fields" in out["error"]["message"]
    assert "password" in out["error"]["message"]


async def test_sensitive_rule_off_lets_it_through(gw: Proc) -> None:
    host = Host({"pw": "x"})
    out = await elicit(gw, "permissive", PASSWORD_FORM, host)
    assert out["result"]["action"] == "accept"
    assert len(host.seen) == 1


async def test_links_are_stripped_from_every_form_text(gw: Proc) -> None:
    host = Host({"agree": True})
    out = await elicit(gw, "strict", LINK_FORM, host)
    assert out["result"] == {"action": "accept", "content": {"agree": True}}
    [params] = host.seen
    assert "evil.example" not in params.message and "[link removed]" in params.message
    assert "the terms" in params.message  # markdown link text kept
    description = params.requested_schema["properties"]["agree"]["description"]
    assert "evil.example" not in description
    assert params.message.startswith("[strict] ")


async def test_links_kept_when_rule_is_off(gw: Proc) -> None:
    host = Host({"agree": True})
    await elicit(gw, "permissive", LINK_FORM, host)
    [params] = host.seen
    assert "https://evil.example/phish" in params.message


async def test_invalid_schema_is_blocked(gw: Proc) -> None:
    nested = {**NAME_FORM, "requestedSchema": {"type": "object", "properties": {
        "address": {"type": "object", "properties": {"street": {"type": "string"}}}}}}
    host = Host({})
    out = await elicit(gw, "strict", nested, host)
    assert host.seen == []
    assert "schema.invalid" in out["error"]["message"]


async def test_rate_limit_counts_blocked_attempts_and_says_when_to_retry(gw: Proc) -> None:
    host = Host({"name": "a"})
    first = await elicit(gw, "limited", PASSWORD_FORM, host)  # blocked, but counted
    assert "sensitive_fields" in first["error"]["message"]
    second = await elicit(gw, "limited", NAME_FORM, host)
    assert second["result"]["action"] == "accept"
    third = await elicit(gw, "limited", NAME_FORM, host)
    assert third["error"]["code"] == -32051
    assert "rate_limit" in third["error"]["message"]
    assert 0 < third["error"]["data"]["retryAfterSeconds"] <= 60
    assert len(host.seen) == 1


async def test_monitor_mode_changes_nothing_but_logs_the_decision(gw: Proc) -> None:
    host = Host({"pw": "x"})
    out = await elicit(gw, "monitor", PASSWORD_FORM, host)
    assert out["result"]["action"] == "accept"
    [params] = host.seen
    assert params.requested_schema == PASSWORD_FORM["requestedSchema"]
    assert params.meta[ORIGIN_KEY] == {"server": "monitor"}
    lines = [json.loads(x) for x in gw.output().splitlines() if '"elicitation.decision"' in x and '"monitor"' in x]
    assert any(x["decision"] == "block" and x["enforced"] is False and "sensitive_fields" in x["rules"] for x in lines)


async def test_origin_meta_always_and_prefix_only_with_tag_origin(gw: Proc) -> None:
    host = Host({"name": "n"})
    await elicit(gw, "notag", NAME_FORM, host)
    [params] = host.seen
    assert params.message == "Who are you?"
    assert params.meta[ORIGIN_KEY] == {"server": "notag"}


async def test_answer_outside_schema_is_dropped_and_wrong_type_rejected(gw: Proc) -> None:
    extra = await elicit(gw, "strict", NAME_FORM, Host({"name": "Ann", "ssn_extra": "123"}))
    assert extra["result"]["content"] == {"name": "Ann"}
    wrong = await elicit(gw, "strict", NAME_FORM, Host({"name": 42}))
    assert wrong["error"]["code"] == -32053
    assert "name" in wrong["error"]["message"]


async def test_decision_lines_follow_the_contract_and_secrets_never_logged(gw: Proc) -> None:
    await elicit(gw, "strict", NAME_FORM, Host({"name": SECRET}))
    await elicit(gw, "strict", NAME_FORM, Host({"name": SECRET, "other": SECRET}))
    await elicit(gw, "strict", NAME_FORM, Host({"name": 7}))
    await elicit(gw, "strict", LINK_FORM, Host({"agree": True}))
    log = gw.output()
    assert SECRET not in log
    decisions = [json.loads(x) for x in log.splitlines() if '"event":"elicitation.decision"' in x]
    assert decisions
    for line in decisions:
        assert {"event", "timestamp", "level", "server", "session", "mode", "decision", "rules"} <= set(line)
    modified = [d for d in decisions if d["decision"] == "modify"]
    assert modified and all("form_urls" in d["rules"] for d in modified)
    assert any("link" in change for d in modified for change in d["changes"])


async def test_state_unreachable_refuses_sessions_clearly(tmp_path: Path) -> None:
    """Sessions live in the state store: with it unreachable nothing is relayed, and the host is told why.
    (Redis going away under live sessions, and coming back, is tested in test_replicas.py.)"""
    state = {"backend": "redis", "url": f"redis://127.0.0.1:{free_port()}/0"}
    with upstream_server(tmp_path) as up, gateway(tmp_path, {"s": (up.base + "/mcp", {**STRICT, "rate_limit": "5/minute"})}, state) as g:
        host = Host({"name": "n"})
        with pytest.raises(Exception) as info:
            await elicit(g, "s", NAME_FORM, host)
        assert "gateway state unavailable" in repr(info.value)
        assert host.seen == []
        assert g.logged("state.unavailable")


async def test_redis_rate_limit_is_shared_by_two_replicas(tmp_path: Path) -> None:
    prefix = f"mcpgw-test-{uuid.uuid4().hex}:"
    state = {"backend": "redis", "url": "redis://127.0.0.1:6379/15", "key_prefix": prefix}
    policy = {**STRICT, "rate_limit": "2/minute"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with upstream_server(tmp_path) as up:
        servers = {"shared": (up.base + "/mcp", policy)}
        name = next(iter(servers))
        with gateway(tmp_path / "a", servers, state) as ga, gateway(tmp_path / "b", servers, state) as gb:
            host = Host({"name": "n"})
            results = [await elicit(g, name, NAME_FORM, host) for g in (ga, gb, ga)]
    assert [("result" in r) for r in results] == [True, True, False]
    assert results[2]["error"]["code"] == -32051
