"""What one upstream call and one session load cost the gateway's process, library against lean path
(`make bench-clients`; docs/performance.md, seventh round).

Both sides are the gateway's own code, each in its own process, 32 concurrent callers on uvloop, CPU of
that process per call:

- one `tools/call` echo POST to the benchmark's fast upstream through `HttpPool`, with aiohttp's client
  (`http1=False`, what the request pool used before) and with `gateway/upstream/http1.py` (`http1=True`),
  its body read to the end as the connector does;
- one EVALSHA of the session-load script through redis-py as the store configures it (`connect_redis`,
  `register_script`) and through `gateway/state/redis_lean.py`, against Redis at 127.0.0.1:6379, db 15.

`python bench/client_costs.py [--calls N]`. Prints one line per side and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))

CONCURRENCY = 32
REDIS_URL = "redis://127.0.0.1:6379/15"
SCRIPT = "return redis.call('PEXPIRE', KEYS[1], ARGV[1])"


async def _timed(one: Callable[[int], Awaitable[None]], calls: int) -> tuple[float, float]:
    async def worker(k: int) -> None:
        for i in range(k, calls, CONCURRENCY):
            await one(i)

    await asyncio.gather(*(worker(k) for k in range(CONCURRENCY)))  # warm-up: connections, caches
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(k) for k in range(CONCURRENCY)))
    return calls / (time.perf_counter() - wall), (time.process_time() - cpu) / calls * 1e6


async def _http(url: str, lean: bool, calls: int) -> tuple[float, float]:
    import aiohttp
    import run_benchmarks as rb

    from gateway.upstream.http_pool import HttpPool
    from gateway.upstream.streamable_http import _read_body

    async with rb.client() as http:
        sid = await rb.open_session(http, url)
    headers = {**rb.HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": rb.HANDSHAKE}
    pool = HttpPool("bench", "request", limit=100, acquire_timeout=5, http1=lean,
                    timeout=aiohttp.ClientTimeout(total=None, connect=10, sock_connect=10))
    await pool.start()

    async def one(i: int) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"text": "hi"}}})
        held = await pool.send("POST", url, headers, body)
        try:
            orjson.loads(await _read_body(held.resp, 1 << 20) or b"null")
        finally:
            held.finish(reusable=True)

    try:
        return await _timed(one, calls)
    finally:
        await pool.close()


async def _redis(lean: bool, calls: int) -> tuple[float, float]:
    from gateway.state.redis_client import connect_redis
    from gateway.state.redis_lean import LeanScripts

    client = connect_redis(REDIS_URL)
    script = client.register_script(SCRIPT)
    fast = LeanScripts.for_client(client)
    assert fast is not None
    key = "mcpgw-bench-client-costs"

    async def one(i: int) -> None:
        if lean:
            await fast.evalsha(script.sha, SCRIPT, [key], [100_000])
        else:
            await script(keys=[key], args=[100_000])

    try:
        return await _timed(one, calls)
    finally:
        fast.close()
        await client.aclose()


def _side(kind: str, lean: bool, calls: int, url: str) -> tuple[float, float]:
    """Runs one side in a process of its own, so its CPU is its own."""
    out = subprocess.run([sys.executable, __file__, "--side", json.dumps([kind, lean, calls, url])],
                         capture_output=True, text=True, timeout=600, check=True)
    rate, cpu = json.loads(out.stdout)
    return rate, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--side", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side:
        import uvloop

        kind, lean, calls, url = json.loads(args.side)
        work = _http(url, lean, calls) if kind == "http" else _redis(lean, calls)
        print(json.dumps(uvloop.run(work)))
        return
    from gateway_harness import free_port, running

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        with running([sys.executable, str(REPO / "bench" / "fast_upstream.py"), str(port)], port,
                     Path(tmp) / "upstream.log") as up:
            url = up.base + "/mcp"
            print(f"{args.calls:,} calls per side, {CONCURRENCY} concurrent, uvloop, CPU of the calling process")
            for kind, label, names in (("http", "upstream POST (HttpPool)", ("aiohttp ClientSession", "http1.py")),
                                       ("redis", "session-load EVALSHA", ("redis-py", "redis_lean.py"))):
                (r0, c0), (r1, c1) = (_side(kind, lean, args.calls, url) for lean in (False, True))
                print(f"{label}: {names[0]} {c0:.1f} µs/call ({r0:,.0f}/s); {names[1]} {c1:.1f} µs/call "
                      f"({r1:,.0f}/s); lean/library CPU {c1 / c0:.2f}x")


if __name__ == "__main__":
    main()
