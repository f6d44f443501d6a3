"""`serve` runs on uvloop unless `listen.uvloop: false` or `--no-uvloop` says otherwise (docs/performance.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx2
import pytest
from gateway_harness import free_port, running, write_gateway_config


def starting_line(log: Path) -> dict[str, object]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if '"gateway.starting"' in line:
                return dict(json.loads(line))
        time.sleep(0.05)
    raise AssertionError(log.read_text()[-2000:])


@pytest.mark.parametrize(("config_uvloop", "flag", "expected"), [
    (None, False, "uvloop"), (False, False, "asyncio"), (True, True, "asyncio"),
])
def test_the_event_loop_follows_config_and_flag(tmp_path: Path, config_uvloop: bool | None, flag: bool,
                                                expected: str) -> None:
    extra = {} if config_uvloop is None else {"listen": {"uvloop": config_uvloop}}
    config = write_gateway_config(tmp_path, {"up": ("http://127.0.0.1:9/mcp", {"modes": ["form"]})}, extra=extra)
    port = free_port()
    args = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    with running([*args, "--no-uvloop"] if flag else args, port, tmp_path / "gw.log") as gw:
        assert starting_line(gw.log)["event_loop"] == expected
        assert httpx2.get(f"{gw.base}/healthz").status_code == 200
