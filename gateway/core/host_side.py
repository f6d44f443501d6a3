"""Host -> upstream: the sans-IO rules for what a host sends (events in, commands out).

Host request ids, progress tokens and cancellations pass unchanged: every host
session has upstream sessions of its own, so nothing can collide there. The one
thing remembered per message is a server request awaiting the host's answer
(`pending`), keyed by the id the host saw.
"""

from __future__ import annotations

from typing import Any

from gateway.core.capabilities import host_elicitation_modes, offered_modes, rewrite_initialize_params
from gateway.core.commands import AnswerRound, Command, Dropped, ToHost, ToUpstream
from gateway.core.messages import id_key, kind_of, result, version_at_most
from gateway.core.session_record import SessionRecord
from gateway.errors import INVALID_REQUEST, METHOD_NOT_FOUND, jsonrpc_error

DISCOVER = "server/discover"


def initialize_upstream(
    msg: dict[str, Any], policy_modes: tuple[str, ...]
) -> tuple[str, frozenset[str], dict[str, Any]]:
    """(host revision, modes offered upstream, the initialize to send upstream) for a host's initialize."""
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    assert isinstance(params, dict)
    host_version = version_at_most(params.get("protocolVersion"))
    offered = offered_modes(host_elicitation_modes(params.get("capabilities")), policy_modes)
    return host_version, offered, {**msg, "params": rewrite_initialize_params(params, offered, host_version)}


def initialize_answer(reply: dict[str, Any], host_version: str) -> tuple[str, dict[str, Any]]:
    """(upstream revision, the answer for the host, carrying the host hop's revision)."""
    res = reply["result"]
    return version_at_most(res.get("protocolVersion")), {**reply, "result": {**res, "protocolVersion": host_version}}


def discover_refusal(msg: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 discovery is not served yet: an error makes SDK clients fall back to initialize."""
    return jsonrpc_error(msg["id"], METHOD_NOT_FOUND, "server/discover is not served; use initialize")


def pending_key(host_facing_id: Any) -> str:
    return id_key(host_facing_id)


def from_host(rec: SessionRecord, msg: Any) -> list[Command]:
    """A host request or notification in an existing session (answers go through `host_answer`)."""
    kind = kind_of(msg)
    if kind == "request":
        method, rid = msg["method"], msg["id"]
        if method == "ping":
            return [ToHost(result(rid, {}))]
        if method == DISCOVER:
            return [ToHost(discover_refusal(msg))]
        if method == "initialize":
            return [ToHost(jsonrpc_error(rid, INVALID_REQUEST, "session already initialized"))]
        return [ToUpstream(rec.server, msg)]
    if kind == "notification":
        return [ToUpstream(rec.server, msg)]
    return [Dropped("host.message_dropped", "not a JSON-RPC 2.0 request or notification")]


def host_answer(rec: SessionRecord, msg: dict[str, Any], pending: dict[str, Any] | None) -> list[Command]:
    """The host answers a server request; `pending` is what the store released for its id (None: never sent)."""
    if pending is None:
        return [Dropped("host.response_dropped", "answer to a request this session was not sent")]
    schema = pending.get("schema")
    if "tr" in pending:  # an input request of a 2026-07-28 server, asked as a request
        return [AnswerRound(pending["tr"], pending["k"], pending.get("m", ""), msg,
                            schema if isinstance(schema, dict) else None)]
    out = {**msg, "id": pending["id"]}
    res = msg.get("result")
    if pending.get("m") == "elicitation/create" and isinstance(schema, dict) and (
        isinstance(res, dict) and res.get("action") == "accept"
    ):
        return [ToUpstream(pending.get("up", rec.server), out, answer_schema=schema)]
    return [ToUpstream(pending.get("up", rec.server), out)]
