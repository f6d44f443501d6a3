"""Side-by-side benchmark (`make bench`, `make bench-quick`): the gateway next to what it is judged against.

Targets, all in front of the same fast raw-aiohttp MCP upstream (bench/fast_upstream.py), measured in
one run, interleaved (every figure is taken for each target in turn, round after round):

- direct: the upstream itself;
- forwarder: the simplest aiohttp reverse proxy (bench/plain_forwarder.py), the floor for any aiohttp gateway;
- gateway-memory / gateway-redis: this gateway, full default policy, memory or Redis state
  (127.0.0.1:6379, a unique key prefix);
- fastmcp: FastMCP's proxy (bench/fastmcp_proxy.py), run from the benchmark's own virtualenv
  (bench/.venv, made by the Makefile); when it is missing the row says why.

One table: req/s at concurrency 1 and 32 (`tools/call` echo answered as JSON, and at 32 as SSE), added
p50 (c=1) and p99 (c=32) latency over direct, CPU µs per request of the proxy process (c=32 JSON),
KiB per idle session and sessions opened per second, elicitation round trip in both eras (2025-11-25:
`elicitation/create` on the call's stream, answered by a POST; 2026-07-28: an `input_required` result
and the retry), SSE relay events per second, one policy decision; then ratios to the forwarder and
to direct. Request rates come from `wrk` when installed, else from bench/loadgen.py (aiohttp, in a
process of its own); the header says which.

`python bench/run_benchmarks.py [--quick | --smoke] [--targets a,b] [--load auto|wrk|aiohttp]`;
`--policy-only` measures the policy decision alone. Loopback only; bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
BENCH_PYTHON = BENCH / ".venv" / "bin" / "python"
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import Proc, free_port, gateway, running  # noqa: E402

from gateway.policy import lexicon_cache  # noqa: E402
from gateway.policy.engine import PolicyEngine  # noqa: E402
from gateway.policy.policy_config import ElicitationPolicy  # noqa: E402

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# The default policy with every stage on; rate limits on too, high enough not to block the benchmark.
FULL_POLICY = {"modes": ["form", "url"], "rate_limit": "1000000/second", "rate_limit_per_user": "1000000/second",
               "sensitive_fields": "block", "form_urls": "strip", "tag_origin": True}
# Room for the idle sessions; the per-session notification flood cap (200/s by default) lifted, so the
# SSE column measures the relay, not the cap.
GATEWAY_SESSIONS = {"max_sessions": 1_000_000, "max_notifications_per_second": 1e9}
ALL_TARGETS = ("direct", "forwarder", "gateway-memory", "gateway-redis", "fastmcp")
LABELS = {"direct": "direct (upstream)", "forwarder": "plain aiohttp forwarder",
          "gateway-memory": "gateway, memory state", "gateway-redis": "gateway, Redis state",
          "fastmcp": "FastMCP proxy"}
LOADS = (("echo", 1), ("echo", 32), ("echo_sse", 32))


@dataclass(frozen=True)
class Settings:
    rounds: int
    seconds: float  # per load run
    elicitations: int  # round trips per target, per era, per round
    sse_events: int  # per streamed call
    idle_sessions: int
    policy_runs: int
    warmup: int = 100  # echo calls per target before measuring


FULL = Settings(rounds=3, seconds=4.0, elicitations=100, sse_events=5000, idle_sessions=2000, policy_runs=20000)
QUICK = Settings(rounds=1, seconds=1, elicitations=40, sse_events=2000, idle_sessions=200, policy_runs=3000)
SMOKE = Settings(rounds=1, seconds=0.1, elicitations=2, sse_events=20, idle_sessions=10, policy_runs=50, warmup=4)


@dataclass
class Target:
    key: str
    url: str = ""
    pid: int = 0
    unavailable: str = ""  # why the row could not be measured
    sessions: list[str] = field(default_factory=list)
    extra_kib: Callable[[], float] | None = None  # memory held outside the process (Redis)
    loads: dict[tuple[str, int], list[dict[str, float]]] = field(default_factory=dict)
    cpu_us: list[float] = field(default_factory=list)
    elicit: dict[str, list[float]] = field(default_factory=dict)
    sse: list[float] = field(default_factory=list)
    session_figures: tuple[float, float] | None = None  # (KiB per idle session, sessions/s)
    failures: dict[str, str] = field(default_factory=dict)  # column -> reason


# ---------------------------------------------------------------------------------------------------
# Policy decision (in-process, no servers)

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


def _suffix(i: int) -> str:
    """Two real words for `i` (the English BIP-39 list: 2048 ordinary words), so that every form's texts are
    new while its words, like real traffic's, come from a vocabulary (a number would make every label
    skip the spelling checks that words pay for)."""
    words = _vocabulary()
    return f"{words[i % len(words)]} {words[(i // len(words) + 7 * i) % len(words)]}"


@functools.lru_cache(maxsize=1)
def _vocabulary() -> list[str]:
    from mnemonic import Mnemonic
    return list(Mnemonic("english").wordlist)


def unseen_form(i: int, words: bool = False) -> dict[str, Any]:
    """The typical form with every text made new, so no detector cache helps: a number added to each text
    (the issue's measure), or with `words` two ordinary words (texts new, and their words too until seen)."""
    schema = TYPICAL_FORM["requestedSchema"]
    props = {
        name: {**prop, "title": f"{prop['title']} {_suffix(i + k) if words else i}"}
        for k, (name, prop) in enumerate(schema["properties"].items())
    }
    message = f"{TYPICAL_FORM['message']} {_suffix(i + 99) if words else f'#{i}'}"
    return {**TYPICAL_FORM, "message": message, "requestedSchema": {**schema, "properties": props}}


_LEXICON_PROBE = """
import gc, time
import gateway.policy.sensitive_fields
from gateway.policy.secret_lexicon import load_builtin_lexicon
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
gc.collect(); before = rss(); t0 = time.perf_counter()
lexicon = load_builtin_lexicon()
took = time.perf_counter() - t0; gc.collect()
print(took, rss() - before, len(lexicon._payload_of))
"""


def bench_lexicon() -> tuple[float, float, int]:
    """Building the policy lexicon in a fresh process: seconds, MiB of resident memory it adds, keys."""
    out = subprocess.run([sys.executable, "-c", _LEXICON_PROBE], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**{k: v for k, v in os.environ.items() if k != lexicon_cache.ENV_VAR},
                                        "PYTHONPATH": str(REPO)})  # built, never read from the cache
    took, mib, keys = out.stdout.split()
    return float(took), float(mib), int(keys)


