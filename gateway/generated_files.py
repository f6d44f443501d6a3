"""Files generated from the code (the policy JSON Schema, the configuration reference): write, or check in CI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(description: str, module: str, render: Callable[[], str], argv: list[str] | None = None) -> int:
    """`python -m MODULE PATH` writes PATH; `--check` exits 1 (naming the command) if PATH is stale."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("path", type=Path)
    p.add_argument("--check", action="store_true", help="fail if the file is not up to date")
    args = p.parse_args(argv)
    text = render()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if current != text:
            print(f"{args.path} is stale: run python -m {module} {args.path}", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text, encoding="utf-8")
    return 0
