"""`elicitation-gateway explain` as operators run it: a real subprocess, JSON and JSON Lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def explain(tmp: Path, stdin: str, server: str = "crm") -> subprocess.CompletedProcess[str]:
    (tmp / "gateway.yaml").write_text(
        f"servers: {{crm: {{url: 'http://127.0.0.1:1/mcp', policy: {REPO / 'policies/default.yaml'}}}}}"
    )
    return subprocess.run(
        [sys.executable, "-m", "gateway", "explain", "--config", str(tmp / "gateway.yaml"), "--server", server, "-"],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=REPO,
    )


def test_json_lines_in_order(tmp_path: Path) -> None:
    lines = [
        {"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}},
        {"message": "Enter password", "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}},
        {"message": "See https://evil.example/x", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
    ]
    result = explain(tmp_path, "\n".join(json.dumps(x) for x in lines))
    assert result.returncode == 0, result.stderr
    out = [json.loads(x) for x in result.stdout.splitlines()]
    assert [o["decision"] for o in out] == ["allow", "block", "modify"]
    assert out[0]["params"]["message"] == "[crm] Your name?" and out[0]["rules"] == []
    assert "params" not in out[1] and out[1]["rules"] == ["sensitive_fields"]
    assert out[2]["rules"] == ["form_urls"] and "evil.example" not in out[2]["params"]["message"]
    assert all(set(o) >= {"decision", "rules", "reason"} for o in out)


def test_single_pretty_printed_object(tmp_path: Path) -> None:
    obj = {"mode": "url", "message": "Sign in", "url": "https://auth.example.com/", "elicitationId": "x"}
    result = explain(tmp_path, json.dumps(obj, indent=2))
    [out] = [json.loads(x) for x in result.stdout.splitlines()]
    assert out["decision"] == "allow" and out["params"]["url"] == obj["url"]


def test_bad_lines_are_reported_and_others_still_explained(tmp_path: Path) -> None:
    result = explain(tmp_path, '{"message": "a", "requestedSchema": {"type": "object", "properties": {}}}\n{oops\n[1]\n')
    assert result.returncode == 2
    out = [json.loads(x) for x in result.stdout.splitlines()]
    assert [o["decision"] for o in out] == ["allow", "block", "block"]
    assert out[1]["rules"] == ["input.invalid"] and "line 2" in out[1]["reason"]


def test_unknown_server(tmp_path: Path) -> None:
    result = explain(tmp_path, "{}", server="nope")
    assert result.returncode == 2 and "unknown server" in result.stderr
