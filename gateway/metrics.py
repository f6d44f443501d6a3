"""Prometheus metrics, one registry per gateway app (so tests can run several apps)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "mcpgw_host_requests_total", "Host JSON-RPC requests by outcome",
            ["server", "method", "outcome"], registry=self.registry,
        )
        self.request_seconds = Histogram(
            "mcpgw_host_request_seconds", "Host request duration through the gateway",
            ["server"], registry=self.registry,
        )
        self.decisions = Counter(
            "mcpgw_elicitation_decisions_total", "Elicitation policy decisions",
            ["server", "decision"], registry=self.registry,
        )
        self.rules = Counter(
            "mcpgw_elicitation_rules_total", "Policy rules that fired", ["server", "rule"], registry=self.registry,
        )
        self.sessions = Gauge("mcpgw_host_sessions", "Open host sessions", ["server"], registry=self.registry)
        self.dropped = Counter(
            "mcpgw_messages_dropped_total", "Messages the gateway refused to pass on",
            ["server", "event"], registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
