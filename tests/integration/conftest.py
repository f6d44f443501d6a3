"""Fixtures shared by the integration tests: the anyio backend and the bundled demo MCP server.

`demo_server_url` starts `python -m gateway.demo.demo_server` on a free port (one
process per test module), waits until it accepts connections and yields its
Streamable HTTP endpoint, e.g. ``http://127.0.0.1:PORT/mcp``. The process is always
terminated (then killed) afterwards; its stderr goes to a temp file whose tail is
shown when it fails to start. `demo_server` yields the same process with its log paths.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class DemoServer:
    port: int
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT)


def _start(log_dir: Path, attempt: int) -> DemoServer:
    """Start one demo server; raise RuntimeError (with the log tail) if it does not come up."""
    port = _free_port()
    out_path = log_dir / f"demo-{attempt}.stdout"
    err_path = log_dir / f"demo-{attempt}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway.demo.demo_server", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    server = DemoServer(port, process, out_path, err_path)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"demo server exited with {process.returncode}:\n{server.stderr()[-3000:]}")
            if _accepts(port):
                return server
            time.sleep(0.05)
        raise RuntimeError(f"demo server not listening on {port} after {START_TIMEOUT}s:\n{server.stderr()[-3000:]}")
    except BaseException:
        _stop(process)
        raise


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    log_dir = tmp_path_factory.mktemp("demo_server")
    server: DemoServer | None = None
    error: RuntimeError | None = None
    for attempt in range(3):  # a free port can be taken between probing and binding: retry
        try:
            server = _start(log_dir, attempt)
            break
        except RuntimeError as exc:
            error = exc
    if server is None:
        assert error is not None
        pytest.fail(str(error))
    try:
        yield server
    finally:
        _stop(server.process)


@pytest.fixture(scope="module")
def demo_server_url(demo_server: DemoServer) -> str:
    if demo_server.process.poll() is not None:
        pytest.fail(f"demo server died with {demo_server.process.returncode}:\n{demo_server.stderr()[-3000:]}")
    return demo_server.url
