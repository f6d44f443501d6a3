"""The engine over plain-callable stages: order, first block wins, fail closed, monitor mode, origin tag."""

from __future__ import annotations

from typing import Any

from gateway.policy.engine import PolicyEngine
from gateway.policy.origin_tag import ORIGIN_META_KEY
from gateway.policy.policy_config import ElicitationPolicy
from gateway.policy.verdicts import ALLOW, Deny, ElicitationView, Modify, Verdict

FORM = {"mode": "form", "message": "Hi", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}


def test_allow_only_adds_the_origin_tag() -> None:
    d = PolicyEngine("crm", ElicitationPolicy()).decide(FORM)
    assert d.decision == "allow" and d.rules == ()
    assert d.params is not None
    assert d.params["message"] == "[crm] Hi"
    assert d.params["_meta"][ORIGIN_META_KEY] == {"server": "crm"}
    assert FORM["message"] == "Hi"  # input not mutated


def test_stages_run_in_order_and_first_block_wins() -> None:
    calls: list[str] = []

    def stage(name: str, verdict: Verdict) -> Any:
        def run(view: ElicitationView) -> Verdict:
            calls.append(name)
            return verdict
        return run

    engine = PolicyEngine("s", ElicitationPolicy(), [
        stage("a", Modify("a", {**FORM, "message": "changed"}, ("1 thing changed",))),
        stage("b", Deny("b", "no")),
        stage("c", Deny("c", "never reached")),
    ])
    d = engine.decide(FORM)
    assert calls == ["a", "b"]
    assert d.decision == "block" and d.rules == ("a", "b") and d.params is None and d.reason == "no"


def test_modify_passes_changed_params_to_later_stages() -> None:
    seen: list[str] = []

    def change(view: ElicitationView) -> Verdict:
        return Modify("x", {**view.params, "message": "m2"}, ("message changed",))

    def look(view: ElicitationView) -> Verdict:
        seen.append(view.message)
        return ALLOW

    d = PolicyEngine("s", ElicitationPolicy(tag_origin=False), [change, look]).decide(FORM)
    assert seen == ["m2"] and d.decision == "modify" and d.params is not None and d.params["message"] == "m2"


def test_crashing_stage_blocks_fail_closed_even_in_monitor_mode() -> None:
    def broken(view: ElicitationView) -> Verdict:
        raise KeyError("secret value that must not leak")

    for enforce in (True, False):
        d = PolicyEngine("s", ElicitationPolicy(enforce=enforce), [broken]).decide(FORM)
        assert d.decision == "block" and d.rules == ("stage.error",) and d.params is None
        assert d.stage_error == "KeyError"
        assert "secret" not in d.reason


def test_monitor_mode_reports_block_but_forwards_unchanged() -> None:
    params = {**FORM, "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}}
    d = PolicyEngine("s", ElicitationPolicy(enforce=False)).decide(params)
    assert d.decision == "block" and "sensitive_fields" in d.rules and not d.enforced
    assert d.params is not None and d.params["requestedSchema"] == params["requestedSchema"]
    assert d.explain_json()["enforced"] is False


def test_mode_outside_policy_is_refused_with_32602() -> None:
    d = PolicyEngine("s", ElicitationPolicy(modes=("form",))).decide(
        {"mode": "url", "message": "m", "url": "https://a.example.com", "elicitationId": "1"}
    )
    assert d.decision == "block" and d.rules == ("mode.not_offered",) and d.error_code == -32602


def test_url_mode_message_links_stripped_but_url_untouched() -> None:
    params = {"mode": "url", "message": "Go to https://other.example.com now", "url": "https://auth.example.com/x?id=1",
              "elicitationId": "e-1"}
    d = PolicyEngine("s", ElicitationPolicy()).decide(params)
    assert d.decision == "modify" and d.params is not None
    assert d.params["url"] == params["url"] and d.params["elicitationId"] == "e-1"
    assert "other.example.com" not in d.params["message"]
