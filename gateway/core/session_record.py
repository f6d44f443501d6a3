"""What every replica must know about a host session: small, immutable, stored as JSON.

Nothing in it changes per request. Host request ids and progress tokens pass to
the session's own upstream session unchanged (no other host shares it), so the
only per-message state is the server requests waiting for a host answer, which
the store keeps beside this record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SessionRecord:
    session_id: str
    server: str
    user: str
    host_version: str
    upstream_version: str
    offered: frozenset[str]
    upstream_session_id: str | None
    host_capabilities: dict[str, Any] | None = None
    """Kept only when the upstream speaks 2026-07-28: every request to it carries them."""
    client_info: Any = None
    generation: str | None = None
    """The server's config when the session opened (a hash): a server re-pointed by a live reload
    does not serve the sessions of its old upstream."""

    def to_json(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "s": self.server, "u": self.user, "hv": self.host_version, "uv": self.upstream_version,
            "o": sorted(self.offered), "us": self.upstream_session_id,
        }
        if self.host_capabilities is not None:
            raw["hc"], raw["ci"] = self.host_capabilities, self.client_info
        if self.generation is not None:
            raw["g"] = self.generation
        return raw

    @classmethod
    def from_json(cls, session_id: str, raw: dict[str, Any]) -> SessionRecord:
        return cls(
            session_id, raw["s"], raw["u"], raw["hv"], raw["uv"], frozenset(raw["o"]), raw.get("us"),
            raw.get("hc"), raw.get("ci"), raw.get("g"),
        )
