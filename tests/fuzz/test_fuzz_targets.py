"""The fuzz targets (fuzz/targets.py) in CI, each for a bounded short time.

- Every input in fuzz/regressions (crashes found by fuzzing, kept) goes through every target.
- Hypothesis drives each target with random and structured inputs (a few hundred each).
- Where atheris is installed, each target also runs coverage-guided for 2 seconds.
`make fuzz` runs the atheris targets far longer.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.targets import TARGETS

REPO = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@pytest.mark.parametrize("path", sorted((REPO / "fuzz" / "regressions").glob("*-*")), ids=lambda p: p.name)
def test_every_kept_crash_passes_every_target(path: Path) -> None:
    data = path.read_bytes()
    for target in TARGETS.values():
        target(data)


@pytest.mark.parametrize("name", sorted(TARGETS))
@FAST
@given(data=st.binary(max_size=2048))
def test_targets_on_random_bytes(name: str, data: bytes) -> None:
    TARGETS[name](data)


@FAST
@given(value=json_values, duplicate=st.booleans())
def test_jsonrpc_target_on_json_with_and_without_duplicate_keys(value: Any, duplicate: bool) -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "params": value})
    if duplicate:
        text = text[:-1] + ', "id": 2}'
    TARGETS["jsonrpc"](text.encode())


@FAST
@given(method=st.sampled_from(["elicitation/create", "sampling/createMessage", "roots/list", "notifications/progress",
                                "notifications/cancelled", "notifications/elicitation/complete", "tools/call"]),
       params=json_values, rid=st.none() | st.integers() | st.text(max_size=5))
def test_core_target_on_jsonrpc_shaped_messages(method: str, params: Any, rid: Any) -> None:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        msg["id"] = rid
    TARGETS["core"](json.dumps(msg).encode())
    TARGETS["core"](json.dumps({"jsonrpc": "2.0", "id": rid, "result": params}).encode())


@FAST
@given(params=st.dictionaries(st.sampled_from(["mode", "message", "url", "elicitationId", "requestedSchema", "_meta"]),
                              json_values, max_size=5),
       rid=st.integers() | st.text(max_size=5))
def test_core_target_on_elicitations_with_any_field_of_any_type(params: dict[str, Any], rid: Any) -> None:
    # found by atheris: a "mode" that is an object once crashed the gate (unhashable)
    TARGETS["core"](json.dumps({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params}).encode())
    TARGETS["policy"](json.dumps(params).encode())


@FAST
@given(message=st.text(max_size=200), names=st.lists(st.text(max_size=20), max_size=5),
       mode=st.sampled_from(["form", "url", None]))
def test_policy_target_on_elicitation_shaped_params(message: str, names: list[str], mode: str | None) -> None:
    params: dict[str, Any] = {"message": message,
                              "requestedSchema": {"type": "object",
                                                  "properties": {n: {"type": "string", "title": n} for n in names}}}
    if mode is not None:
        params["mode"] = mode
    if mode == "url":
        params.update(url=message, elicitationId="e")
    TARGETS["policy"](json.dumps(params).encode())


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed here")
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_atheris_runs_each_target_briefly_without_a_crash(name: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", name, "-max_total_time=2", "-timeout=10", "-rss_limit_mb=2048"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr[-3000:]