def bench_policy(n: int) -> dict[str, tuple[float, float]]:
    """p50, p99 µs of one decision on the typical 5-field form: repeated, and every form new."""
    engine = PolicyEngine("crm", ElicitationPolicy(rate_limit=None))
    for _ in range(min(n, 500)):
        engine.decide(TYPICAL_FORM)
    out = {}
    for label, forms in (("repeated", [TYPICAL_FORM] * n), ("new", [unseen_form(i) for i in range(n)]),
                         ("new words", [unseen_form(i, words=True) for i in range(n)])):
        samples = []
        for form in forms:
            t0 = time.perf_counter_ns()
            engine.decide(form)
            samples.append((time.perf_counter_ns() - t0) / 1000)
        out[label] = (percentile(samples, 0.5), percentile(samples, 0.99))
    return out


# ---------------------------------------------------------------------------------------------------
# The machine

def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def busy_jiffies() -> int:
    """All CPUs' busy time since boot (/proc/stat), in clock ticks."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle and iowait


def process_cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def package_version(python: Path | str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=30)
    return out.stdout.strip() or "not installed"


# ---------------------------------------------------------------------------------------------------
# Load: wrk, or the aiohttp fallback

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def parse_wrk(text: str) -> dict[str, float]:
    """requests, errors, seconds, p50_ms, p99_ms from `wrk --latency` output."""
    def latency(pct: str) -> float:
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
        if not m:
            raise RuntimeError(f"wrk printed no {pct}% latency:\n{text}")
        return float(m.group(1)) * _UNITS[m.group(2)]

    done = re.search(r"^\s+(\d+) requests in ([\d.]+)(us|ms|s|m),", text, re.M)
    if not done:
        raise RuntimeError(f"unexpected wrk output:\n{text}")
    errors = sum(int(v) for v in re.findall(r"Non-2xx or 3xx responses: (\d+)", text))
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if socket_errors:
        errors += sum(int(v) for v in socket_errors.groups())
    return {"requests": float(done.group(1)), "errors": float(errors),
            "seconds": float(done.group(2)) * _UNITS[done.group(3)] / 1000,
            "p50_ms": latency("50"), "p99_ms": latency("99")}


def run_load(loader: str, target: Target, tool: str, concurrency: int, seconds: float) -> dict[str, float]:
    if loader == "wrk":
        # wrk takes whole seconds only
        args = ["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s",
                "-s", str(BENCH / "wrk_call.lua"), target.url, "--", tool, *target.sessions]
        out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 30)
        if out.returncode != 0:
            raise RuntimeError(f"wrk failed: {(out.stderr or out.stdout).strip()[-300:]}")
        return parse_wrk(out.stdout)
    spec = {"url": target.url, "headers": {**HEADERS, "MCP-Protocol-Version": HANDSHAKE},
            "sessions": target.sessions, "tool": tool, "concurrency": concurrency, "seconds": seconds}
    out = subprocess.run([sys.executable, str(BENCH / "loadgen.py"), json.dumps(spec)],
                         capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr.strip()[-500:]}")
    result: dict[str, float] = json.loads(out.stdout)
    return result


# ---------------------------------------------------------------------------------------------------
# MCP exchanges, both eras

async def open_session(http: aiohttp.ClientSession, url: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE, "capabilities": {"elicitation": {"form": {}}},
                       "clientInfo": {"name": "bench", "version": "1"}}}
    async with http.post(url, json=init, headers=HEADERS) as r:
        await r.read()
        if r.status != 200 or "Mcp-Session-Id" not in r.headers:
            raise RuntimeError(f"initialize: HTTP {r.status}")
        sid = r.headers["Mcp-Session-Id"]
    headers = {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": HANDSHAKE}
    async with http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers) as r:
        await r.read()
    return sid


def session_headers(sid: str) -> dict[str, str]:
    return {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": HANDSHAKE}


def messages_of(content_type: str, body: bytes) -> list[Any]:
    if content_type.startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in body.decode().splitlines()
                if line.startswith("data:") and line[5:].strip()]
    return [json.loads(body)]


async def call_echo(http: aiohttp.ClientSession, url: str, sid: str, rid: int, tool: str = "echo") -> None:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "x"}}}
    async with http.post(url, json=body, headers=session_headers(sid)) as r:
        final = messages_of(r.headers.get("Content-Type", ""), await r.read())[-1]
    if final.get("id") != rid or "result" not in final:
        raise RuntimeError(f"{tool}: unexpected answer {str(final)[:200]}")


async def elicit_handshake(http: aiohttp.ClientSession, url: str, sid: str, rid: int) -> None:
    """2025-11-25: tools/call whose server sends elicitation/create on the call's stream; answered by a POST."""
    headers = session_headers(sid)
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
    async with http.post(url, json=body, headers=headers) as r:
        async for raw in r.content:
            if not raw.startswith(b"data:") or not raw[5:].strip():
                continue
            msg = json.loads(raw[5:])
            if msg.get("method") == "elicitation/create":
                answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept", "content": {"name": "b"}}}
                async with http.post(url, json=answer, headers=headers) as a:
                    await a.read()
                    if a.status != 202:
                        raise RuntimeError(f"answer refused: HTTP {a.status}")
            elif msg.get("id") == rid:
                if "result" not in msg or "accept" not in json.dumps(msg["result"]):
                    raise RuntimeError(f"unexpected result {str(msg)[:200]}")
                return
    raise RuntimeError("the call ended without an answer")


