"""The per-request counter and histogram children are bound once per label set, and count as before."""

from __future__ import annotations

import time

from gateway.driver.contracts import DriverSettings
from gateway.driver.session_driver import SessionDriver
from gateway.elicitation_gate import ElicitationGate
from gateway.metrics import GatewayMetrics
from gateway.policy.policy_config import ElicitationPolicy
from gateway.state.memory_store import MemoryStateStore
from gateway.upstream.in_memory import InMemoryUpstream


def test_request_done_counts_each_label_set_on_its_own_child() -> None:
    metrics = GatewayMetrics()
    driver = SessionDriver("crm", InMemoryUpstream("crm", lambda *_: None), ElicitationGate(
        "crm", ElicitationPolicy(rate_limit=None), None), MemoryStateStore(), metrics,
        DriverSettings(60, 60, 60, 5, 100, protocol="legacy"), "r1")
    started = time.monotonic()
    for outcome in ("ok", "ok", "error"):
        driver.request_done("tools/call", started, outcome, "2025-11-25")
    driver.request_done("tools/call", started, "ok", "2026-07-28")
    value = metrics.registry.get_sample_value
    labels = {"server": "crm", "method": "tools/call"}
    assert value("mcpgw_host_requests_total", {**labels, "era": "2025", "outcome": "ok"}) == 2
    assert value("mcpgw_host_requests_total", {**labels, "era": "2025", "outcome": "error"}) == 1
    assert value("mcpgw_host_requests_total", {**labels, "era": "2026", "outcome": "ok"}) == 1
    assert value("mcpgw_host_request_seconds_count", {**labels, "era": "2025"}) == 3
    assert value("mcpgw_host_request_seconds_count", {**labels, "era": "2026"}) == 1
    assert len(driver._request_metrics) == 3
