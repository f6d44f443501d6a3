"""Rounds of a 2026-07-28 multi-round-trip call, as the gateway polices them. Pure.

A server's `input_required` result carries `inputRequests` (key -> `{method, params}`) and
an opaque `requestState`. The gateway judges every request like the handshake-era message
it stands for, passes on only what policy allows, and remembers per round what it sent
(and the schema of each form) and what it blocked. On the host's retry:
- answers for keys the host was never sent are dropped;
- blocked elicitations are answered `decline` by the gateway, merged with the host's answers;
- accepted form answers are checked against the schema that was sent;
- `requestState` is never altered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.core.eras import INPUT_REQUIRED

ELICIT = "elicitation/create"
FORWARDABLE = frozenset({ELICIT, "sampling/createMessage", "roots/list"})
DECLINE = {"action": "decline"}


@dataclass(frozen=True, slots=True)
class InputAsk:
    key: str
    method: str
    params: Any


@dataclass
class RoundRecord:
    """What the gateway sent the host in one round and what it blocked (kept in the store between rounds)."""

    sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    """key -> {"m": method, "schema": requestedSchema of a form, if any}."""
    blocked: list[str] = field(default_factory=list)
    """Elicitation keys policy blocked: the gateway answers them `decline` on the retry."""

    def to_json(self) -> dict[str, Any]:
        return {"sent": self.sent, "blocked": self.blocked}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RoundRecord:
        return cls(dict(raw.get("sent", {})), list(raw.get("blocked", [])))


def asks_of(result: Mapping[str, Any]) -> tuple[list[InputAsk], list[str]]:
    """The input requests of an `input_required` result, and the keys that are not well formed."""
    requests = result.get("inputRequests")
    if not isinstance(requests, dict):
        return [], []
    asks, malformed = [], []
    for key, request in requests.items():
        if isinstance(request, dict) and isinstance(request.get("method"), str):
            asks.append(InputAsk(key, request["method"], request.get("params")))
        else:
            malformed.append(key)
    return asks, malformed


def elicitation_mode(params: Any) -> str:
    mode = params.get("mode", "form") if isinstance(params, dict) else "form"
    return mode if isinstance(mode, str) else repr(mode)


def kept_result(result: Mapping[str, Any], kept: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The result the host gets: only the requests policy let through (possibly changed); state untouched."""
    out = {k: v for k, v in result.items() if k != "inputRequests"}
    if kept:
        out["inputRequests"] = dict(kept)
    out["resultType"] = INPUT_REQUIRED
    return out


def round_key(server: str, request_state: Any, msg: Mapping[str, Any]) -> str:
    """Where a round's record lives: the hash of its requestState, or, without one, of the call itself."""
    if isinstance(request_state, str) and request_state:
        basis: Any = ["state", server, request_state]
    else:
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        basis = ["call", server, msg.get("method"), params.get("name"), params.get("uri"), params.get("arguments")]
    return hashlib.sha256(orjson.dumps(basis, option=orjson.OPT_SORT_KEYS)).hexdigest()


def merged_responses(
    answers: Any, record: RoundRecord
) -> tuple[dict[str, Any], list[str], list[tuple[str, dict[str, Any]]]]:
    """(inputResponses for the server, keys dropped because the host was never asked them,
    (key, schema) of accepted forms that must be checked)."""
    merged: dict[str, Any] = {}
    dropped: list[str] = []
    to_check: list[tuple[str, dict[str, Any]]] = []
    for key, value in (answers.items() if isinstance(answers, dict) else ()):
        sent = record.sent.get(key)
        if sent is None:
            dropped.append(key)
            continue
        merged[key] = value
        schema = sent.get("schema")
        if sent.get("m") == ELICIT and isinstance(schema, dict) and isinstance(value, dict) and (
            value.get("action") == "accept"
        ):
            to_check.append((key, schema))
    for key in record.blocked:
        merged[key] = dict(DECLINE)
    return merged, dropped, to_check


def retry_params(msg: Mapping[str, Any]) -> tuple[Any, Any]:
    """(inputResponses, requestState) of a host's retry; (None, None) for a first call."""
    params = msg.get("params")
    if not isinstance(params, dict):
        return None, None
    return params.get("inputResponses"), params.get("requestState")


def with_responses(msg: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    assert isinstance(params, dict)
    return {**msg, "params": {**params, "inputResponses": responses}}
