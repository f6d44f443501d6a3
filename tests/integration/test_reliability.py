"""Reliability through the real gateway: one server's 10x burst against another server's latency.

The other reliability cases live beside the features they exercise:
- upstream killed mid-elicitation: test_proxy.py::test_upstream_dies_while_host_answers_an_elicitation
  and ::test_upstream_killed_mid_stream_fails_the_call_without_hanging;
- host disconnects mid-elicitation, the upstream gets notifications/cancelled:
  test_session_bounds.py::test_hosts_that_vanish_mid_elicitation_have_their_upstream_calls_cancelled_and_released.
`make burst` runs the measurement below for longer; `make soak` runs 10 minutes of mixed traffic.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from burst import phase, setup

pytestmark = pytest.mark.anyio

# The bound (docs/security.md): while one server goes from 1 to 10 concurrent busy callers, another
# server's p95 latency stays under BOUND_MS and none of its calls fail. Measured with `make burst`
# on the 2-core reference machine: p95 15 ms at 1x, 100 ms at 10x (ratio 6.4). CI runs under
# coverage (about 2x slower) on machines that may run other suites at once, hence the margin.
BOUND_MS = 1000.0


async def test_a_10x_burst_from_one_server_keeps_another_within_the_bound(tmp_path: Path) -> None:
    with setup(tmp_path) as gw:
        await phase(gw.base, 1, 1.0)  # warm-up
        normal = await phase(gw.base, 1, 3.0)
        burst = await phase(gw.base, 10, 3.0)
    assert len(normal.quiet_ms) >= 20 and len(burst.quiet_ms) >= 10  # the quiet server kept answering
    # The burst ran at full tilt the whole phase. (Not "more calls than one caller": on a machine whose
    # cores are already busy, ten callers cannot get more done than one, only wait longer.)
    assert burst.noisy_calls >= normal.noisy_calls / 2
    assert burst.p(0.95) < BOUND_MS, (normal.summary(), burst.summary())
