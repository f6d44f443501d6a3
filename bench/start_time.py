"""Start to listening (`make bench-start`): `python -m gateway serve` with the policy lexicon built, and
with it read from the opt-in lexicon cache (ELICITATION_GATEWAY_LEXICON_CACHE, docs/operations.md),
alternating, medians of N starts each. Also prints the cache file's size.

`python bench/start_time.py [STARTS]` (default 5).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from gateway_harness import free_port, write_gateway_config  # noqa: E402

from gateway.policy.lexicon_cache import ENV_VAR  # noqa: E402


def start_to_listening(config: Path, env: dict[str, str]) -> float:
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the gateway exited with {proc.returncode} before it listened")
            try:
                socket.create_connection(("127.0.0.1", port), 0.05).close()
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.01)
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    starts = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = write_gateway_config(tmp, {"up": ("http://127.0.0.1:9/mcp", {"modes": ["form"]})})
        built_env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
        cached_env = {**built_env, ENV_VAR: str(tmp / "cache")}
        start_to_listening(config, cached_env)  # writes the cache file
        built, cached = [], []
        for _ in range(starts):
            built.append(start_to_listening(config, built_env))
            cached.append(start_to_listening(config, cached_env))
        (cache_file,) = (tmp / "cache").glob("lexicon-*.pickle")
        print(f"start to listening, median of {starts}: lexicon built {statistics.median(built):.2f} s, "
              f"read from the cache {statistics.median(cached):.2f} s")
        print(f"  built:  {', '.join(f'{t:.2f}' for t in built)}")
        print(f"  cached: {', '.join(f'{t:.2f}' for t in cached)}")
        print(f"cache file: {cache_file.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
