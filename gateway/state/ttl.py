"""TTL and event-id rules shared by both store backends, so they agree."""

from __future__ import annotations

import math

# A session's buffered events are bounded in bytes as well as in count.
DEFAULT_MAX_EVENT_BYTES = 1024 * 1024


def ttl_ms(ttl_s: float, what: str) -> int:
    """Positive TTL in whole milliseconds, rounded up (Redis PX granularity)."""
    if not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {ttl_s!r}")
    return max(1, math.ceil(ttl_s * 1000))


def grace_ms(grace_s: float) -> int:
    """Non-negative grace in milliseconds; 0 means forget at once."""
    if not math.isfinite(grace_s) or grace_s < 0:
        raise ValueError(f"grace_s must be >= 0 seconds, got {grace_s!r}")
    return math.ceil(grace_s * 1000)


def check_max_events(max_events: int) -> None:
    if max_events < 1:
        raise ValueError(f"max_events must be >= 1, got {max_events!r}")


def parse_event_id(last_event_id: str | None) -> int | None:
    """The sequence number in a Last-Event-ID, or None to replay everything.

    Ids are decimal sequence numbers this layer issued. Anything else (absent,
    garbage, an id from another system) replays the whole buffer: a duplicate
    message is recoverable for a host, a silently lost elicitation is not.
    """
    if last_event_id is None:
        return None
    text = last_event_id.strip()
    if not text.isascii() or not text.isdigit():
        return None
    return int(text)


COUNTED = "_counted_as"
"""Kept inside a pending entry put with `counted_as` (both stores), so taking it uncounts the right name."""
