"""The async edge of policy: rate limits (state I/O), then the pure engine, then one audit line.

Rate limits count every attempt a server makes, allowed or blocked. If the state
backend cannot be reached the elicitation is blocked (fail closed).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gateway import tracing
from gateway.errors import (
    ANSWER_REJECTED,
    ELICITATION_RATE_LIMITED,
    INVALID_PARAMS,
    POLICY_UNAVAILABLE,
    jsonrpc_error,
)
from gateway.logs import get_logger
from gateway.policy.engine import Decision, PolicyEngine, block
from gateway.policy.form_schema import check_answer
from gateway.policy.policy_config import ElicitationPolicy
from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateVerdict

log = get_logger("gateway.audit")

class RateLimits(Protocol):
    """What the gate needs of a rate limiter (gateway/state/rate_limiter.py, or a wrapper around it)."""

    async def hit(self, spec: str, *key: str) -> RateVerdict: ...


DecisionSink = Callable[[str, str, Decision, Mapping[str, Any]], None]
"""(server, mode, decision, params as the server sent them) -> None; see gateway/admin_feed.py."""


class ElicitationGate:
    def __init__(
        self, server: str, policy: ElicitationPolicy, limiter: RateLimits | None, sink: DecisionSink | None = None
    ) -> None:
        self.server = server
        self.policy = policy
        self.engine = PolicyEngine(server, policy)
        self._limiter = limiter
        self._sink = sink

    async def decide(
        self, params: Mapping[str, Any], *, session: str, user: str, offered: bool = True
    ) -> Decision:
        """`offered=False`: the mode was not offered to this server; refused even in monitor mode,
        because passing it would break the host's side of the protocol."""
        with tracing.span("mcpgw.policy", server=self.server):
            decision = await self._decide(params, offered, user)
            tracing.annotate(decision=decision.decision, rules=decision.rules, enforced=decision.enforced)
        self._audit(decision, params, session, user)
        return decision

    async def _decide(self, params: Mapping[str, Any], offered: bool, user: str) -> Decision:
        limited = await self._rate_limit(user)
        if not offered:
            mode = params.get("mode", "form")
            decision = block(
                "mode.not_offered", f"elicitation mode {mode!r} was not offered to this server", code=INVALID_PARAMS
            )
        elif limited is not None and (self.policy.enforce or limited.rules == ("state.unavailable",)):
            decision = limited
        else:
            decision = self.engine.decide(params)
            if limited is not None:  # monitor mode: report the limit, change nothing
                decision = Decision(
                    "block", (*decision.rules, *limited.rules), limited.reason, decision.params,
                    decision.changes, enforced=False,
                )
        return decision

    def check_answer(
        self, response: dict[str, Any], schema: Mapping[str, Any], *, session: str
    ) -> tuple[dict[str, Any], str | None]:
        """(what the server receives, error for the host or None) for an accepted form answer.

        Properties outside the schema are dropped; a wrong type rejects the whole answer.
        Monitor mode logs the outcome and passes the answer unchanged.
        """
        result = response["result"]
        checked = check_answer(schema, result.get("content"))
        if not checked.errors and not checked.dropped:
            return response, None
        log.warning(
            "elicitation.answer_checked", server=self.server, session=session, enforced=self.policy.enforce,
            dropped=list(checked.dropped), errors=list(checked.errors),
        )
        if not self.policy.enforce:
            return response, None
        if checked.errors:
            reason = "answer does not match the requested schema: " + "; ".join(checked.errors)
            return jsonrpc_error(response["id"], ANSWER_REJECTED, reason), reason
        return {**response, "result": {**result, "content": checked.content}}, None

    async def _rate_limit(self, user: str) -> Decision | None:
        if self._limiter is None:
            return None
        checks: list[tuple[str, tuple[str, ...]]] = []
        if self.policy.rate_limit:
            checks.append((self.policy.rate_limit, ("server", self.server)))
        if self.policy.rate_limit_per_user:
            checks.append((self.policy.rate_limit_per_user, ("user", self.server, user)))
        # Both windows at once (one round trip to Redis, not two): every attempt counts in both, also one
        # the other refuses.
        verdicts = await asyncio.gather(*(self._limiter.hit(spec, *key) for spec, key in checks),
                                        return_exceptions=True)
        for (_, key), verdict in zip(checks, verdicts, strict=True):
            if isinstance(verdict, StateUnavailable):
                return block("state.unavailable", "rate-limit state unreachable; blocked", code=POLICY_UNAVAILABLE)
            if isinstance(verdict, BaseException):
                raise verdict
            if not verdict.allowed:
                retry = math.ceil(verdict.retry_after_seconds * 1000) / 1000
                scope = "per user" if key[0] == "user" else "per server"
                return block(
                    "rate_limit",
                    f"rate limit {verdict.limit} {scope} exceeded",
                    code=ELICITATION_RATE_LIMITED,
                    data={"retryAfterSeconds": retry},
                )
        return None

    def _audit(self, decision: Decision, params: Mapping[str, Any], session: str, user: str) -> None:
        mode = params.get("mode", "form")
        fields: dict[str, Any] = {
            "server": self.server,
            "session": session,
            "user": user,
            "mode": mode if isinstance(mode, str) else "invalid",
            "decision": decision.decision,
            "rules": list(decision.rules),
            "reason": decision.reason,
            "enforced": decision.enforced,
        }
        if decision.changes:
            fields["changes"] = list(decision.changes)
        if decision.stage_error:
            fields["stage_error"] = decision.stage_error
        if mode == "url" and isinstance(params.get("elicitationId"), str):
            fields["elicitation_id"] = params["elicitationId"]
        level = log.warning if decision.decision == "block" else log.info
        level("elicitation.decision", **fields)
        if self._sink is not None:
            self._sink(self.server, fields["mode"], decision, params)


def refusal(request_id: Any, decision: Decision | None) -> dict[str, Any]:
    """The error a server gets for an elicitation policy refused (or could not judge: fail closed)."""
    if decision is None:
        return jsonrpc_error(request_id, POLICY_UNAVAILABLE, "elicitation policy failed; blocked")
    rule = decision.rules[-1]
    message = decision.reason if rule == "mode.not_offered" else (
        f"elicitation blocked by gateway policy (rule {rule}): {decision.reason}")
    return jsonrpc_error(request_id, decision.error_code, message, decision.error_data)