def modern_call(rid: int, **extra: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "ask_name", "arguments": {}, "_meta": meta, **extra}}


MODERN_HEADERS = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "ask_name"}


async def elicit_modern(http: aiohttp.ClientSession, url: str, rid: int) -> None:
    """2026-07-28: an input_required result, then the retry with inputResponses and the requestState."""
    async with http.post(url, json=modern_call(rid), headers=MODERN_HEADERS) as r:
        first = messages_of(r.headers.get("Content-Type", ""), await r.read())[-1]
    result = first.get("result") or {}
    if result.get("resultType") != "input_required" or not result.get("inputRequests"):
        raise RuntimeError(f"expected input_required, got {str(first)[:200]}")
    answers = {key: {"action": "accept", "content": {"name": "b"}} for key in result["inputRequests"]}
    retry = modern_call(rid + 1, inputResponses=answers, requestState=result.get("requestState"))
    async with http.post(url, json=retry, headers=MODERN_HEADERS) as r:
        final = messages_of(r.headers.get("Content-Type", ""), await r.read())[-1]
    if "accept" not in json.dumps(final.get("result")):
        raise RuntimeError(f"unexpected retry answer {str(final)[:200]}")


async def stream_events(http: aiohttp.ClientSession, url: str, sid: str, count: int) -> float:
    """Events per second relayed on one call's SSE stream (count notifications, then the result)."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "stream", "arguments": {"count": count}}}
    seen, tail = 0, b""
    t0 = time.perf_counter()
    async with http.post(url, json=body, headers=session_headers(sid)) as r:
        async for chunk in r.content.iter_any():
            data = tail + chunk
            seen += data.count(b"notifications/message")
            tail = data[-40:]
            seen -= tail.count(b"notifications/message")
        seen += tail.count(b"notifications/message")
    elapsed = time.perf_counter() - t0
    if seen != count:
        raise RuntimeError(f"{seen} of {count} events arrived")
    return count / elapsed


def client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64), cookie_jar=aiohttp.DummyCookieJar(),
                                 timeout=aiohttp.ClientTimeout(total=60))


async def prepare(target: Target, warmup: int) -> None:
    """Sessions for the load runs, and a warm-up that also checks every exchange works on this target."""
    async with client() as http:
        target.sessions = [await open_session(http, target.url) for _ in range(32)]
        for i in range(warmup):
            await call_echo(http, target.url, target.sessions[i % 32], i + 1, "echo" if i % 2 else "echo_sse")


async def measure_exchanges(target: Target, settings: Settings) -> None:
    async with client() as http:
        sid = target.sessions[0]
        for era in (HANDSHAKE, MODERN):
            if era in target.failures:
                continue
            samples = target.elicit.setdefault(era, [])
            try:
                for i in range(settings.elicitations):
                    t0 = time.perf_counter()
                    if era == HANDSHAKE:
                        await elicit_handshake(http, target.url, sid, 1000 + i)
                    else:
                        await elicit_modern(http, target.url, 2000 + 2 * i)
                    samples.append((time.perf_counter() - t0) * 1000)
            except (TimeoutError, RuntimeError, aiohttp.ClientError, ValueError) as exc:
                target.failures[era] = f"{type(exc).__name__}: {exc}"[:160]
        if "sse" not in target.failures:
            try:
                target.sse.append(await stream_events(http, target.url, sid, settings.sse_events))
            except (TimeoutError, RuntimeError, aiohttp.ClientError) as exc:
                target.failures["sse"] = f"{type(exc).__name__}: {exc}"[:160]


async def measure_sessions(target: Target, n: int) -> None:
    before = rss_kib(target.pid) + (target.extra_kib() if target.extra_kib else 0)
    async with client() as http:
        left = iter(range(n))

        async def worker() -> None:
            for _ in left:
                await open_session(http, target.url)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(32)))
        rate = n / (time.perf_counter() - t0)
    await asyncio.sleep(0.5)
    after = rss_kib(target.pid) + (target.extra_kib() if target.extra_kib else 0)
    target.session_figures = ((after - before) / n, rate)


# ---------------------------------------------------------------------------------------------------
# Starting the targets

def fastmcp_problem() -> str:
    """Why FastMCP's proxy cannot run, or ''."""
    if not BENCH_PYTHON.exists():
        return "bench/.venv missing (make bench creates it)"
    out = subprocess.run([str(BENCH_PYTHON), "-c", "import fastmcp"], capture_output=True, text=True, timeout=60)
    if out.returncode == 0:
        return ""
    log = BENCH / ".venv" / "install.log"
    detail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    return "fastmcp not installed in bench/.venv" + (f" ({detail[0][:120]})" if detail else "")


