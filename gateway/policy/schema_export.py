"""Writes (or checks) policies/schema.json, the JSON Schema of the policy file, from the pydantic models."""

from __future__ import annotations

import json

from gateway.generated_files import write_or_check
from gateway.policy.policy_config import PolicyFile


def policy_schema_text() -> str:
    schema = PolicyFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcp-elicitation-gateway policy file"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__doc__ or "", "gateway.policy.schema_export", policy_schema_text, argv)


if __name__ == "__main__":
    raise SystemExit(main())
