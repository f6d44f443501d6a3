"""What elicitation modes a host declared, and the capability offered upstream."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MODES = ("form", "url")


def host_elicitation_modes(capabilities: Any) -> frozenset[str]:
    """Modes a host declared in `initialize` (an empty object means form only)."""
    if not isinstance(capabilities, dict):
        return frozenset()
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return frozenset()
    declared = frozenset(m for m in MODES if isinstance(elicitation.get(m), dict))
    return declared or frozenset({"form"})


def offered_modes(host_modes: frozenset[str], policy_modes: Iterable[str]) -> frozenset[str]:
    return host_modes & frozenset(policy_modes)


def rewrite_initialize_params(params: dict[str, Any], offered: frozenset[str], version: str) -> dict[str, Any]:
    """The host's initialize params with elicitation narrowed to `offered`.

    Explicit `{"form": {}}` rather than a bare `{}` (some SDKs reject `{}` under
    2025-11-25); no elicitation key at all when nothing is offered.
    """
    caps = dict(params.get("capabilities") or {})
    caps.pop("elicitation", None)
    if offered:
        caps["elicitation"] = {m: {} for m in MODES if m in offered}
    return {**params, "protocolVersion": version, "capabilities": caps}
