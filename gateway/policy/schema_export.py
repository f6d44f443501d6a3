"""Writes (or checks) policies/schema.json, the JSON Schema of the policy file, from the pydantic models."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gateway.policy.policy_config import PolicyFile


def policy_schema_text() -> str:
    schema = PolicyFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcp-elicitation-gateway policy file"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("path", type=Path)
    p.add_argument("--check", action="store_true", help="fail if the file is not up to date")
    args = p.parse_args(argv)
    text = policy_schema_text()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if current != text:
            print(f"{args.path} is stale: run python -m gateway.policy.schema_export {args.path}", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
