"""Starting real processes for integration tests: SDK upstream servers and the gateway itself."""

from __future__ import annotations

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
def upstream_server(tmp: Path, name: str = "upstream") -> Iterator[Proc]:
    port = free_port()
    with running([sys.executable, str(HERE / "upstream_server.py"), str(port)], port, tmp / f"{name}.log") as p:
        yield p


ServerSpec = str | Mapping[str, Any]


def stdio_spec() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HERE / "upstream_server.py"), "stdio"]}


def write_gateway_config(
    tmp: Path, servers: Mapping[str, tuple[ServerSpec, Mapping[str, Any]]], state: Mapping[str, Any] | None = None
) -> Path:
    """servers: name -> (upstream url or server config mapping, elicitation policy mapping)."""
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
    path = tmp / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def gateway(
    tmp: Path, servers: Mapping[str, tuple[ServerSpec, Mapping[str, Any]]], state: Mapping[str, Any] | None = None
) -> Iterator[Proc]:
    config = write_gateway_config(tmp, servers, state)
    port = free_port()
    args = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    with running(args, port, tmp / "gateway.log") as p:
        yield p
