"""Prometheus metrics, one registry per gateway app (so tests can run several apps)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from gateway.policy.engine import Decision

# Metric labels come from a fixed set: a method the gateway does not know is counted as "other".
KNOWN_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
    "server/discover",
})


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


ERAS = ("2025", "2026", "unknown")


def era_label(protocol_version: str | None) -> str:
    """The host's protocol revision family: "2025" (initialize handshake), "2026", or "unknown"."""
    if protocol_version is None:
        return "unknown"
    for era in ERAS[:-1]:
        if protocol_version.startswith(era + "-"):
            return era
    return "unknown"


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "mcpgw_host_requests_total", "Host JSON-RPC requests by outcome",
            ["server", "method", "era", "outcome"], registry=self.registry,
        )
        self.request_seconds = Histogram(
            "mcpgw_host_request_seconds", "Host request duration through the gateway",
            ["server", "method", "era"], registry=self.registry,
        )
        self.decisions = Counter(
            "mcpgw_elicitation_decisions_total", "Elicitation policy decisions",
            ["server", "decision"], registry=self.registry,
        )
        self.rules = Counter(
            "mcpgw_elicitation_rules_total", "Policy rules that fired", ["server", "rule"], registry=self.registry,
        )
        self.rule_decisions = Counter(
            "mcpgw_elicitation_rule_decisions_total",
            "Elicitation decisions by the rules that fired (rule=\"none\" when none did)",
            ["server", "rule", "decision"], registry=self.registry,
        )
        self.rate_limited = Counter(
            "mcpgw_rate_limit_hits_total", "Elicitation attempts refused by a rate limit",
            ["server", "scope"], registry=self.registry,
        )
        self.upstream_up = Gauge(
            "mcpgw_upstream_up", "1 when the last exchange with the upstream server succeeded, else 0",
            ["server"], registry=self.registry,
        )
        self.upstream_errors = Counter(
            "mcpgw_upstream_errors_total", "Failed exchanges with an upstream server",
            ["server", "op"], registry=self.registry,
        )
        self.upstream_reconnects = Counter(
            "mcpgw_upstream_reconnects_total",
            "Upstream SSE streams reopened with Last-Event-ID (standalone streams and resumed replies)",
            ["server"], registry=self.registry,
        )
        self.state_errors = Counter(
            "mcpgw_state_errors_total", "State backend operations that failed (state unavailable)",
            ["op"], registry=self.registry,
        )
        self.state_seconds = Histogram(
            "mcpgw_state_operation_seconds", "State backend operation latency (includes rate-limit checks)",
            ["op"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        )
        self.reloads = Counter(
            "mcpgw_config_reloads_total", "Live reloads of config and policies by result",
            ["result"], registry=self.registry,
        )
        self.elicitations_pending = Gauge(
            "mcpgw_elicitations_pending",
            "Elicitations (every mode, both eras) sent to hosts and not yet answered, from the state store: "
            "the same on every replica", ["server"], registry=self.registry,
        )
        self.sessions = Gauge(
            "mcpgw_host_sessions", "Live host sessions in the state store (all replicas, all servers)",
            registry=self.registry,
        )
        self.sessions_created = Counter(
            "mcpgw_host_sessions_created_total", "Host sessions created by this replica", ["server"],
            registry=self.registry,
        )
        self.sessions_ended = Counter(
            "mcpgw_host_sessions_ended_total", "Host sessions ended by this replica, by reason",
            ["server", "reason"], registry=self.registry,
        )
        self.dropped = Counter(
            "mcpgw_messages_dropped_total", "Messages the gateway refused to pass on",
            ["server", "event"], registry=self.registry,
        )

    def record_decision(self, server: str, decision: Decision) -> None:
        self.decisions.labels(server, decision.decision).inc()
        for rule in decision.rules:
            self.rules.labels(server, rule).inc()
        for rule in decision.rules or ("none",):
            self.rule_decisions.labels(server, rule, decision.decision).inc()

    def watch_live(self, read: Callable[[], Mapping[str, tuple[int, int]]]) -> None:
        """Per-server (active host sessions, pending URL-mode elicitations) on this replica, read at scrape time."""
        self.registry.register(_Live(read))

    def watch_state_round_trips(self, round_trips: Mapping[str, int]) -> None:
        """Expose the state backend's round trips per operation (Redis), read at scrape time."""
        self.registry.register(_RoundTrips(round_trips))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Live:
    def __init__(self, read: Callable[[], Mapping[str, tuple[int, int]]]) -> None:
        self._read = read

    def collect(self) -> Iterator[Any]:
        active = GaugeMetricFamily(
            "mcpgw_host_sessions_active",
            "Host sessions this replica serves now (a request in flight, a GET stream open, a completion awaited)",
            labels=["server"])
        pending = GaugeMetricFamily(
            "mcpgw_url_completions_pending",
            "URL-mode elicitations delivered by this replica whose completion has not arrived yet",
            labels=["server"])
        for server, (sessions, waiting) in sorted(self._read().items()):
            active.add_metric([server], sessions)
            pending.add_metric([server], waiting)
        yield active
        yield pending

    def describe(self) -> list[Any]:
        return []


class _RoundTrips:
    def __init__(self, round_trips: Mapping[str, int]) -> None:
        self._round_trips = round_trips

    def collect(self) -> Iterator[Any]:
        family = CounterMetricFamily(
            "mcpgw_state_round_trips", "Round trips to the state backend by operation", labels=["op"])
        for op, n in sorted(self._round_trips.items()):
            family.add_metric([op], n)
        yield family

    def describe(self) -> list[Any]:
        return []
