"""Runs the ordered policy stages over one elicitation and turns the verdicts into one decision.

Order (docs/policy.md): mode -> schema.invalid -> sensitive_fields -> form_urls ->
url_mode.target, then the origin tag. First block wins; a stage that raises is a
block (`stage.error`, fail closed). With `enforce: false` the decision is computed
and reported but the host gets the server's params unchanged (plus the origin tag).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gateway.errors import ELICITATION_BLOCKED
from gateway.policy.origin_tag import tag_origin
from gateway.policy.policy_config import ElicitationPolicy
from gateway.policy.stages import build_stages
from gateway.policy.verdicts import Deny, ElicitationView, Modify, Stage

DecisionKind = Literal["allow", "modify", "block"]


@dataclass(frozen=True, slots=True)
class Decision:
    decision: DecisionKind
    rules: tuple[str, ...]
    reason: str
    params: dict[str, Any] | None
    """What reaches the host; None when blocked (and enforced)."""
    changes: tuple[str, ...] = ()
    enforced: bool = True
    error_code: int = ELICITATION_BLOCKED
    error_data: dict[str, Any] | None = None
    stage_error: str | None = None
    """Exception type name when a stage crashed (never its message: it may quote data)."""
    where: str | None = None
    """For a block: the path in the params that made the blocking rule fire, when the stage knows it."""

    def explain_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision, "rules": list(self.rules), "reason": self.reason}
        if self.params is not None:
            out["params"] = self.params
        if not self.enforced:
            out["enforced"] = False
        return out


def block(rule: str, reason: str, *, code: int = ELICITATION_BLOCKED, data: dict[str, Any] | None = None) -> Decision:
    return Decision("block", (rule,), reason, None, error_code=code, error_data=data)


class PolicyEngine:
    """The pure part of one server's policy; rate limits are applied by the caller first."""

    def __init__(self, server: str, policy: ElicitationPolicy, stages: Sequence[Stage] | None = None) -> None:
        self.server = server
        self.policy = policy
        self.stages: tuple[Stage, ...] = tuple(stages if stages is not None else build_stages(policy))

    def decide(self, params: Mapping[str, Any]) -> Decision:
        view = ElicitationView(self.server, params)
        rules: list[str] = []
        changes: list[str] = []
        deny: Deny | None = None
        crashed: str | None = None
        for stage in self.stages:
            try:
                verdict = stage(view)
            except Exception as exc:  # fail closed: a broken stage blocks
                crashed = type(exc).__name__
                deny = Deny("stage.error", f"policy stage {getattr(stage, 'rule', '?')} failed; blocked")
                break
            if isinstance(verdict, Deny):
                deny = verdict
                break
            if isinstance(verdict, Modify):
                rules.append(verdict.rule)
                changes.extend(verdict.changes)
                view = view.with_params(verdict.params)
        if deny is not None:
            rules.append(deny.rule)
            if not self.policy.enforce and crashed is None:
                return self._monitored("block", rules, deny.reason, params, changes)
            return Decision(
                "block", tuple(rules), deny.reason, None, tuple(changes),
                error_code=deny.code, error_data=deny.data, stage_error=crashed, where=deny.where,
            )
        kind: DecisionKind = "modify" if changes else "allow"
        reason = "; ".join(changes) if changes else "no rule fired"
        if not self.policy.enforce:
            return self._monitored(kind, rules, reason, params, changes)
        return Decision(kind, tuple(rules), reason, self.tag(dict(view.params)), tuple(changes))

    def _monitored(
        self, kind: DecisionKind, rules: list[str], reason: str, params: Mapping[str, Any], changes: list[str]
    ) -> Decision:
        return Decision(kind, tuple(rules), reason, self.tag(dict(params)), tuple(changes), enforced=False)

    def tag(self, params: dict[str, Any]) -> dict[str, Any]:
        return tag_origin(params, self.server, prefix_message=self.policy.tag_origin)
