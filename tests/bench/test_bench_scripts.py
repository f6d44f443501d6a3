"""The benchmark scripts run (a tiny sample) and print their table, so they cannot silently rot.

Figures are not checked: performance is measured by `make bench`, never asserted in tests.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "bench" / "run_benchmarks.py"

WRK_OUTPUT = """Running 1s test @ http://127.0.0.1:18001/mcp
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    95.64us  137.89us   3.60ms   98.58%
    Req/Sec    23.53k     4.87k   29.01k    54.55%
  Latency Distribution
     50%   69.00us
     75%  103.00us
     90%  106.00us
     99%    1.36ms
  25685 requests in 1.10s, 3.11MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  23367.99
Transfer/sec:      2.83MB
"""


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_benchmarks", RUN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_benchmarks"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_wrk_output_is_read_with_units_and_errors() -> None:
    figures = load_runner().parse_wrk(WRK_OUTPUT)
    assert figures == {"requests": 25685.0, "errors": 10.0, "seconds": 1.1, "p50_ms": 0.069, "p99_ms": 1.36}


def test_a_load_run_that_completed_nothing_gives_no_latency() -> None:
    # FastMCP's proxy once timed out every request of a 1 s run at c=32: wrk still printed latencies, and the
    # table showed a negative added p99. Such a run counts 0 req/s and no latency.
    runner = load_runner()
    target = runner.Target("fastmcp")
    target.loads[("echo", 32)] = [{"requests": 0.0, "errors": 32.0, "seconds": 1.0, "p50_ms": 0.1, "p99_ms": 0.2}]
    assert runner.load_figure(target, "echo", 32, "rps") == 0.0
    assert runner.load_figure(target, "echo", 32, "p99_ms") is None


def test_the_side_by_side_table_prints_with_a_tiny_sample() -> None:
    targets = "direct,forwarder,gateway-memory,fastmcp"
    out = subprocess.run([sys.executable, str(RUN), "--smoke", "--load", "aiohttp", "--targets", targets],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "load: aiohttp (bench/loadgen.py" in text
    assert "machine: " in text and "machine state: " in text
    table = text.split("\n\n")[1]  # the figures; the ratios follow in a table of their own
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    for label in ("direct (upstream)", "plain aiohttp forwarder", "gateway, memory state"):
        cells = [c.strip() for c in rows[label].split("|")[2:-1]]
        assert len(cells) == 12 and "not measured" not in rows[label], rows[label]
        assert "–" not in cells[:3] and "–" not in cells[6:11], (label, cells)  # every measured column has a figure
    # FastMCP lives in bench/.venv (made by `make bench`): measured there, or a row that says why not.
    fastmcp = rows["FastMCP proxy"]
    assert "not measured: " in fastmcp or fastmcp.count("–") < 4, fastmcp
    assert "× forwarder / × direct" in text and "Goals (gateway vs forwarder):" in text
    assert "not measured (" not in text, text  # no exchange failed on any target


def test_policy_only_needs_no_servers() -> None:
    out = subprocess.run([sys.executable, str(RUN), "--smoke", "--policy-only"], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "policy decision, typical 5-field form, new: p50" in out.stdout
    assert "policy lexicon, built in a fresh process:" in out.stdout


def test_the_profile_summary_reads_collapsed_stacks() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        load_runner()
        spec = importlib.util.spec_from_file_location("profile_gateway", REPO / "bench" / "profile_gateway.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "bench"))
    stacks = ("main (gateway/cli.py:235);post (gateway/http/endpoint.py:10);check_json (gateway/core/json_limits.py:42) 3\n"
              "main (gateway/cli.py:235);write (asyncio/selector_events.py:1) 1\n")
    text = module.summarize(stacks, 5)
    assert text.startswith("4 samples")
    own = text.split("inclusive time:")[0]
    assert "75.0%  check_json (gateway/core/json_limits.py)" in own and "25.0%  write (asyncio/selector_events.py)" in own
    assert "100.0%  main (gateway/cli.py)" in text.split("inclusive time:")[1]


def test_the_start_time_script_prints_both_starts_and_the_cache_size() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "start_time.py"), "1"], capture_output=True,
                         text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "lexicon built" in out.stdout and "read from the cache" in out.stdout and "cache file:" in out.stdout


def test_the_client_costs_print_both_sides_with_a_tiny_sample() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "client_costs.py"), "--calls", "256"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[1].startswith("upstream POST (HttpPool): aiohttp ClientSession ") and "http1.py" in lines[1]
    assert lines[2].startswith("session-load EVALSHA: redis-py ") and "redis_lean.py" in lines[2]


def test_the_ab_of_checkouts_prints_every_target_with_a_tiny_sample() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "ab_gateways.py"), "--rounds", "1", "--seconds", "1",
                          "fw=forwarder", "this=."], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [line.split(":")[0] for line in out.stdout.splitlines()[1:]] == ["fw", "this"]


def test_the_elicitation_ab_prints_round_trips_and_state_operations() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "ab_gateways.py"), "--rounds", "1", "--elicitations",
                          "2", "fw=forwarder", "this=.:redis"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    fw, this = out.stdout.splitlines()[1:]
    assert fw.startswith("fw: 2025-11-25 ") and "2026-07-28" in fw and "state operations" not in fw
    assert this.startswith("this: 2025-11-25 ") and "state operations per elicitation: " in this and "load_session" in this
