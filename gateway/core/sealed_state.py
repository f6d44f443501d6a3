"""State a host carries between rounds of a translated call, sealed so it cannot be forged or altered.

`gw1.<base64url JSON>.<HMAC-SHA256>`: integrity, not secrecy (it holds ids and a deadline,
no user data). Every replica shares the key (the state store hands it out), so any
replica can open what another sealed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import orjson

PREFIX = "gw1."


def seal(key: bytes, payload: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(orjson.dumps(payload)).rstrip(b"=").decode()
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return f"{PREFIX}{body}.{mac}"


def unseal(key: bytes, token: Any) -> dict[str, Any] | None:
    """The payload, or None for anything not sealed with this key (forged, altered, foreign)."""
    if not isinstance(token, str) or not token.startswith(PREFIX) or len(token) > 64 * 1024:
        return None
    body, _, mac = token[len(PREFIX):].rpartition(".")
    expected = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    if not body or not hmac.compare_digest(mac, expected):
        return None
    try:
        payload = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        return None
    return payload if isinstance(payload, dict) else None
