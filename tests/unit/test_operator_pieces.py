"""Operator pieces in isolation: spans (in-memory exporter), the admin credential, the decision feed,
config keys, the CLI's version, schema and one-line errors, explain's rule locations."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway import tracing
from gateway.admin_feed import DecisionFeed
from gateway.config import AdminConfig, TracingConfig
from gateway.config_reference import reference_text
from gateway.elicitation_gate import ElicitationGate
from gateway.metrics import era_label
from gateway.policy.engine import Decision
from gateway.policy.policy_config import ElicitationPolicy
from gateway.policy.schema_export import policy_schema_text
from gateway.state.errors import StateUnavailable
from gateway.state.memory_store import MemoryStateStore

REPO = Path(__file__).resolve().parents[2]
LINK_FORM = {
    "mode": "form", "message": "See https://evil.example/x",
    "requestedSchema": {"type": "object", "properties": {"nick": {"type": "string", "default": "Zed-Value"}}},
}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert tracing.configure(None, exporter)
    yield exporter
    tracing.shutdown()


@pytest.mark.anyio
async def test_policy_span_carries_rule_ids_and_nests_under_the_request(spans: InMemorySpanExporter) -> None:
    gate = ElicitationGate("crm", ElicitationPolicy(), None)
    with tracing.span("mcpgw.host_request", server="crm"):
        decision = await gate.decide(LINK_FORM, session="s", user="u")
        headers: dict[str, str] = {}
        tracing.inject(headers)
    assert decision.decision == "modify"
    policy, request = spans.get_finished_spans()
    assert policy.name == "mcpgw.policy" and request.name == "mcpgw.host_request"
    assert policy.attributes is not None and tuple(policy.attributes["mcpgw.rules"]) == ("form_urls",)
    assert policy.attributes["mcpgw.decision"] == "modify"
    assert policy.parent is not None and policy.parent.span_id == request.context.span_id
    assert headers["traceparent"].split("-")[1] == f"{request.context.trace_id:032x}"
    assert "Zed-Value" not in json.dumps(dict(policy.attributes)) and "evil" not in json.dumps(dict(policy.attributes))


def test_a_callers_traceparent_is_continued(spans: InMemorySpanExporter) -> None:
    parent = {"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    with tracing.span("mcpgw.host_request", parent_headers=parent):
        tracing.annotate(method="tools/call", skipped=None)
    [span] = spans.get_finished_spans()
    assert f"{span.context.trace_id:032x}" == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert span.attributes == {"mcpgw.method": "tools/call"}


def test_tracing_off_costs_nothing_and_adds_no_header() -> None:
    assert not tracing.configure(TracingConfig())
    assert not tracing.enabled()
    headers: dict[str, str] = {}
    with tracing.span("x") as span:
        tracing.inject(headers)
        tracing.annotate(a=1)
    assert span is None and headers == {}


def test_tracing_config_needs_an_http_endpoint() -> None:
    with pytest.raises(ValueError, match="otlp_endpoint"):
        TracingConfig(otlp_endpoint="grpc://collector:4317")
    assert tracing.configure(TracingConfig(otlp_endpoint="http://127.0.0.1:9/v1/traces"))
    tracing.shutdown()


def test_admin_config() -> None:
    """The admin page's switch and ring size live beside the admin credential (hashed API keys)."""
    assert AdminConfig().enabled is False
    with pytest.raises(ValueError, match="scrypt"):
        AdminConfig(enabled=True, api_keys=("plain-text-token",))


def test_feed_keeps_names_and_counts_never_values() -> None:
    feed = DecisionFeed(size=10)
    many = {"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {
        f"f{i}": {"type": "string", "default": "Zed-Value"} for i in range(20)}}}
    for i in range(15):
        feed.record("a" if i % 2 else "b", "form", Decision("allow" if i % 3 else "block", (), "r", None), many)
    assert len(feed.all()) == 10 and feed.total == 15
    newest = feed.latest(limit=1)[0]
    assert newest.field_count == 20 and len(newest.field_names) == 12 and "Zed-Value" not in repr(newest)
    assert {e.server for e in feed.latest(server="a")} == {"a"}
    assert {e.decision for e in feed.latest(decision="block")} == {"block"}
    buckets = feed.per_minute(feed.all(), minutes=5, now=newest.at)
    assert len(buckets) == 5 and sum(buckets[-1].values()) == 10 and sum(buckets[0].values()) == 0
    assert feed.per_minute(feed.all(), minutes=5, now=newest.at + 3600) == [dict.fromkeys(("allow", "modify", "block"), 0)] * 5