def redis_used_kib() -> Callable[[], float]:
    import redis

    conn = redis.Redis.from_url("redis://127.0.0.1:6379/15")

    def used() -> float:
        return float(conn.info("memory")["used_memory"]) / 1024

    used()  # fails now if Redis cannot be reached
    return used


@contextmanager
def targets(tmp: Path, wanted: list[str]) -> Iterator[tuple[Proc, dict[str, Target]]]:
    with ExitStack() as stack:
        up_port = free_port()
        up = stack.enter_context(running([sys.executable, str(BENCH / "fast_upstream.py"), str(up_port)],
                                         up_port, tmp / "upstream.log"))
        upstream = up.base + "/mcp"
        out: dict[str, Target] = {}
        for key in wanted:
            t = out[key] = Target(key)
            try:
                if key == "direct":
                    t.url, t.pid = upstream, up.process.pid
                elif key == "forwarder":
                    port = free_port()
                    fw = stack.enter_context(running(
                        [sys.executable, str(BENCH / "plain_forwarder.py"), str(port), upstream], port,
                        tmp / "forwarder.log"))
                    t.url, t.pid = fw.base + "/mcp", fw.process.pid
                elif key in ("gateway-memory", "gateway-redis"):
                    state = None
                    if key == "gateway-redis":
                        t.extra_kib = redis_used_kib()
                        state = {"backend": "redis", "url": "redis://127.0.0.1:6379/15",
                                 "key_prefix": f"mcpgw-bench-{uuid.uuid4().hex}:"}
                    (tmp / key).mkdir()
                    gw = stack.enter_context(gateway(tmp / key, {"up": (upstream, FULL_POLICY)}, state,
                                                     sessions=GATEWAY_SESSIONS, name=key))
                    t.url, t.pid = gw.base + "/servers/up/mcp", gw.process.pid
                elif key == "fastmcp":
                    problem = fastmcp_problem()
                    if problem:
                        t.unavailable = problem
                        continue
                    port = free_port()
                    fm = stack.enter_context(running(
                        [str(BENCH_PYTHON), str(BENCH / "fastmcp_proxy.py"), str(port), upstream], port,
                        tmp / "fastmcp.log", env={"PYTHONWARNINGS": "ignore"}))
                    t.url, t.pid = fm.base + "/mcp", fm.process.pid
            except Exception as exc:  # a target that cannot start is a row that says why
                t.unavailable = f"could not start: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        yield up, out


