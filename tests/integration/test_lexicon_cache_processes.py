"""The lexicon cache as an operator meets it: `serve` says in its log where the lexicon came from, and
the CLI's stdout stays its own output when the cache is unusable (the warning goes to stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from gateway_harness import REPO, free_port, running, write_gateway_config

from gateway.policy.lexicon_cache import ENV_VAR


def _events(log: Path, wanted: str) -> list[dict[str, object]]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        if any(e.get("event") == wanted for e in lines):
            return lines
        time.sleep(0.05)
    raise AssertionError(log.read_text()[-2000:])


def test_serve_writes_the_cache_then_reads_it_and_logs_which(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    config = write_gateway_config(tmp_path, {"up": ("http://127.0.0.1:9/mcp", {"modes": ["form"]})})
    for round_, expected in enumerate(("lexicon.cache_written", "lexicon.cache_read")):
        port = free_port()
        args = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
        log = tmp_path / f"gw{round_}.log"
        with running(args, port, log, env={ENV_VAR: str(folder)}) as gw:
            events = _events(log, expected)
            assert httpx2.get(f"{gw.base}/healthz").status_code == 200
        names = [e["event"] for e in events]
        assert names.index("gateway.starting") < names.index(expected)  # logged once logging is set up
        assert [p.name for p in folder.iterdir()] == [Path(str(events[names.index(expected)]["path"])).name]


def test_explain_keeps_stdout_for_its_json_when_the_cache_folder_is_unsafe(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # anyone could swap the file: never read, never written
    config = write_gateway_config(tmp_path, {"up": ("http://127.0.0.1:9/mcp", {"modes": ["form"]})})
    form = {"mode": "form", "message": "Sign in", "requestedSchema": {
        "type": "object", "properties": {"pw": {"type": "string", "title": "Password"}}}}
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "explain", "--config", str(config), "--server", "up", "-"],
        input=json.dumps(form), capture_output=True, text=True, cwd=REPO, timeout=60,
        env={**os.environ, ENV_VAR: str(folder)},
    )
    assert json.loads(done.stdout)["decision"] == "block"
    assert "lexicon.cache_not_written" in done.stderr and "others can write it" in done.stderr
    assert list(folder.iterdir()) == []
