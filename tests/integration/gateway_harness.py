"""Starting real processes for integration tests: SDK upstream servers and the gateway itself."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
REPO = HERE.parent.parent


def sse_messages(text: str) -> list[Any]:
    """The JSON messages of an SSE body; priming events (empty data) carry none."""
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} not ready after {timeout}s:\n{log.read_text()[-3000:]}")


@dataclass
class Proc:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def logged(self, text: str, timeout: float = 5.0) -> bool:
        """Whether `text` shows in the log within `timeout`: lines written after the host got its answer
        (a request's outcome, a timeout's) may land a moment after the test reads on."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True


@contextmanager
def running(args: list[str], port: int, log: Path, env: Mapping[str, str] | None = None) -> Iterator[Proc]:
    fh = log.open("wb")
    proc = subprocess.Popen(
        args, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, **(env or {})}
    )
    handle = Proc(port, proc, log)
    try:
        wait_for_port(port, proc, log)
        yield handle
    finally:
        handle.stop()
        fh.close()


@contextmanager
def upstream_server(tmp: Path, name: str = "upstream", era: str = "both") -> Iterator[Proc]:
    """The SDK test server; `era`: both (default), legacy (handshake only) or modern (2026-07-28 only)."""
    port = free_port()
    with running([sys.executable, str(HERE / "upstream_server.py"), str(port), era], port, tmp / f"{name}.log") as p:
        yield p


@contextmanager
def balancer(tmp: Path, backends: list[Proc], name: str = "balancer") -> Iterator[Proc]:
    """The round-robin balancer (no affinity) in front of gateway replicas."""
    port = free_port()
    args = [sys.executable, str(HERE / "balancer.py"), str(port), *[b.base for b in backends]]
    with running(args, port, tmp / f"{name}.log") as p:
        yield p


ServerSpec = str | Mapping[str, Any]


def stdio_spec() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HERE / "upstream_server.py"), "stdio"]}


def write_gateway_config(
    tmp: Path, servers: Mapping[str, tuple[ServerSpec, Mapping[str, Any]]], state: Mapping[str, Any] | None = None,
    sessions: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None,
) -> Path:
    """servers: name -> (upstream url or server config mapping, elicitation policy mapping);
    extra: more top-level keys (auth, admin, listen: merged into the defaults)."""
    cfg_servers = {}
    for name, (spec, policy) in servers.items():
        policy_path = tmp / f"policy-{name}.yaml"
        policy_path.write_text(yaml.safe_dump({"elicitation": dict(policy)}))
        base = {"url": spec} if isinstance(spec, str) else dict(spec)
        cfg_servers[name] = {**base, "policy": policy_path.name}
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "state": dict(state or {"backend": "memory"}),
        "logging": {"format": "json", "level": "info"},
        "servers": cfg_servers,
    }
    if sessions:
        config["sessions"] = dict(sessions)
    for key, value in (extra or {}).items():
        base_value = config.get(key)
        config[key] = {**base_value, **value} if isinstance(base_value, dict) else value
    path = tmp / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def gateway(
    tmp: Path, servers: Mapping[str, tuple[ServerSpec, Mapping[str, Any]]], state: Mapping[str, Any] | None = None,
    sessions: Mapping[str, Any] | None = None, name: str = "gateway", extra: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Proc]:
    config = write_gateway_config(tmp, servers, state, sessions, extra)
    port = free_port()
    args = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    with running(args, port, tmp / f"{name}.log", env) as p:
        yield p


async def received_by(upstream: Proc) -> list[Any]:
    """What the raw hostile upstream (hostile_upstream.py) received from the gateway."""
    import httpx2

    async with httpx2.AsyncClient() as http:
        out: list[Any] = (await http.get(f"{upstream.base}/received")).json()
    return out


def text_of(result: Any) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert type(block).__name__ == "TextContent", block
    return str(block.text)


class AnsweringHost:
    """An SDK elicitation callback that accepts with `name` and keeps every request it was shown."""

    def __init__(self, name: str = "Ada", delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.seen: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        self.seen.append(params)
        if self.delay:
            await asyncio.sleep(self.delay)
        return ElicitResult(action="accept", content={"name": self.name})
