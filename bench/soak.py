"""Soak (`make soak`, not in CI): mixed traffic across many sessions, then resources must be flat.

Two servers behind one gateway (memory state): `fast` (bench/fast_upstream.py: echo, and a
form elicitation answered by the host) and `noisy` (the hostile test upstream: 50 notifications
per call). SESSIONS hosts each loop: open a session,
list tools, echo, answer an elicitation, a noisy call, and every few rounds end the session and
open a new one (also a host that vanishes mid-call). Every SAMPLE seconds the gateway's resident
memory, open file descriptors, open TCP connections and the error count are sampled.

The verdict compares the last samples with those after warm-up: memory within +10 % (+10 MB
slack), descriptors and connections within +20 (open streams at that instant), errors 0.
Exit 1 otherwise. `python bench/soak.py --seconds 600 --sessions 40`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import HERE, Proc, free_port, gateway, running  # noqa: E402

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "soak", "version": "1"}}}


def sample(pid: int) -> dict[str, int]:
    fds = os.listdir(f"/proc/{pid}/fd")
    sockets = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.add(target[8:-1])
    established = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                parts = line.split()
                if parts[3] == "01" and parts[9] in sockets:  # ESTABLISHED, owned by the gateway
                    established += 1
    with open(f"/proc/{pid}/status") as fh:
        rss = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    return {"rss_kib": rss, "fds": len(fds), "tcp_established": established}


class Host:
    def __init__(self, http: aiohttp.ClientSession, base: str, errors: dict[str, int]) -> None:
        self.http, self.base, self.errors = http, base, errors
        self.ops = 0

    def url(self, server: str) -> str:
        return f"{self.base}/servers/{server}/mcp"

    def fail(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    async def open(self, server: str) -> str | None:
        async with self.http.post(self.url(server), json=INIT, headers=HEADERS) as r:
            await r.read()
            if r.status != 200:
                self.fail(f"initialize {r.status}")
                return None
            return r.headers["Mcp-Session-Id"]

    async def call(self, server: str, sid: str, body: dict[str, Any]) -> list[Any]:
        async with self.http.post(self.url(server), data=json.dumps(body),
                                  headers={**HEADERS, "Mcp-Session-Id": sid}) as r:
            text = (await r.read()).decode()
            self.ops += 1
            if r.status not in (200, 202):
                self.fail(f"{body.get('method', 'answer')} {r.status}")
                return []
            if r.content_type == "application/json":
                return [json.loads(text)]
            return [json.loads(x[5:]) for x in text.splitlines() if x.startswith("data:") and x[5:].strip()]

    async def elicitation(self, sid: str) -> None:
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask_name"}}
        async with self.http.post(self.url("fast"), data=json.dumps(body),
                                  headers={**HEADERS, "Mcp-Session-Id": sid}) as r:
            answered = False
            async for raw in r.content:
                line = raw.decode().strip()
                if not line.startswith("data:") or not line[5:].strip():
                    continue
                msg = json.loads(line[5:])
                if msg.get("method") == "elicitation/create":
                    answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept",
                                                                            "content": {"name": "Ada"}}}
                    await self.call("fast", sid, answer)
                elif msg.get("id") == 9:
                    answered = "result" in msg
                    break
            self.ops += 1
            if not answered:
                self.fail("elicitation not answered")

    async def vanish(self, sid: str) -> None:
        """A host that leaves mid-elicitation (its call is cancelled upstream after the grace)."""
        body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "ask_name"}}
        async with self.http.post(self.url("fast"), data=json.dumps(body),
                                  headers={**HEADERS, "Mcp-Session-Id": sid}) as r:
            await r.content.readline()

    async def run(self, stop: float) -> None:
        rounds = 0
        fast = await self.open("fast")
        noisy = await self.open("noisy")
        while time.monotonic() < stop and fast and noisy:
            try:
                await self.call("fast", fast, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                out = await self.call("fast", fast, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                     "params": {"name": "echo", "arguments": {"text": "x"}}})
                if not out or "result" not in out[-1]:
                    self.fail("echo")
                await self.elicitation(fast)
                out = await self.call("noisy", noisy, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                       "params": {"name": "busy"}})
                if len(out) != 51:
                    self.fail("noisy call")
                rounds += 1
                if rounds % 5 == 0:
                    await self.vanish(fast)
                    async with self.http.delete(self.url("fast"), headers={"Mcp-Session-Id": fast}) as r:
                        if r.status != 200:
                            self.fail(f"delete {r.status}")
                    fast = await self.open("fast")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.fail(type(exc).__name__)
                await asyncio.sleep(0.5)


async def soak(gw: Proc, seconds: float, sessions: int, every: float) -> dict[str, Any]:
    errors: dict[str, int] = {}
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    stop = started + seconds
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as http:
        hosts = [Host(http, gw.base, errors) for _ in range(sessions)]
        tasks = [asyncio.create_task(h.run(stop)) for h in hosts]
        while time.monotonic() < stop:
            await asyncio.sleep(min(every, max(0.0, stop - time.monotonic())))
            samples.append({"t": round(time.monotonic() - started), **sample(gw.process.pid),
                            "ops": sum(h.ops for h in hosts), "errors": sum(errors.values())})
            print(json.dumps(samples[-1]), flush=True)
        await asyncio.gather(*tasks)
    await asyncio.sleep(2.0)  # streams close, the vanished hosts' calls are released
    final = {"t": round(time.monotonic() - started), **sample(gw.process.pid),
             "ops": sum(h.ops for h in hosts), "errors": sum(errors.values())}
    return {"samples": samples, "final": final, "errors": errors}


def verdict(result: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    samples = result["samples"]
    base = samples[min(len(samples) - 1, max(1, len(samples) // 5))]  # after warm-up
    last = samples[-1]
    ok_rss = last["rss_kib"] <= base["rss_kib"] * 1.10 + 10 * 1024
    ok_fds = last["fds"] <= base["fds"] + 20
    ok_tcp = last["tcp_established"] <= base["tcp_established"] + 20
    ok_errors = result["final"]["errors"] == 0
    report = {
        "warm": base, "last": last, "after_idle": result["final"], "errors": result["errors"],
        "memory_flat": ok_rss, "fds_flat": ok_fds, "connections_flat": ok_tcp, "no_errors": ok_errors,
    }
    return ok_rss and ok_fds and ok_tcp and ok_errors, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--sample", type=float, default=0.0, help="seconds between samples (default: seconds/20)")
    args = parser.parse_args()
    every = args.sample or max(1.0, args.seconds / 20)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        f_port, n_port = free_port(), free_port()
        fast = stack.enter_context(running(
            [sys.executable, str(REPO / "bench" / "fast_upstream.py"), str(f_port)], f_port, Path(tmp) / "fast.log"))
        noisy = stack.enter_context(running(
            [sys.executable, str(HERE / "hostile_upstream.py"), str(n_port)], n_port, Path(tmp) / "noisy.log"))
        servers = {"fast": (fast.base + "/mcp", {"modes": ["form"], "rate_limit": "100000/minute"}),
                   "noisy": (noisy.base + "/mcp", {"modes": []})}
        # Buffers of detached calls legitimately live buffer_ttl_seconds (default 600): at ~14 vanishing
        # hosts a second that is ~2 MB a minute for ten minutes, which would hide a real leak. 30 s
        # puts their plateau inside the warm-up, so growth after it is a leak.
        gw = stack.enter_context(gateway(Path(tmp), servers,
                                         sessions={"resume_grace_seconds": 1.0, "buffer_ttl_seconds": 30.0},
                                         extra={"logging": {"level": "warning"}}))
        result = asyncio.run(soak(gw, args.seconds, args.sessions, every))
        ok, report = verdict(result)
        report["gateway_log_errors"] = sum(1 for line in gw.output().splitlines() if '"level":"error"' in line)
        ok = ok and report["gateway_log_errors"] == 0
    print(json.dumps({"ok": ok, **report}, indent=2))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
