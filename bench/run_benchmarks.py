"""Benchmarks (`make bench`): one policy decision, and the proxy against a direct connection.

`python bench/run_benchmarks.py --policy-only` measures the policy decision alone.

Every proxy figure is printed next to the same workload on a direct connection to
the same upstream, measured in the same run, as a ratio. Loopback only; bounded.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import gateway, upstream_server  # noqa: E402

from gateway.policy.engine import PolicyEngine  # noqa: E402
from gateway.policy.policy_config import ElicitationPolicy  # noqa: E402

TYPICAL_FORM = {
    "mode": "form",
    "message": "Please confirm your booking details",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Full name", "description": "As on the reservation"},
            "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 12},
            "date": {"type": "string", "format": "date", "title": "Date"},
            "seating": {"type": "string", "title": "Seating", "enum": ["indoor", "outdoor"]},
            "newsletter": {"type": "boolean", "title": "Subscribe to our newsletter", "default": False},
        },
        "required": ["name", "guests", "date"],
    },
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def unseen_form(i: int) -> dict[str, Any]:
    """The typical form with every text made new, so no detector cache helps."""
    schema = TYPICAL_FORM["requestedSchema"]
    props = {
        name: {**prop, "title": f"{prop['title']} {i}"} for name, prop in schema["properties"].items()
    }
    message = f"{TYPICAL_FORM['message']} #{i}"
    return {**TYPICAL_FORM, "message": message, "requestedSchema": {**schema, "properties": props}}


def bench_policy(n: int = 20000) -> None:
    engine = PolicyEngine("crm", ElicitationPolicy(rate_limit=None))
    for _ in range(500):
        engine.decide(TYPICAL_FORM)
    cases = (("same form repeated", [TYPICAL_FORM] * n), ("every form new", [unseen_form(i) for i in range(n)]))
    for label, forms in cases:
        samples = []
        for form in forms:
            t0 = time.perf_counter_ns()
            engine.decide(form)
            samples.append((time.perf_counter_ns() - t0) / 1000)
        print(f"policy decision, typical 5-field form, {label} ({n} runs): p50 {percentile(samples, 0.5):.1f} µs, "
              f"p99 {percentile(samples, 0.99):.1f} µs (goal p99 <= 50 µs)")


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def open_session(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                       "clientInfo": {"name": "bench", "version": "1"}}}
    async with http.post(url, json=init, headers=HEADERS) as r:
        await r.read()
        headers = {**HEADERS, "Mcp-Session-Id": r.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    async with http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers) as r:
        await r.read()
    return headers


async def call_echo(http: aiohttp.ClientSession, url: str, headers: dict[str, str], rid: int) -> None:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    async with http.post(url, json=body, headers=headers) as r:
        text = await r.text()
    if '"result"' not in text:
        raise RuntimeError(f"unexpected answer: {text[:200]}")


async def call_elicit(http: aiohttp.ClientSession, url: str, headers: dict[str, str], rid: int) -> None:
    """tools/call whose server elicits a form; answered on a second POST, as a host does."""
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
    async with http.post(url, json=body, headers=headers) as r:
        async for raw in r.content:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("method") == "elicitation/create":
                answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept", "content": {"name": "b"}}}
                async with http.post(url, json=answer, headers=headers) as a:
                    await a.read()
            elif msg.get("id") == rid:
                return
    raise RuntimeError("no answer")


async def measure(url: str, call: Any, requests: int, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as http:
        sessions = [await open_session(http, url) for _ in range(concurrency)]
        for i in range(20):  # warm-up
            await call(http, url, sessions[0], 10_000 + i)
        per_worker = requests // concurrency

        async def worker(w: int) -> None:
            for i in range(per_worker):
                t0 = time.perf_counter()
                await call(http, url, sessions[w], i + 1)
                latencies.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        elapsed = time.perf_counter() - t0
    return per_worker * concurrency / elapsed, latencies


async def bench_proxy() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with upstream_server(tmp) as up, gateway(tmp, {"up": (up.base + "/mcp", {"modes": ["form"]})}) as gw:
            direct, via = up.base + "/mcp", gw.base + "/servers/up/mcp"
            for label, call, requests, conc in (
                ("tools/call echo, 1 client", call_echo, 400, 1),
                ("tools/call echo, 8 clients", call_echo, 800, 8),
                ("tools/call with form elicitation, 4 clients", call_elicit, 200, 4),
            ):
                d_rps, d_lat = await measure(direct, call, requests, conc)
                g_rps, g_lat = await measure(via, call, requests, conc)
                print(f"{label}: direct {d_rps:.0f} req/s p50 {statistics.median(d_lat):.2f} ms | "
                      f"gateway {g_rps:.0f} req/s p50 {statistics.median(g_lat):.2f} ms "
                      f"p99 {percentile(g_lat, 0.99):.2f} ms | throughput ratio {g_rps / d_rps:.2f}, "
                      f"added p50 latency {statistics.median(g_lat) - statistics.median(d_lat):.2f} ms")


def main() -> None:
    bench_policy()
    if "--policy-only" not in sys.argv[1:]:  # the policy decision alone: no servers, a few seconds
        asyncio.run(bench_proxy())


if __name__ == "__main__":
    main()
