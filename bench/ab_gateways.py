"""An interleaved A/B of gateways built from different checkouts, beside the plain forwarder, in one run.

`python bench/ab_gateways.py [--rounds 4] [--seconds 4] [--tool echo] [--concurrency 32] NAME=SPEC ...`
`python bench/ab_gateways.py --elicitations 100 [--rounds 4] NAME=SPEC ...`: elicitation round trips instead
of load (both eras, one after another, as `make bench` times them; medians per target and the state
store's operations per elicitation, read from the gateway's /metrics).

Each SPEC is `forwarder`, or a checkout's directory (`.` for this one; an older commit with
`git worktree add /tmp/before <commit>`), optionally with `:redis` for Redis state (127.0.0.1:6379, db 15, a
key prefix of its own). Every gateway has the benchmark's full policy and stands in front of the same fast
upstream; the load runs rotate through the targets round after round. Prints, per target, the median req/s
and CPU µs per request of its process, and every run's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import run_benchmarks as rb

sys.path.insert(0, str(rb.REPO / "tests" / "integration"))  # run_benchmarks puts it there too: explicit here
import gateway_harness as gh


def start(stack: ExitStack, tmp: Path, name: str, spec: str, upstream: str) -> rb.Target:
    target = rb.Target(name)
    port = gh.free_port()
    if spec == "forwarder":
        proc = stack.enter_context(gh.running(
            [sys.executable, str(rb.BENCH / "plain_forwarder.py"), str(port), upstream], port, tmp / f"{name}.log"))
        target.url, target.pid = proc.base + "/mcp", proc.process.pid
        return target
    tree, _, state_kind = spec.partition(":")
    root = Path(tree).resolve()
    state = ({"backend": "redis", "url": "redis://127.0.0.1:6379/15", "key_prefix": f"ab-{uuid.uuid4().hex}:"}
             if state_kind == "redis" else None)
    (tmp / name).mkdir()
    config = gh.write_gateway_config(tmp / name, {"up": (upstream, rb.FULL_POLICY)}, state, rb.GATEWAY_SESSIONS)
    # The checkout's own code: its directory first on the path, and the process started there.
    saved, gh.REPO = gh.REPO, root
    try:
        proc = stack.enter_context(gh.running(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)], port,
            tmp / f"{name}.log", {"PYTHONPATH": str(root)}))
    finally:
        gh.REPO = saved
    target.url, target.pid = proc.base + "/servers/up/mcp", proc.process.pid
    return target


def rotation(specs: list[str], rounds: int, warmup: int) -> Iterator[rb.Target]:
    """Every NAME=SPEC target started in front of one fast upstream and warmed up, then yielded round after
    round, each round starting one target further on (so no target always runs first)."""
    with tempfile.TemporaryDirectory() as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        port = gh.free_port()
        up = stack.enter_context(gh.running([sys.executable, str(rb.BENCH / "fast_upstream.py"), str(port)], port,
                                            tmp / "upstream.log"))
        targets = []
        for item in specs:
            name, _, spec = item.partition("=")
            targets.append(start(stack, tmp, name, spec, up.base + "/mcp"))
            asyncio.run(rb.prepare(targets[-1], warmup))
        for r in range(rounds):
            yield from targets[r % len(targets):] + targets[:r % len(targets)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=4)
    p.add_argument("--tool", default="echo", choices=["echo", "echo_sse"])
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--elicitations", type=int, default=0, help="time this many elicitations per era and round")
    p.add_argument("targets", nargs="+", metavar="NAME=SPEC")
    args = p.parse_args()
    if args.elicitations:
        elicitations(args)
        return
    loader = rb.pick_loader("auto")
    runs: dict[str, list[tuple[float, float]]] = {}
    for t in rotation(args.targets, args.rounds, warmup=200):
        cpu0 = rb.process_cpu_seconds(t.pid)
        figures = rb.run_load(loader, t, args.tool, args.concurrency, args.seconds)
        cpu = rb.process_cpu_seconds(t.pid) - cpu0
        done = figures["requests"] or 1
        runs.setdefault(t.key, []).append((figures["requests"] / figures["seconds"], cpu / done * 1e6))
    print(f"{args.tool} at c={args.concurrency}, {args.rounds} rounds of {args.seconds:g} s, load by {loader}")
    for name, figures in runs.items():
        rps, cpu = [f[0] for f in figures], [f[1] for f in figures]
        print(f"{name}: req/s median {statistics.median(rps):,.0f} [{', '.join(f'{x:,.0f}' for x in rps)}]; "
              f"CPU µs/req median {statistics.median(cpu):.1f} [{', '.join(f'{x:.0f}' for x in cpu)}]")


async def state_ops(http: Any, target: rb.Target) -> dict[str, float]:
    """The gateway's state operations so far, by operation (mcpgw_state_operation_seconds_count)."""
    if "/servers/" not in target.url:
        return {}  # the forwarder
    async with http.get(target.url.split("/servers/")[0] + "/metrics") as resp:
        text = await resp.text()
    return {m.group(1): float(m.group(2)) for m in _OP_COUNT.finditer(text)}


_OP_COUNT = re.compile(r'mcpgw_state_operation_seconds_count\{op="([^"]+)"\} ([0-9.e+]+)')


async def time_elicitations(target: rb.Target, n: int, samples: dict[str, list[float]], ops: Counter[str]) -> None:
    async with rb.client() as http:
        sid = target.sessions[0]
        before = await state_ops(http, target)
        for era, elicit in ((rb.HANDSHAKE, lambda i: rb.elicit_handshake(http, target.url, sid, 1000 + i)),
                            (rb.MODERN, lambda i: rb.elicit_modern(http, target.url, 2000 + 2 * i))):
            for i in range(n):
                t0 = time.perf_counter()
                await elicit(i)
                samples.setdefault(era, []).append((time.perf_counter() - t0) * 1000)
        after = await state_ops(http, target)
        ops.update({op: after[op] - before.get(op, 0.0) for op in after if after[op] > before.get(op, 0.0)})


def elicitations(args: argparse.Namespace) -> None:
    samples: dict[str, dict[str, list[float]]] = {}
    ops: dict[str, Counter[str]] = {}
    for t in rotation(args.targets, args.rounds, warmup=20):
        asyncio.run(time_elicitations(t, args.elicitations, samples.setdefault(t.key, {}),
                                      ops.setdefault(t.key, Counter())))
    total = args.rounds * args.elicitations * 2
    print(f"elicitation round trips, {args.rounds} rounds of {args.elicitations} per era (medians, ms; state "
          "operations per elicitation, the eras averaged)")
    for name, by_era in samples.items():
        per = ", ".join(f"{op} {n / total:.1f}" for op, n in sorted(ops[name].items()) if n / total >= 0.05)
        print(f"{name}: {rb.HANDSHAKE} {statistics.median(by_era[rb.HANDSHAKE]):.2f}; "
              f"{rb.MODERN} {statistics.median(by_era[rb.MODERN]):.2f}"
              + (f"; state operations per elicitation: {per}" if per else ""))


if __name__ == "__main__":
    main()
