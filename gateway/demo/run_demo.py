"""`make run`: the bundled demo server plus the gateway in front of it, in-memory state."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from gateway.config import load_config
from gateway.serve import serve

DEMO_PORT = 9101
CONFIG = Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"


def _wait(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"demo server did not start on port {port}")


def main() -> None:
    cfg = load_config(CONFIG)
    demo = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "gateway.demo.demo_server", "--host", "127.0.0.1", "--port", str(DEMO_PORT)]
    )
    try:
        _wait(DEMO_PORT, demo)
        listen = cfg.gateway.listen
        url = f"http://{listen.host}:{listen.port}/servers/demo/mcp"
        print(
            f"\ndemo MCP server on http://127.0.0.1:{DEMO_PORT}/mcp\n"
            f"gateway in front of it: {url}\n\n"
            "In another terminal, connect the example host and answer on the terminal:\n"
            f"  .venv/bin/python examples/host.py {url} --tool book_table\n"
            "  (tools: book_table, connect_account, ask_password, ask_with_link, echo; --auto answers by itself)\n",
            file=sys.stderr,
            flush=True,
        )
        serve(cfg)
    finally:
        demo.terminate()
        demo.wait(5)


if __name__ == "__main__":
    main()