# ---------------------------------------------------------------------------------------------------
# The run

@dataclass
class RunInfo:
    loader: str
    settings: Settings
    started: datetime
    elapsed: float = 0.0
    others_cpu: float = 0.0  # share of all cores used by processes not ours during the run
    load_avg: tuple[float, float] = (0.0, 0.0)
    policy: dict[str, tuple[float, float]] = field(default_factory=dict)


def pick_loader(choice: str) -> str:
    if choice == "auto":
        return "wrk" if shutil.which("wrk") else "aiohttp"
    if choice == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk, or --load aiohttp)")
    return choice


def run_all(wanted: list[str], settings: Settings, loader: str) -> tuple[RunInfo, list[Target]]:
    info = RunInfo(loader, settings, datetime.now(UTC))
    load_start = os.getloadavg()[0]
    busy0, t_start = busy_jiffies(), time.perf_counter()
    ours0 = sum(os.times()[:4])
    with tempfile.TemporaryDirectory() as tmp_name, targets(Path(tmp_name), wanted) as (_, by_key):
        live = [t for t in by_key.values() if not t.unavailable]
        for t in live:
            try:
                asyncio.run(prepare(t, settings.warmup))
            except Exception as exc:
                t.unavailable = f"warm-up failed: {type(exc).__name__}: {str(exc)[:160]}"
        live = [t for t in live if not t.unavailable]
        # Idle-session memory first, while each heap is still small: after the load runs, freed memory
        # the process keeps would absorb new sessions without the RSS moving.
        for t in live:
            asyncio.run(measure_sessions(t, settings.idle_sessions))
        for r in range(settings.rounds):
            order = live[r % len(live):] + live[:r % len(live)] if live else []
            for tool, conc in LOADS:
                for t in order:
                    cpu0 = process_cpu_seconds(t.pid)
                    try:
                        figures = run_load(loader, t, tool, conc, settings.seconds)
                    except RuntimeError as exc:
                        t.failures[f"{tool}/{conc}"] = str(exc)[:160]
                        continue
                    cpu = process_cpu_seconds(t.pid) - cpu0
                    t.loads.setdefault((tool, conc), []).append(figures)
                    if (tool, conc) == ("echo", 32) and figures["requests"]:
                        t.cpu_us.append(cpu / figures["requests"] * 1e6)
            for t in order:
                asyncio.run(measure_exchanges(t, settings))
    info.elapsed = time.perf_counter() - t_start
    ours = sum(os.times()[:4]) - ours0  # our process and every child we started and reaped (the targets, wrk)
    others = (busy_jiffies() - busy0) / os.sysconf("SC_CLK_TCK") - ours
    info.others_cpu = max(0.0, others / info.elapsed / (os.cpu_count() or 1))
    info.load_avg = (load_start, os.getloadavg()[0])
    info.policy = bench_policy(settings.policy_runs)
    return info, list(by_key.values())


