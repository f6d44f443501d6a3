"""The policy stages, each a plain callable `(ElicitationView) -> Allow | Modify | Deny`.

`build_stages` lists them in their fixed order for one server's policy; a rule
that the policy turns off is simply not in the list.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import INVALID_PARAMS
from gateway.policy.form_schema import SchemaLimits, schema_problems
from gateway.policy.link_stripping import strip_form_links, strip_message_links
from gateway.policy.policy_config import ElicitationPolicy
from gateway.policy.sensitive_fields import SensitiveFieldDetector
from gateway.policy.url_target import UrlTargetRules, check_url_target
from gateway.policy.verdicts import ALLOW, Deny, ElicitationView, Modify, Stage, Verdict


def _named(rule: str, fn: Callable[[ElicitationView], Verdict]) -> Stage:
    fn.rule = rule  # type: ignore[attr-defined]  # read by the engine when a stage crashes
    return fn


def mode_stage(policy: ElicitationPolicy) -> Stage:
    allowed = frozenset(policy.modes)

    def check_mode(view: ElicitationView) -> Verdict:
        if view.mode not in allowed:
            return Deny("mode.not_offered", f"mode {view.mode!r} is not allowed for this server", INVALID_PARAMS,
                        where="mode")
        return ALLOW

    return _named("mode.not_offered", check_mode)


def schema_stage(policy: ElicitationPolicy) -> Stage:
    b = policy.schema_bounds
    limits = SchemaLimits(
        b.max_properties, b.max_enum_values, b.max_text_length, b.max_message_length, b.max_name_length,
        b.max_schema_bytes,
    )

    def check_schema(view: ElicitationView) -> Verdict:
        if view.mode == "url":
            return _url_shape(view, b.max_message_length)
        problems = schema_problems(view.params, limits)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            return Deny("schema.invalid", f"requestedSchema outside the spec subset: {problems[0]}{more}",
                        where="requestedSchema")
        return ALLOW

    return _named("schema.invalid", check_schema)


def _url_shape(view: ElicitationView, max_message: int) -> Verdict:
    p = view.params
    if not isinstance(p.get("message"), str) or len(p["message"]) > max_message:
        return Deny("schema.invalid", "url mode: message must be a string within bounds", where="message")
    if not isinstance(p.get("url"), str) or not isinstance(p.get("elicitationId"), str) or not p["elicitationId"]:
        return Deny("schema.invalid", "url mode: url and elicitationId must be non-empty strings", where="url")
    if "requestedSchema" in p:
        return Deny("schema.invalid", "url mode: requestedSchema is not allowed", where="requestedSchema")
    return ALLOW


def sensitive_stage(policy: ElicitationPolicy) -> Stage:
    detector = SensitiveFieldDetector(policy.sensitive_terms, policy.allowed_fields)

    def check_sensitive(view: ElicitationView) -> Verdict:
        if view.mode != "form":
            return ALLOW
        findings = detector.find(view.params)
        if not findings:
            return ALLOW
        first = findings[0]
        cats = sorted({f.category for f in findings})
        return Deny(
            "sensitive_fields",
            f"form asks for sensitive data ({', '.join(cats)}) at {first.location}; use URL mode for secrets",
            where=first.location,
        )

    return _named("sensitive_fields", check_sensitive)


def form_urls_stage(policy: ElicitationPolicy) -> Stage:
    def strip_links(view: ElicitationView) -> Verdict:
        stripped = strip_form_links(view.params) if view.mode == "form" else strip_message_links(view.params)
        if stripped.removed == 0:
            return ALLOW
        return Modify("form_urls", stripped.params, stripped.changes)

    return _named("form_urls", strip_links)


def url_target_stage(policy: ElicitationPolicy) -> Stage:
    u = policy.url_mode
    rules = UrlTargetRules(
        u.allowed_hosts, u.allow_ip_literals, u.allow_punycode, u.max_url_length, u.allow_local_hosts
    )

    def check_target(view: ElicitationView) -> Verdict:
        if view.mode != "url":
            return ALLOW
        verdict = check_url_target(view.url, rules)
        if verdict.allowed:
            return ALLOW
        host = f" (host {verdict.host})" if verdict.host else ""
        return Deny("url_mode.target", f"URL-mode target refused: {verdict.reason}{host}", where="url")

    return _named("url_mode.target", check_target)


def build_stages(policy: ElicitationPolicy) -> list[Stage]:
    stages = [mode_stage(policy), schema_stage(policy)]
    if policy.sensitive_fields == "block":
        stages.append(sensitive_stage(policy))
    if policy.form_urls == "strip":
        stages.append(form_urls_stage(policy))
    stages.append(url_target_stage(policy))
    return stages
