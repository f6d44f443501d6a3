"""Who owns a URL-mode elicitation, and the key it is registered under."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OwnerKey:
    """An elicitationId is unique only per upstream server session, so the
    registry key carries the server and upstream session too."""

    server: str
    upstream_session: str
    elicitation_id: str


@dataclass(frozen=True, slots=True)
class Owner:
    """The host session that received the elicitation, and its user.

    `user` is the host's identity; until host authentication exists it equals
    the host session id. Completions are routed only when both match.
    """

    host_session: str
    user: str