# ---------------------------------------------------------------------------------------------------
# The table

def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def load_figure(t: Target, tool: str, conc: int, key: str) -> float | None:
    runs = t.loads.get((tool, conc), [])
    if key == "rps":
        return med([r["requests"] / r["seconds"] for r in runs])
    # A run that completed no request (every one timed out) has no latency: wrk's figures there describe nothing.
    return med([r[key] for r in runs if r["requests"] > 0])


def figures(t: Target, direct: Target | None, info: RunInfo) -> dict[str, float | None]:
    def added(tool: str, conc: int, key: str) -> float | None:
        mine = load_figure(t, tool, conc, key)
        base = load_figure(direct, tool, conc, key) if direct else None
        return None if mine is None or base is None or t is direct else (mine - base) * 1000  # µs

    gw = t.key.startswith("gateway")
    return {
        "rps1": load_figure(t, "echo", 1, "rps"), "rps32": load_figure(t, "echo", 32, "rps"),
        "rps32sse": load_figure(t, "echo_sse", 32, "rps"),
        "p50add": added("echo", 1, "p50_ms"), "p99add": added("echo", 32, "p99_ms"),
        "p99": load_figure(t, "echo", 32, "p99_ms"), "cpu": med(t.cpu_us),
        "kib": t.session_figures[0] if t.session_figures else None,
        "sess": t.session_figures[1] if t.session_figures else None,
        "el_old": med(t.elicit.get(HANDSHAKE, [])) if HANDSHAKE not in t.failures else None,
        "el_new": med(t.elicit.get(MODERN, [])) if MODERN not in t.failures else None,
        "sse": med(t.sse) if "sse" not in t.failures else None,
        "pol50": info.policy["new"][0] if gw and info.policy else None,
        "pol99": info.policy["new"][1] if gw and info.policy else None,
    }


COLUMNS = (("rps1", "req/s c=1", "{:,.0f}"), ("rps32", "req/s c=32", "{:,.0f}"),
           ("rps32sse", "req/s c=32 SSE reply", "{:,.0f}"), ("p50add", "+p50 c=1 µs", "{:,.0f}"),
           ("p99add", "+p99 c=32 µs", "{:,.0f}"), ("cpu", "CPU µs/req", "{:,.0f}"),
           ("kib", "KiB/idle session", "{:.2f}"), ("sess", "sessions/s", "{:,.0f}"),
           ("el_old", "elicitation 2025-11-25 ms", "{:.2f}"), ("el_new", "elicitation 2026-07-28 ms", "{:.2f}"),
           ("sse", "SSE events/s", "{:,.0f}"), ("pol50", "policy p50/p99 µs", "{:.1f}"))
# Higher is better for these; for the rest, lower is.
HIGHER = {"rps1", "rps32", "rps32sse", "sess", "sse"}


