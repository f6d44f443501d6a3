"""/metrics and OpenTelemetry traces of the real gateway process, with the real SDK client and server.

The gateway exports spans over OTLP/HTTP to a collector stand-in in this test
(protobuf decoded with the OpenTelemetry proto package); the upstream server
echoes the headers it received, so the W3C `traceparent` it saw is compared with
the gateway's own `mcpgw.upstream` span.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from gateway_harness import Proc, free_port, gateway, upstream_server
from mcp import Client
from mcp.types import ElicitResult, TextContent
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

pytestmark = pytest.mark.anyio

LINK_FORM = {
    "mode": "form",
    "message": "Read https://evil.example/phish first",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
PASSWORD_FORM = {
    "mode": "form",
    "message": "Log in",
    "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
}


class Collector:
    """Receives OTLP/HTTP trace exports and keeps every span, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                with collector.lock:
                    for rs in req.resource_spans:
                        service = {a.key: a.value.string_value for a in rs.resource.attributes}.get("service.name")
                        for ss in rs.scope_spans:
                            for sp in ss.spans:
                                collector.spans.append({
                                    "name": sp.name, "trace_id": sp.trace_id.hex(), "span_id": sp.span_id.hex(),
                                    "parent": sp.parent_span_id.hex(), "service": service,
                                    "attrs": {a.key: _value(a.value) for a in sp.attributes},
                                })
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for s in self.spans if predicate(s)]
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"no such span; got {[s['name'] for s in self.spans]}")


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    yield c
    c.server.shutdown()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, collector: Collector) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("operator")
    with upstream_server(tmp) as up:
        url = up.base + "/mcp"
        servers = {
            "main": (url, {"modes": ["form", "url"], "sensitive_fields": "block", "form_urls": "strip"}),
            "limited": (url, {"modes": ["form"], "rate_limit": "1/minute"}),
            "dead": (f"http://127.0.0.1:{free_port()}/mcp", {}),  # nothing listens there
        }
        extra = {"tracing": {"otlp_endpoint": collector.url, "service_name": "gw-under-test"}}
        with gateway(tmp, servers, extra=extra, env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as g:
            yield g


def scrape(gw: Proc) -> dict[str, float]:
    with urllib.request.urlopen(f"{gw.base}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def value(samples: dict[str, float], name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for key, v in samples.items():
        metric, _, rest = key.partition("{")
        if metric != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(have.get(k) == want for k, want in labels.items()):
            total += v
    return total


async def elicit(gw: Proc, server: str, params: dict[str, Any]) -> dict[str, Any]:
    async def host(context: Any, p: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ann"})

    async with Client(f"{gw.base}/servers/{server}/mcp", mode="legacy", elicitation_callback=host) as client:
        result = await client.call_tool("elicit_raw", {"params_json": json.dumps(params)})
    block = result.content[0]
    assert isinstance(block, TextContent)
    out: dict[str, Any] = json.loads(block.text)
    return out


async def test_pending_elicitations_count_while_a_person_has_not_answered(gw: Proc) -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def host(context: Any, p: Any) -> ElicitResult:
        asked.set()
        await release.wait()
        return ElicitResult(action="accept", content={"name": "Ann"})

    before = value(scrape(gw), "mcpgw_elicitations_pending", server="main")
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy", elicitation_callback=host) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_name", {})
            await asked.wait()
            during = value(await anyio.to_thread.run_sync(scrape, gw), "mcpgw_elicitations_pending", server="main")
            release.set()
    after = value(scrape(gw), "mcpgw_elicitations_pending", server="main")
    assert (before, during, after) == (0, 1, 0)


async def test_metrics_move_as_traffic_flows(gw: Proc) -> None:
    before = scrape(gw)
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy") as client:
        await client.call_tool("echo", {"text": "hi"})
    await elicit(gw, "main", LINK_FORM)
    await elicit(gw, "main", PASSWORD_FORM)
    await elicit(gw, "limited", LINK_FORM)
    await elicit(gw, "limited", LINK_FORM)  # over 1/minute
    after = scrape(gw)

    def grew(name: str, by: float = 1, **labels: str) -> None:
        delta = value(after, name, **labels) - value(before, name, **labels)
        assert delta >= by, f"{name}{labels}: {value(before, name, **labels)} -> {value(after, name, **labels)}"

    grew("mcpgw_host_requests_total", server="main", method="tools/call", era="2025", outcome="ok", by=3)
    grew("mcpgw_host_requests_total", server="main", method="initialize", era="2025", outcome="ok", by=3)
    grew("mcpgw_host_request_seconds_count", server="main", method="tools/call", era="2025", by=3)
    grew("mcpgw_elicitation_decisions_total", server="main", decision="modify")
    grew("mcpgw_elicitation_rule_decisions_total", server="main", rule="form_urls", decision="modify")
    grew("mcpgw_elicitation_rule_decisions_total", server="main", rule="sensitive_fields", decision="block")
    grew("mcpgw_elicitation_rule_decisions_total", server="limited", rule="rate_limit", decision="block")
    grew("mcpgw_rate_limit_hits_total", server="limited", scope="server")
    grew("mcpgw_state_operation_seconds_count", op="put_session", by=5)
    grew("mcpgw_state_operation_seconds_count", op="rate_limit", by=2)
    assert value(after, "mcpgw_upstream_up", server="main") == 1
    assert value(after, "mcpgw_upstream_errors_total", server="main") == 0
    assert 'mcpgw_host_sessions_active{server="main"}' in after
    assert 'mcpgw_elicitations_pending{server="main"}' in after
    assert 'mcpgw_url_completions_pending{server="main"}' in after
    assert 'mcpgw_upstream_reconnects_total{server="main"}' in after or value(after, "mcpgw_upstream_reconnects_total") == 0
    assert "mcpgw_host_sessions" in after
    # No label carries a session id, a user or a value.
    for key in after:
        assert not re.search(r'"[0-9a-f]{32}"', key), key
        assert "evil.example" not in key and "Ann" not in key


async def test_requests_are_labelled_with_the_hosts_era(gw: Proc) -> None:
    before = scrape(gw)
    async with Client(f"{gw.base}/servers/main/mcp", mode="2026-07-28") as client:
        await client.call_tool("echo", {"text": "modern"})
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy") as client:
        await client.call_tool("echo", {"text": "handshake"})
    after = scrape(gw)
    for era in ("2025", "2026"):
        labels = {"server": "main", "method": "tools/call", "era": era, "outcome": "ok"}
        assert value(after, "mcpgw_host_requests_total", **labels) > value(before, "mcpgw_host_requests_total", **labels)


def test_an_unreachable_upstream_shows_as_down(gw: Proc) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    req = urllib.request.Request(f"{gw.base}/servers/dead/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as exc:  # the status the gateway maps the failure to
        answer = json.loads(exc.read())
    assert answer["error"]["code"] == -32010
    after = scrape(gw)
    assert value(after, "mcpgw_upstream_up", server="dead") == 0
    assert value(after, "mcpgw_upstream_errors_total", server="dead", op="post") >= 1
    assert value(after, "mcpgw_host_requests_total", server="dead", method="initialize", outcome="upstream_error") >= 1


async def test_spans_for_request_upstream_and_policy_with_rule_ids(gw: Proc, collector: Collector) -> None:
    out = await elicit(gw, "main", LINK_FORM)
    assert out["result"]["action"] == "accept"
    policy = collector.wait_for(
        lambda s: s["name"] == "mcpgw.policy" and s["attrs"].get("mcpgw.rules") == ["form_urls"]
        and s["attrs"].get("mcpgw.server") == "main")[-1]
    assert policy["attrs"]["mcpgw.decision"] == "modify" and policy["attrs"]["mcpgw.server"] == "main"
    assert policy["service"] == "gw-under-test"
    same_trace = collector.wait_for(lambda s: s["trace_id"] == policy["trace_id"] and s["name"] != "mcpgw.policy")
    by_id = {s["span_id"]: s for s in same_trace}
    # policy <- upstream <- host request: one trace from the host's POST to the decision.
    upstream = by_id[policy["parent"]]
    assert upstream["name"] == "mcpgw.upstream" and upstream["attrs"]["mcpgw.op"] == "post"
    host = by_id[upstream["parent"]]
    assert host["name"] == "mcpgw.host_request"
    assert host["attrs"]["mcpgw.method"] == "tools/call" and host["attrs"]["mcpgw.outcome"] == "ok"
    for span in [*same_trace, policy]:  # never a value, a session or a user
        assert "evil.example" not in json.dumps(span["attrs"]) and "Ann" not in json.dumps(span["attrs"])


async def test_traceparent_reaches_the_upstream(gw: Proc, collector: Collector) -> None:
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy") as client:
        result = await client.call_tool("request_headers", {})
    block = result.content[0]
    assert isinstance(block, TextContent)
    headers = json.loads(block.text)
    match = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})", headers["traceparent"])
    assert match, headers.get("traceparent")
    trace_id, parent_id, flags = match.groups()
    assert int(flags, 16) & 1  # sampled
    [upstream] = collector.wait_for(lambda s: s["span_id"] == parent_id)
    assert upstream["name"] == "mcpgw.upstream" and upstream["trace_id"] == trace_id


def test_a_hosts_trace_is_continued(gw: Proc, collector: Collector) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    req = urllib.request.Request(f"{gw.base}/servers/main/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01",
    })
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    [host] = collector.wait_for(lambda s: s["trace_id"] == trace_id and s["name"] == "mcpgw.host_request")
    assert host["parent"] == "00f067aa0ba902b7"
    assert host["attrs"]["mcpgw.method"] == "initialize"