@pytest.mark.anyio
async def test_feed_publishes_to_the_store_and_falls_back_to_its_own_ring_when_the_store_is_down() -> None:
    store = MemoryStateStore()
    feed = DecisionFeed(size=10, store=store)
    other = DecisionFeed(size=10, store=store)  # another replica on the same store
    form = {"mode": "form", "requestedSchema": {"type": "object", "properties": {"pw": {"default": "Zed-Value"}}}}
    feed.start()
    other.start()
    feed.record("a", "form", Decision("block", ("sensitive_fields",), "r", None), form)
    other.record("b", "form", Decision("allow", (), "r", None), form)
    for _ in range(50):
        await asyncio.sleep(0.01)
        shared = await feed.shared()
        if shared is not None and len(shared) == 2:
            break
    assert shared is not None and [e.server for e in feed.latest(entries=shared)] == ["b", "a"]
    assert b"Zed-Value" not in b"".join(await store.recent_decisions(10))

    async def down(limit: int) -> list[bytes]:
        raise StateUnavailable("down")

    store.recent_decisions = down  # type: ignore[method-assign]
    assert await feed.shared() is None and [e.server for e in feed.latest()] == ["a"]
    await feed.stop()
    await other.stop()


def test_era_labels_are_a_fixed_set() -> None:
    assert [era_label(v) for v in ("2025-03-26", "2025-11-25", "2026-07-28", None, "x" * 100)] == [
        "2025", "2025", "2026", "unknown", "unknown"]


def test_configuration_reference_is_fresh() -> None:
    assert (REPO / "docs/configuration.md").read_text(encoding="utf-8") == reference_text()


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_version_and_policy_schema() -> None:
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("elicitation-gateway 0.")
    schema = cli("policies", "schema")
    assert schema.returncode == 0 and schema.stdout == policy_schema_text()
    assert json.loads(schema.stdout)["title"] == "mcp-elicitation-gateway policy file"


@pytest.mark.parametrize("args", [("serve",), ("nope",), ("check", "--config"), ("policies",), ("serve", "--config", "x",
                                  "--log-format", "xml"), ("check", "--config", "/nonexistent.yaml")])
def test_errors_are_one_line_and_non_zero(args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == ""


def test_serve_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "gw.yaml").write_text("logging: {level: error}\nservers: {a: {url: 'http://127.0.0.1:9/mcp'}}\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--config", str(tmp_path / "gw.yaml"), "--port", str(port), "--log-format", "json")
    assert result.returncode == 1
    # The unauthenticated-mode banner comes first; the error itself is one line, the last.
    errors = [line for line in result.stderr.strip().splitlines() if line.startswith("elicitation-gateway:")]
    assert len(errors) == 1 and errors[0].startswith("elicitation-gateway: cannot serve:"), result.stderr
    assert result.stderr.strip().splitlines()[-1] == errors[0]


def test_explain_shows_the_rule_text_and_the_field_path(tmp_path: Path) -> None:
    (tmp_path / "gw.yaml").write_text(f"servers: {{crm: {{url: 'http://127.0.0.1:1/mcp', policy: {REPO / 'policies/default.yaml'}}}}}")
    password = {"message": "Log in", "requestedSchema": {"type": "object", "properties": {"pw": {"type": "string", "title": "Password"}}}}
    lines = "\n".join(json.dumps(x) for x in (password, LINK_FORM, {"mode": "url", "message": "m", "url": "http://x.example/", "elicitationId": "1"}))
    result = cli("explain", "--config", str(tmp_path / "gw.yaml"), "--server", "crm", "-", stdin=lines)
    blocked, modified, url = (json.loads(x) for x in result.stdout.splitlines())
    [fired] = blocked["fired"]
    assert fired["rule"] == "sensitive_fields" and fired["field"].startswith("requestedSchema.properties.pw")
    assert fired["policy"]["text"] == "sensitive_fields: block" and fired["policy"]["key"] == "elicitation.sensitive_fields"
    line = (REPO / "policies/default.yaml").read_text().splitlines()[fired["policy"]["line"] - 1]
    assert line.strip() == "sensitive_fields: block"
    [fired] = modified["fired"]
    assert fired["rule"] == "form_urls" and fired["fields"] == ["message"] and fired["policy"]["text"] == "form_urls: strip"
    [fired] = url["fired"]
    assert fired["rule"] == "url_mode.target" and fired["field"] == "url"
    assert fired["policy"]["key"] == "elicitation.url_mode.allowed_hosts"


def test_explain_with_the_default_policy_names_the_default(tmp_path: Path) -> None:
    (tmp_path / "gw.yaml").write_text("servers: {crm: {url: 'http://127.0.0.1:1/mcp'}}")
    form = {"message": "Log in", "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}}
    result = cli("explain", "--config", str(tmp_path / "gw.yaml"), "--server", "crm", "-", stdin=json.dumps(form))
    [fired] = json.loads(result.stdout)["fired"]
    assert "default applies" in fired["policy"]["text"] and "file" not in fired["policy"]
