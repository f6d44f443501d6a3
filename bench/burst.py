"""One server bursting at 10x: how much slower does another server's traffic get?

Two servers behind one gateway process: `quiet` (bench/fast_upstream.py, `echo` answered as
JSON) and `noisy` (the hostile test upstream's `busy` call: an SSE reply of 50 notifications
and a result). A host calls `quiet` in a loop and its latency is measured while `noisy` carries
1 concurrent caller (its normal load), then 10 (the burst). The figures are p50/p95 of the
quiet calls in each phase and the noisy calls completed per second.

`python bench/burst.py [--seconds N]` (per phase; default 10). tests/integration/test_reliability.py
runs a short version with the stated bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import HERE, Proc, free_port, gateway, running  # noqa: E402

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "burst", "version": "1"}}}


@dataclass
class Phase:
    noisy_callers: int
    quiet_ms: list[float]
    noisy_calls: int
    seconds: float

    def p(self, q: float) -> float:
        data = sorted(self.quiet_ms)
        return data[min(len(data) - 1, int(q * len(data)))]

    def summary(self) -> dict[str, Any]:
        return {"noisy_callers": self.noisy_callers, "quiet_calls": len(self.quiet_ms),
                "quiet_p50_ms": round(statistics.median(self.quiet_ms), 2), "quiet_p95_ms": round(self.p(0.95), 2),
                "noisy_calls_per_s": round(self.noisy_calls / self.seconds, 1)}


@contextmanager
def setup(tmp: Path) -> Iterator[Proc]:
    with ExitStack() as stack:
        q_port, n_port = free_port(), free_port()
        quiet = stack.enter_context(running(
            [sys.executable, str(REPO / "bench" / "fast_upstream.py"), str(q_port)], q_port, tmp / "quiet.log"))
        noisy = stack.enter_context(running(
            [sys.executable, str(HERE / "hostile_upstream.py"), str(n_port)], n_port, tmp / "noisy.log"))
        servers = {"quiet": (quiet.base + "/mcp", {"modes": ["form"]}),
                   "noisy": (noisy.base + "/mcp", {"modes": ["form"]})}
        yield stack.enter_context(gateway(tmp, servers, extra={"logging": {"level": "warning"}}))


async def _session(http: aiohttp.ClientSession, url: str) -> str:
    async with http.post(url, json=INIT, headers=HEADERS) as r:
        await r.read()
        return r.headers["Mcp-Session-Id"]


async def _call(http: aiohttp.ClientSession, url: str, sid: str, body: dict[str, Any]) -> None:
    async with http.post(url, data=json.dumps(body), headers={**HEADERS, "Mcp-Session-Id": sid}) as r:
        await r.read()
        if r.status != 200:
            raise RuntimeError(f"status {r.status}")


async def phase(base: str, noisy_callers: int, seconds: float) -> Phase:
    quiet_url, noisy_url = f"{base}/servers/quiet/mcp", f"{base}/servers/noisy/mcp"
    echo = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    busy = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "busy"}}
    stop = time.monotonic() + seconds
    counts = {"noisy": 0}
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        quiet_sid = await _session(http, quiet_url)

        async def noisy_caller() -> None:
            sid = await _session(http, noisy_url)
            while time.monotonic() < stop:
                await _call(http, noisy_url, sid, busy)
                counts["noisy"] += 1

        async def quiet_caller() -> None:
            await asyncio.sleep(0.5)  # the noisy callers are under way
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                await _call(http, quiet_url, quiet_sid, echo)
                latencies.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.01)

        started = time.monotonic()
        await asyncio.gather(quiet_caller(), *(noisy_caller() for _ in range(noisy_callers)))
        return Phase(noisy_callers, latencies, counts["noisy"], time.monotonic() - started)


async def measure(base: str, seconds: float) -> tuple[Phase, Phase]:
    await phase(base, 1, min(2.0, seconds))  # warm-up
    return await phase(base, 1, seconds), await phase(base, 10, seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, setup(Path(tmp)) as gw:
        normal, burst = asyncio.run(measure(gw.base, args.seconds))
    print(json.dumps({"normal": normal.summary(), "burst": burst.summary(),
                      "p95_ratio": round(burst.p(0.95) / normal.p(0.95), 2)}, indent=2))


if __name__ == "__main__":
    main()
