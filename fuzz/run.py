"""Coverage-guided fuzzing with atheris: `python -m fuzz.run TARGET [libFuzzer flags]`.

TARGET is one of fuzz.targets.TARGETS. Seeds come from fuzz/corpus/TARGET; new
corpus entries go to a scratch directory; a crash is written to fuzz/regressions/
(tests/fuzz replays every file there through every target: a crash becomes a
regression test by committing its file).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["gateway"]):
    from fuzz.targets import TARGETS

HERE = Path(__file__).parent


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        print(f"usage: python -m fuzz.run {{{','.join(TARGETS)}}} [libFuzzer flags]", file=sys.stderr)
        raise SystemExit(2)
    name, flags = sys.argv[1], sys.argv[2:]
    scratch = tempfile.mkdtemp(prefix=f"fuzz-{name}-")
    artifacts = f"-artifact_prefix={HERE / 'regressions'}/{name}-"
    args = [sys.argv[0], *flags, artifacts, scratch, str(HERE / "corpus" / name)]
    atheris.Setup(args, TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
