"""When a lost stdio process or legacy SSE stream is brought back: exponential backoff, jitter, a cap."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    """Bounds on restarting one session's channel; `RestartConfig` in gateway/config.py documents each field."""

    backoff_base_seconds: float = 0.5
    """Wait before the first restart after a loss; doubled for each further loss or failed attempt in a row."""
    backoff_max_seconds: float = 30.0
    """Cap on the wait. A channel that ran at least this long before it was lost starts again from the base."""
    max_attempts: int = 5
    """Failed restart attempts in a row (could not start, or initialize not answered alike) before the session
    is given up: the host's next request gets 404 and it initializes again."""

    def delay(self, losses: int, rng: random.Random | None = None) -> float:
        """The wait before restart number `losses` (1-based) in a row: base * 2**(losses-1), capped, then
        "equal jitter" (between half and all of it), so many sessions of one crashed server spread out."""
        full = min(self.backoff_max_seconds, self.backoff_base_seconds * 2.0 ** min(max(losses - 1, 0), 62))
        return full / 2 + (rng or random).uniform(0, full / 2)
