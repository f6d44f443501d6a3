"""The fallback load generator, when `wrk` is not installed: aiohttp, in a process of its own.

`python bench/loadgen.py SPEC_JSON` with SPEC_JSON = {"url", "headers", "sessions", "tool",
"concurrency", "seconds"}: `concurrency` keep-alive connections each send `tools/call` `tool`
back to back for `seconds`, round-robin over the session ids, as wrk does with bench/wrk_call.lua.
Prints one JSON line: requests, errors, seconds, latency percentiles in ms.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from typing import Any

import aiohttp


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    url, tool, conc, seconds = spec["url"], spec["tool"], int(spec["concurrency"]), float(spec["seconds"])
    sessions = itertools.cycle(spec["sessions"] or [None])
    ids = itertools.count(1)
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=conc)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as http:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                rid = next(ids)
                body = (f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
                        f'"params":{{"name":"{tool}","arguments":{{"text":"x"}}}}}}').encode()
                headers = dict(spec["headers"])
                sid = next(sessions)
                if sid:
                    headers["Mcp-Session-Id"] = sid
                t0 = time.perf_counter()
                async with http.post(url, data=body, headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        errors += 1
                latencies.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        elapsed = time.perf_counter() - t0
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0.0

    return {"requests": len(latencies), "errors": errors, "seconds": elapsed, "p50_ms": pct(0.5), "p99_ms": pct(0.99)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.loads(sys.argv[1])))))
