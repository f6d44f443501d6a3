"""Who a host is, and how session ids appear in logs.

`Identity` is what host authentication produces; its `user` becomes the session
record's `user` (rate limits per user, URL-mode owners, session binding).

Session ids are bearer handles: anyone who reads one from a log could (in
unauthenticated mode) use the session. Logs therefore carry a short keyed hash
instead (`session_ref`), the same for every line of one session within one
process (and across replicas when `logging.session_salt` is set), so lines can
still be joined.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Identity:
    user: str
    groups: frozenset[str] = field(default_factory=frozenset)
    method: str = "none"
    """"api_key", "jwt", or "none" (unauthenticated mode)."""

    @property
    def authenticated(self) -> bool:
        return self.method != "none"


_salt = secrets.token_bytes(16)


def set_session_salt(salt: str | None) -> None:
    """A configured salt makes hashes agree across replicas; without it each process draws its own."""
    global _salt
    _salt = salt.encode() if salt else secrets.token_bytes(16)


def session_ref(session_id: str) -> str:
    """What logs show for a session id: 12 hex digits of a keyed SHA-256."""
    return hmac.new(_salt, session_id.encode(), hashlib.sha256).hexdigest()[:12]


# Log fields whose values are session ids (host or upstream side).
_SESSION_FIELDS = ("session", "session_id", "upstream_session", "host_session")


def hash_session_ids(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: session ids in log lines become their `session_ref`.

    In unauthenticated mode the user is the session id, so it is hashed the
    same way; authenticated user ids are kept (audit needs them).
    """
    raw_session = event.get("session")
    for key in _SESSION_FIELDS:
        value = event.get(key)
        if isinstance(value, str) and value:
            event[key] = session_ref(value)
    user = event.get("user")
    if isinstance(user, str) and isinstance(raw_session, str) and user == raw_session:
        event["user"] = session_ref(user)
    return event
