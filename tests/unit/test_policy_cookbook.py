"""Every recipe in docs/policy-cookbook.md loads, and does what the text under it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.policy.engine import PolicyEngine
from gateway.policy.policy_config import PolicyFile

COOKBOOK = Path(__file__).resolve().parents[2] / "docs/policy-cookbook.md"


def recipes() -> dict[str, PolicyFile]:
    text = COOKBOOK.read_text(encoding="utf-8")
    found = re.findall(r"<!-- recipe: ([\w-]+) -->\n```yaml\n(.*?)```", text, re.S)
    return {name: PolicyFile.model_validate(yaml.safe_load(body)) for name, body in found}


def form(*names: str, message: str = "Please fill in", **props: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {n: {"type": "string"} for n in names}
    properties.update(props)
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": properties}}


def url(target: str) -> dict[str, Any]:
    return {"mode": "url", "message": "Sign in", "url": target, "elicitationId": "e1"}


def decide(recipe: str, params: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    d = PolicyEngine("srv", recipes()[recipe].elicitation).decide(params)
    return d.decision, d.rules


def test_all_recipes_are_there_and_valid() -> None:
    assert set(recipes()) == {"internal", "third-party", "none", "sso-only", "monitor", "org-terms", "links-allowed"}


@pytest.mark.parametrize(("recipe", "params", "decision", "rule"), [
    ("internal", form("password"), "block", "sensitive_fields"),
    ("internal", form("name", message="See https://x.example/a"), "modify", "form_urls"),
    ("internal", url("https://wiki.corp.example.com/auth"), "allow", None),
    ("internal", url("https://evil.example/auth"), "block", "url_mode.target"),
    ("third-party", url("https://wiki.corp.example.com/auth"), "block", "mode.not_offered"),
    ("third-party", form(*[f"f{i}" for i in range(9)]), "block", "schema.invalid"),
    ("third-party", form("name"), "allow", None),
    ("none", form("name"), "block", "mode.not_offered"),
    ("none", url("https://login.example.com/"), "block", "mode.not_offered"),
    ("sso-only", url("https://acme.okta.com/sso"), "allow", None),
    ("sso-only", url("https://login.example.com.evil.test/sso"), "block", "url_mode.target"),
    ("sso-only", url("http://login.example.com/sso"), "block", "url_mode.target"),
    ("sso-only", form("name"), "block", "mode.not_offered"),
    ("org-terms", form(vault={"type": "string", "title": "Vault code"}), "block", "sensitive_fields"),
    ("org-terms", form("token_budget"), "allow", None),
    ("links-allowed", form("name", message="See https://docs.example/a"), "allow", None),
    ("links-allowed", form("password"), "block", "sensitive_fields"),
])
def test_recipe_outcomes(recipe: str, params: dict[str, Any], decision: str, rule: str | None) -> None:
    got, rules = decide(recipe, params)
    assert got == decision, (recipe, rules)
    if rule is not None:
        assert rule in rules
    else:
        assert rules == ()


def test_monitor_recipe_reports_but_changes_nothing() -> None:
    d = PolicyEngine("srv", recipes()["monitor"].elicitation).decide(form("password"))
    assert d.decision == "block" and not d.enforced and d.params is not None
    assert d.params["requestedSchema"] == form("password")["requestedSchema"]
