"""How a POST's SSE reply that ends before its answer is resumed (SSE polling, `Last-Event-ID`)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.errors import UPSTREAM_STREAM_LOST, UpstreamFailure


@dataclass(frozen=True)
class ResumePolicy:
    """Bounds on resuming one reply; `ResumeConfig` in gateway/config.py documents each field."""

    max_attempts: int = 3
    """Failed reopens in a row (a reopen that brings no new event id counts as failed); 0 turns resuming off."""
    max_resumes: int = 1000
    """Reopens of one reply in total."""
    default_retry_seconds: float = 1.0
    """Wait before a reopen when the server gave no `retry`."""
    max_retry_seconds: float = 30.0
    """Upper bound on the server's `retry`."""

    def delay(self, retry_ms: int | None) -> float:
        if retry_ms is None:
            return self.default_retry_seconds
        return min(retry_ms / 1000.0, self.max_retry_seconds)

    def check_budget(self, server: str, resumed: int, failures: int) -> None:
        """Raise once this reply has used up its reopens."""
        if resumed >= self.max_resumes or failures >= self.max_attempts:
            raise UpstreamFailure(
                UPSTREAM_STREAM_LOST,
                f"stream from server {server!r} ended before its answer; resuming with Last-Event-ID "
                f"failed ({resumed} reopens, {failures} failed in a row)",
            )


def resume_refused(server: str) -> UpstreamFailure:
    return UpstreamFailure(
        UPSTREAM_STREAM_LOST,
        f"stream from server {server!r} ended before its answer and the server does not "
        "allow resuming it (GET answered 405)",
    )
