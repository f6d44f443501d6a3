"""The CI subset of the conformance run: the elicitation scenarios of both eras, each run against the
reference server directly and through a real gateway (see run.py and docs/protocol-support.md).

One test per scenario and version: whatever passes directly must pass through the gateway. The
scenarios listed in expected_gateway_failures.txt are xfail(strict=True): when the gateway starts
passing one, the test fails until its line is removed from that file.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_runner", HERE / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


runner = _load_runner()

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(240)]

BASELINE = runner.read_baseline()


def _marks(key: str) -> list[pytest.MarkDecorator]:
    reason = BASELINE.get(key)
    if reason is None:
        return []
    return [pytest.mark.xfail(strict=not reason.startswith("flaky"), reason=reason)]


CASES = [
    pytest.param(name, version, id=f"{name}@{version}", marks=_marks(f"server {name} {version}"))
    for name in runner.ELICITATION_SUBSET
    for version in runner.VERSIONS
    if version in runner.SERVER_SCENARIOS[name]
]


@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], object]:
    try:
        runner.tooling()
    except runner.ToolingMissing as exc:
        pytest.skip(f"Node 22 could not be installed: {exc}")
    report = runner.run_matrix("elicitation", work=tmp_path_factory.mktemp("conformance"))
    print(f"\nconformance subset: {report.seconds:.1f} s\n" + runner.markdown(report))
    return {(row.scenario, row.version): row for row in report.rows}


@pytest.mark.parametrize(("name", "version"), CASES)
def test_gateway_passes_what_the_reference_passes(
    subset: dict[tuple[str, str], object], name: str, version: str
) -> None:
    row = subset[(name, version)]
    assert row.direct.ok, (  # type: ignore[attr-defined]
        f"the reference server fails {name} at {version} directly: {row.direct.cell()} {row.direct.detail}"  # type: ignore[attr-defined]
    )
    assert row.gateway.ok, (  # type: ignore[attr-defined]
        f"{name} at {version}: reference passes directly, through the gateway: "
        f"{row.gateway.cell()} {row.gateway.detail}"  # type: ignore[attr-defined]
    )


def test_baseline_names_only_known_scenarios() -> None:
    """A typo in expected_gateway_failures.txt would silently list nothing."""
    known = {f"server {n} {v}" for n, vs in runner.SERVER_SCENARIOS.items() for v in vs}
    known |= {f"client {n} {v}" for n, vs in runner.CLIENT_SCENARIOS.items() for v in vs}
    known |= {f"npm server-everything-smoke {m}" for m in ("legacy", "auto", runner.V2026)}
    assert set(BASELINE) <= known, sorted(set(BASELINE) - known)
