"""The async edge of policy with a real memory rate limiter: windows, per-user limits, monitor mode, answers."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.elicitation_gate import ElicitationGate
from gateway.policy.policy_config import ElicitationPolicy
from gateway.state.errors import StateUnavailable
from gateway.state.rate_limiter import RateLimiter

pytestmark = pytest.mark.anyio

FORM = {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}
SCHEMA = {"type": "object", "properties": {"n": {"type": "string"}, "age": {"type": "integer"}}}


async def test_per_user_limit_is_separate_from_the_server_limit() -> None:
    limiter = RateLimiter("memory://")
    gate = ElicitationGate("crm", ElicitationPolicy(rate_limit="10/minute", rate_limit_per_user="2/minute"), limiter)
    try:
        alice = [await gate.decide(FORM, session="s1", user="alice") for _ in range(3)]
        bob = await gate.decide(FORM, session="s2", user="bob")
    finally:
        await limiter.close()
    assert [d.decision for d in alice] == ["allow", "allow", "block"]
    assert alice[2].rules == ("rate_limit",) and "per user" in alice[2].reason
    assert alice[2].error_data is not None and alice[2].error_data["retryAfterSeconds"] > 0
    assert bob.decision == "allow"


async def test_both_windows_count_every_attempt_and_one_failing_check_blocks() -> None:
    """The server and user windows are checked at once: an attempt the server window refuses still counts in the
    user's; a rate-limit store that fails for one of the two blocks the form (fail closed)."""
    limiter = RateLimiter("memory://")
    gate = ElicitationGate("crm", ElicitationPolicy(rate_limit="1/minute", rate_limit_per_user="2/minute"), limiter)
    try:
        first, second = [await gate.decide(FORM, session="s1", user="alice") for _ in range(2)]
        assert (await limiter.hit("2/minute", "user", "crm", "alice")).allowed is False  # both attempts counted
    finally:
        await limiter.close()
    assert first.decision == "allow"
    assert second.decision == "block" and "per server" in second.reason

    class HalfBroken:
        async def hit(self, spec: str, *key: str) -> Any:
            if key[0] == "user":
                raise StateUnavailable("down")
            return await healthy.hit(spec, *key)

    healthy = RateLimiter("memory://")
    broken = ElicitationGate("crm", ElicitationPolicy(rate_limit="10/minute", rate_limit_per_user="10/minute"),
                             HalfBroken())  # type: ignore[arg-type]
    try:
        decision = await broken.decide(FORM, session="s1", user="alice")
    finally:
        await healthy.close()
    assert decision.decision == "block" and decision.rules == ("state.unavailable",)


async def test_several_windows_and_monitor_mode_reports_without_blocking() -> None:
    limiter = RateLimiter("memory://")
    gate = ElicitationGate("crm", ElicitationPolicy(rate_limit="1/second;100/hour", enforce=False), limiter)
    try:
        first = await gate.decide(FORM, session="s", user="u")
        second = await gate.decide(FORM, session="s", user="u")
    finally:
        await limiter.close()
    assert first.decision == "allow"
    assert second.decision == "block" and "rate_limit" in second.rules and not second.enforced
    assert second.params is not None  # monitor mode: still forwarded


def test_answer_check_drops_extras_and_rejects_wrong_types() -> None:
    gate = ElicitationGate("crm", ElicitationPolicy(), None)
    ok = {"jsonrpc": "2.0", "id": 3, "result": {"action": "accept", "content": {"n": "x", "extra": "secret"}}}
    out, error = gate.check_answer(ok, SCHEMA, session="s")
    assert error is None and out["result"]["content"] == {"n": "x"}
    bad = {"jsonrpc": "2.0", "id": 4, "result": {"action": "accept", "content": {"n": "x", "age": "old"}}}
    out, error = gate.check_answer(bad, SCHEMA, session="s")
    assert error is not None and "age" in error and "old" not in error
    assert out["error"]["code"] == -32053 and out["id"] == 4
    monitor = ElicitationGate("crm", ElicitationPolicy(enforce=False), None)
    assert monitor.check_answer(bad, SCHEMA, session="s") == (bad, None)


async def test_mode_not_offered_is_refused_even_in_monitor_mode_and_counted() -> None:
    limiter = RateLimiter("memory://")
    gate = ElicitationGate("crm", ElicitationPolicy(rate_limit="1/minute", enforce=False), limiter)
    try:
        refused = await gate.decide(FORM, session="s", user="u", offered=False)
        after = await gate.decide(FORM, session="s", user="u")
    finally:
        await limiter.close()
    assert refused.decision == "block" and refused.rules == ("mode.not_offered",) and refused.error_code == -32602
    assert refused.params is None
    assert "rate_limit" in after.rules  # the refused attempt counted
