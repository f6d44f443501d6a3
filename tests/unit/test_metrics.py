"""Metric labels come from fixed sets, whatever a host sends."""

from __future__ import annotations

from gateway.metrics import KNOWN_METHODS, GatewayMetrics, method_label


def test_unknown_methods_are_counted_as_other() -> None:
    assert method_label("tools/call") == "tools/call"
    assert method_label("x" * 10_000) == "other"
    assert method_label("tools/call\n") == "other"
    assert all(method_label(m) == m for m in KNOWN_METHODS)


def test_state_round_trips_are_read_at_scrape_time() -> None:
    metrics = GatewayMetrics()
    trips: dict[str, int] = {}
    metrics.watch_state_round_trips(trips)
    trips["load_session"] = 3
    text = metrics.render().decode()
    assert 'mcpgw_state_round_trips_total{op="load_session"} 3.0' in text
