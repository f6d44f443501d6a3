"""An interleaved A/B of gateways built from different checkouts, beside the plain forwarder, in one run.

`python bench/ab_gateways.py [--rounds 4] [--seconds 4] [--tool echo] [--concurrency 32] NAME=SPEC ...`

Each SPEC is `forwarder`, or a checkout's directory (`.` for this one; an older commit with
`git worktree add /tmp/before <commit>`), optionally with `:redis` for Redis state (127.0.0.1:6379, db 15, a
key prefix of its own). Every gateway has the benchmark's full policy and stands in front of the same fast
upstream; the load runs rotate through the targets round after round. Prints, per target, the median req/s
and CPU µs per request of its process, and every run's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=4)
    p.add_argument("--tool", default="echo", choices=["echo", "echo_sse"])
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("targets", nargs="+", metavar="NAME=SPEC")
    args = p.parse_args()
    loader = rb.pick_loader("auto")
    with tempfile.TemporaryDirectory() as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        port = gh.free_port()
        up = stack.enter_context(gh.running([sys.executable, str(rb.BENCH / "fast_upstream.py"), str(port)], port,
                                            tmp / "upstream.log"))
        targets = []
        for item in args.targets:
            name, _, spec = item.partition("=")
            targets.append(start(stack, tmp, name, spec, up.base + "/mcp"))
            asyncio.run(rb.prepare(targets[-1], 200))
        runs: dict[str, list[tuple[float, float]]] = {t.key: [] for t in targets}
        for r in range(args.rounds):
            for t in targets[r % len(targets):] + targets[:r % len(targets)]:
                cpu0 = rb.process_cpu_seconds(t.pid)
                figures = rb.run_load(loader, t, args.tool, args.concurrency, args.seconds)
                cpu = rb.process_cpu_seconds(t.pid) - cpu0
                done = figures["requests"] or 1
                runs[t.key].append((figures["requests"] / figures["seconds"], cpu / done * 1e6))
    print(f"{args.tool} at c={args.concurrency}, {args.rounds} rounds of {args.seconds:g} s, load by {loader}")
    for name, figures in runs.items():
        rps, cpu = [f[0] for f in figures], [f[1] for f in figures]
        print(f"{name}: req/s median {statistics.median(rps):,.0f} [{', '.join(f'{x:,.0f}' for x in rps)}]; "
              f"CPU µs/req median {statistics.median(cpu):.1f} [{', '.join(f'{x:.0f}' for x in cpu)}]")


if __name__ == "__main__":
    main()
