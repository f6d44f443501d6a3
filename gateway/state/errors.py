"""Errors raised by the state layer."""

from __future__ import annotations


class StateUnavailable(Exception):
    """The state backend (Redis) cannot be reached or refused the operation.

    Every backend operation raises this instead of a driver-specific error so
    callers have one thing to catch; they must fail closed on it (deny the
    elicitation, drop the completion, report not ready).
    """