def cell(values: dict[str, float | None], key: str, fmt: str) -> str:
    v = values.get(key)
    if v is None:
        return "–"
    if key == "pol50":
        return f"{v:.1f} / {values['pol99']:.1f}"
    return fmt.format(v)


def render(info: RunInfo, rows: list[Target]) -> str:
    s = info.settings
    direct = next((t for t in rows if t.key == "direct" and not t.unavailable), None)
    fw = next((t for t in rows if t.key == "forwarder" and not t.unavailable), None)
    vals = {t.key: figures(t, direct, info) for t in rows}
    fastmcp_version = package_version(BENCH_PYTHON, "fastmcp") if BENCH_PYTHON.exists() else "not installed"
    if info.loader == "wrk":
        version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split()[1]
        loader = f"wrk ({version}, 1 thread)"
    else:
        loader = "aiohttp (bench/loadgen.py, its own process)"
    lines = [
        f"Side-by-side benchmark, {info.started:%Y-%m-%d %H:%M} UTC, {info.elapsed:.0f} s",
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"aiohttp {aiohttp.__version__} (project), FastMCP {fastmcp_version} (bench/.venv)",
        f"load: {loader}; {s.rounds} round(s) interleaved, {s.seconds:g} s per load run, "
        f"{s.elicitations} elicitations per era per round, {s.sse_events} SSE events per call, "
        f"{s.idle_sessions} idle sessions",
        f"machine state: other processes used {info.others_cpu * 100:.0f}% of all cores during the run "
        f"(load average {info.load_avg[0]:.2f} at start, {info.load_avg[1]:.2f} at end)"
        + (" — SHARED, figures are noisy" if info.others_cpu > 0.10 else ""),
        "",
        "| target | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for t in rows:
        if t.unavailable:
            lines.append(f"| {LABELS[t.key]} | not measured: {t.unavailable} |" + " |" * (len(COLUMNS) - 1))
            continue
        lines.append(f"| {LABELS[t.key]} | " + " | ".join(cell(vals[t.key], k, f) for k, _, f in COLUMNS) + " |")
    lines += ["", "Ratios (× forwarder / × direct; higher-is-better columns: above 1 is faster):", "",
              "| target | " + " | ".join(h for k, h, _ in COLUMNS if k not in ("pol50", "p50add", "p99add")) + " |",
              "|---|" + "---|" * (len(COLUMNS) - 3)]

    def ratio(key: str, mine: float | None, base: Target | None) -> str:
        ref = vals[base.key].get(key) if base else None
        return f"{mine / ref:.2f}" if mine is not None and ref else "–"

    for t in rows:
        if t.unavailable or t.key == "direct":
            continue
        v = vals[t.key]
        cells = [f"{ratio(k, v[k], fw)} / {ratio(k, v[k], direct)}" for k, _, _ in COLUMNS
                 if k not in ("pol50", "p50add", "p99add")]
        lines.append(f"| {LABELS[t.key]} | " + " | ".join(cells) + " |")
    notes = []
    for t in rows:
        errors = sum(r["errors"] for runs in t.loads.values() for r in runs)
        if errors:
            notes.append(f"- {LABELS[t.key]}: {errors:.0f} load requests failed (non-2xx or socket errors)")
        for what, why in t.failures.items():
            notes.append(f"- {LABELS[t.key]}, {what}: not measured ({why})")
    if "gateway-redis" in vals:
        notes.append("- Redis state: KiB per idle session counts the gateway's RSS and Redis's used_memory; "
                     "CPU µs/req is the gateway process's only (Redis's own CPU not included).")
    if any(t.key == "fastmcp" and not t.unavailable for t in rows):
        notes.append("- FastMCP proxy: create_proxy(URL) defaults, which open a fresh backend session "
                     "(initialize, the call, DELETE) for every request.")
    if direct:
        notes.append("- direct: CPU µs/req is the upstream's own; KiB per idle session is the upstream's.")
    if info.policy:
        notes.append(f"- policy decision, typical 5-field form: every form new p50 {info.policy['new'][0]:.1f} µs "
                     f"p99 {info.policy['new'][1]:.1f} µs; the same form repeated p50 {info.policy['repeated'][0]:.1f} "
                     f"µs p99 {info.policy['repeated'][1]:.1f} µs; every form new and made of ordinary words p50 "
                     f"{info.policy['new words'][0]:.1f} µs p99 {info.policy['new words'][1]:.1f} µs "
                     f"({s.policy_runs} runs each)")
    lines += ["", *notes, "", *goals(vals, fw)]
    return "\n".join(lines)


def goals(vals: dict[str, dict[str, float | None]], fw: Target | None) -> list[str]:
    """The issue's goals, measured (not asserted): met or not, per gateway row."""
    if fw is None:
        return []
    f = vals[fw.key]
    out = ["Goals (gateway vs forwarder):"]
    for key in ("gateway-memory", "gateway-redis"):
        v = vals.get(key)
        if not v:
            continue
        checks: list[str] = []

        def check(name: str, ok: bool | None, detail: str, checks: list[str] = checks) -> None:
            checks.append(f"{name} {detail} {'ok' if ok else 'MISSED' if ok is not None else 'n/a'}")

        def both(a: float | None, b: float | None) -> bool:
            return a is not None and b is not None

        r, fr = v["rps32"], f["rps32"]
        check("req/s c=32 >= 1.0x", (r / fr >= 1.0) if both(r, fr) and fr else None,
              f"({r / fr:.2f}x)" if both(r, fr) and fr else "")
        c, fc = v["cpu"], f["cpu"]
        check("CPU/req <= forwarder", (c <= fc) if both(c, fc) else None,
              f"({c:.0f} vs {fc:.0f} µs)" if both(c, fc) else "")
        p, fp = v["p50add"], f["p50add"]
        check("+p50 c=1 <= fw + 75 µs", (p <= fp + 75) if both(p, fp) else None,
              f"({p:.0f} vs {fp:.0f} µs)" if both(p, fp) else "")
        q, fq = v["p99"], f["p99"]
        check("p99 c=32 <= 1.5x", (q <= 1.5 * fq) if both(q, fq) else None,
              f"({q / fq:.2f}x)" if both(q, fq) and fq else "")
        for era, k in ((HANDSHAKE, "el_old"), (MODERN, "el_new")):
            e, fe = v[k], f[k]
            check(f"elicitation {era} <= fw + 0.5 ms", (e <= fe + 0.5) if both(e, fe) else None,
                  f"(+{e - fe:.2f} ms)" if both(e, fe) else "")
        if key == "gateway-redis" and "gateway-memory" in vals:
            m = vals["gateway-memory"]["rps32"]
            check("req/s c=32 >= 0.8x memory state", (r / m >= 0.8) if both(r, m) and m else None,
                  f"({r / m:.2f}x)" if both(r, m) and m else "")
        out.append(f"- {LABELS[key]}: " + "; ".join(checks))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer samples: the whole run in under a minute")
    mode.add_argument("--smoke", action="store_true", help="a tiny sample, for the test that keeps this script alive")
    p.add_argument("--targets", default=",".join(ALL_TARGETS),
                   help=f"comma-separated subset of {', '.join(ALL_TARGETS)}")
    p.add_argument("--load", choices=["auto", "wrk", "aiohttp"], default="auto",
                   help="load generator for req/s and latency (auto: wrk when installed)")
    p.add_argument("--policy-only", action="store_true", help="the policy decision alone, no servers")
    args = p.parse_args()
    settings = SMOKE if args.smoke else QUICK if args.quick else FULL
    if args.policy_only:
        for label, (p50, p99) in bench_policy(settings.policy_runs).items():
            print(f"policy decision, typical 5-field form, {label}: p50 {p50:.1f} µs, p99 {p99:.1f} µs")
        took, mib, keys = bench_lexicon()
        print(f"policy lexicon, built in a fresh process: {took:.2f} s, {mib:.0f} MiB resident, {keys:,} keys")
        return
    wanted = [k.strip() for k in args.targets.split(",") if k.strip()]
    unknown = set(wanted) - set(ALL_TARGETS)
    if unknown:
        raise SystemExit(f"unknown targets: {', '.join(sorted(unknown))} (known: {', '.join(ALL_TARGETS)})")
    info, rows = run_all(wanted, settings, pick_loader(args.load))
    print(render(info, rows))


if __name__ == "__main__":
    main()
