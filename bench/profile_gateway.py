"""Where the gateway's time goes under load (`make bench-profile`): py-spy samples it while wrk sends
`tools/call` echo at concurrency 32, through the gateway (memory state, full policy) to the fast upstream.

Prints the functions with the most samples, by own time and by inclusive time, as a share of the
samples. py-spy comes from bench/.venv; the raw collapsed stacks are kept (--out) for a flame graph.

`python bench/profile_gateway.py [--seconds 15] [--tool echo|echo_sse] [--state memory|redis] [--out FILE]`
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import run_benchmarks as rb

PY_SPY = rb.BENCH / ".venv" / "bin" / "py-spy"


def frame_name(frame: str) -> str:
    """`function (path/to/file.py:123)` -> `function (file.py)`: lines apart are one function."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    marker = "site-packages/"
    short = path.split(marker, 1)[1] if marker in path else path.split("/gateway/", 1)[-1]
    return f"{name} ({short})"


def summarize(collapsed: str, top: int) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = [frame_name(f) for f in stack.split(";")]
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    out = [f"{total} samples", "", "own time:"]
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    out += ["", "inclusive time:"]
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--tool", default="echo", choices=["echo", "echo_sse"])
    p.add_argument("--state", default="memory", choices=["memory", "redis"], help="the gateway's state backend")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--out", help="keep py-spy's collapsed stacks here")
    args = p.parse_args()
    if not PY_SPY.exists():
        raise SystemExit("py-spy is missing: make bench-tools installs it into bench/.venv")
    loader = rb.pick_loader("auto")
    key = f"gateway-{args.state}"
    with tempfile.TemporaryDirectory() as tmp_name, rb.targets(Path(tmp_name), [key]) as (_, by_key):
        target = by_key[key]
        if target.unavailable:
            raise SystemExit(target.unavailable)
        asyncio.run(rb.prepare(target, 200))
        raw = Path(args.out or Path(tmp_name) / "stacks.txt")
        spy = subprocess.Popen([str(PY_SPY), "record", "--pid", str(target.pid), "--format", "raw", "--rate", "250",
                                "--duration", str(args.seconds + 1), "--output", str(raw), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        figures = rb.run_load(loader, target, args.tool, 32, args.seconds)
        _, err = spy.communicate(timeout=args.seconds + 60)
        if spy.returncode != 0 or not raw.exists():
            raise SystemExit(f"py-spy failed: {err.decode(errors='replace')[-500:]}")
        print(f"gateway, {args.state} state, {args.tool} c=32 for {args.seconds} s with {loader}: "
              f"{figures['requests'] / figures['seconds']:,.0f} req/s while sampled (py-spy slows it a little)")
        print(summarize(raw.read_text(), args.top))
        if args.out:
            print(f"\ncollapsed stacks: {args.out} (flamegraph.pl or speedscope read them)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    if shutil.which("wrk") is None:
        print("wrk not installed: the aiohttp load generator shares the machine with the gateway", file=sys.stderr)
    main()
