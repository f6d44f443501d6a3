"""Session figures (`make bench-sessions`): the gateway next to a plain aiohttp forwarder, same run.

Both stand in front of the same fast raw-aiohttp MCP upstream (bench/fast_upstream.py),
so what differs is the proxy. For each: sessions opened per second, memory per idle
session (resident set size of the proxy process), and a new session's `tools/list`
latency with no idle sessions and with N idle sessions. With Redis state: Redis round
trips per host request, read from the gateway's /metrics. Loopback only; bounded.

`python bench/sessions.py [IDLE_SESSIONS]` (default 10,000).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import Proc, free_port, gateway, running  # noqa: E402

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "bench", "version": "1"}}}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def open_session(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    async with http.post(url, json=INIT, headers=HEADERS) as r:
        await r.read()
        if r.status != 200:
            raise RuntimeError(f"initialize: HTTP {r.status}")
        headers = {**HEADERS, "Mcp-Session-Id": r.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    async with http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers) as r:
        await r.read()
    return headers


async def open_many(url: str, n: int, concurrency: int = 32) -> float:
    """Sessions opened per second (initialize + notifications/initialized each)."""
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as http:
        left = iter(range(n))

        async def worker() -> None:
            for _ in left:
                await open_session(http, url)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return n / (time.perf_counter() - t0)


async def new_session_latency(url: str, requests: int = 300) -> tuple[float, float]:
    """p50, p99 in ms of tools/list on a freshly opened session, one at a time."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        headers = await open_session(http, url)
        samples = []
        for _ in range(requests):
            t0 = time.perf_counter()
            async with http.post(url, json=LIST, headers=headers) as r:
                await r.read()
            samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.99 * (len(samples) - 1))]


async def profile(name: str, proc: Proc, url: str, idle: int) -> dict[str, Any]:
    before = rss_kib(proc.process.pid)
    empty = await new_session_latency(url)
    rate = await open_many(url, idle)
    await asyncio.sleep(1.0)
    after = rss_kib(proc.process.pid)
    loaded = await new_session_latency(url)
    return {"name": name, "rate": rate, "kib": (after - before) / idle, "empty": empty, "loaded": loaded,
            "start_mib": before / 1024}


async def redis_round_trips(gw: Proc, url: str, calls: int = 500) -> float:
    async def total() -> int:
        async with aiohttp.ClientSession() as http, http.get(f"{gw.base}/metrics") as r:
            text = await r.text()
        return sum(int(float(v)) for v in re.findall(r"^mcpgw_state_round_trips_total\{[^}]*\} (\S+)$", text, re.M))

    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        headers = await open_session(http, url)
        start = await total()
        for _ in range(calls):
            async with http.post(url, json=CALL, headers=headers) as r:
                await r.read()
        return (await total() - start) / calls


def row(p: dict[str, Any]) -> str:
    return (f"| {p['name']} | {p['rate']:.0f} | {p['kib']:.2f} | {p['empty'][0]:.2f} / {p['empty'][1]:.2f} "
            f"| {p['loaded'][0]:.2f} / {p['loaded'][1]:.2f} |")


async def main(idle: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        up_port, fw_port = free_port(), free_port()
        up = stack.enter_context(running([sys.executable, str(REPO / "bench" / "fast_upstream.py"), str(up_port)],
                                         up_port, tmp / "upstream.log"))
        fw = stack.enter_context(running(
            [sys.executable, str(REPO / "bench" / "plain_forwarder.py"), str(fw_port), up.base + "/mcp"],
            fw_port, tmp / "forwarder.log"))
        servers = {"up": (up.base + "/mcp", {"modes": ["form"]})}
        (tmp / "mem").mkdir()
        gw = stack.enter_context(gateway(tmp / "mem", servers, sessions={"max_sessions": idle * 3}))
        forwarder = await profile("plain aiohttp forwarder", fw, fw.base + "/mcp", idle)
        mem = await profile("gateway, memory state", gw, gw.base + "/servers/up/mcp", idle)
        print(f"\nSessions, {idle} idle sessions opened with 32 concurrent clients against one upstream.")
        print("RSS is the proxy process's resident set; latency is a new session's tools/list, one at a time.\n")
        print("| proxy | sessions/s | KiB per idle session | tools/list p50 / p99 ms, no idle | "
              f"tools/list p50 / p99 ms, {idle} idle |")
        print("|---|---|---|---|---|")
        print(row(forwarder))
        print(row(mem))
        print(f"\nresident set before the first session: gateway {mem['start_mib']:.0f} MiB (the policy lexicon is "
              f"most of it), forwarder {forwarder['start_mib']:.0f} MiB")
        print(f"\nratios gateway/forwarder: sessions/s {mem['rate'] / forwarder['rate']:.2f}, "
              f"tools/list p50 with {idle} idle vs none: gateway {mem['loaded'][0] / mem['empty'][0]:.2f}, "
              f"forwarder {forwarder['loaded'][0] / forwarder['empty'][0]:.2f}")
        print("goals: >= 500 sessions/s, <= 4 KiB per idle session, tools/list as fast with idle sessions as without")
        (tmp / "redis").mkdir()
        state = {"backend": "redis", "url": "redis://127.0.0.1:6379/15",
                 "key_prefix": f"mcpgw-bench-{uuid.uuid4().hex}:"}
        try:
            rgw = stack.enter_context(gateway(tmp / "redis", servers, state, name="gateway-redis"))
        except RuntimeError as exc:
            print(f"\nRedis state: not measured ({exc})")
            return
        trips = await redis_round_trips(rgw, rgw.base + "/servers/up/mcp")
        print(f"\nRedis state: {trips:.2f} Redis round trips per host tools/call (goal <= 1)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
