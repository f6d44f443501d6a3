"""Upstream -> host: the one gate every server message passes, sans-IO.

Each message is sorted into exactly one group:
- known-safe: forwarded (responses to the request being served, known notifications);
- policed: `elicitation/create` (any stream), `-32042` entries (always URL mode,
  whatever they say), completions (owner registry), `input_required` results
  (2026-07-28: each input request judged like the request it stands for);
- refused and logged: everything else, including requests without an id, responses
  to requests not being served, malformed errors (string codes), unknown methods,
  and results of unknown types.
Nothing the gateway cannot sort reaches a host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.core.commands import (
    CheckElicitation,
    CheckInputRequired,
    CheckUrlRequired,
    Command,
    Dropped,
    ForgetServerRequest,
    ForwardServerRequest,
    RouteCompletion,
    ToHost,
    ToUpstream,
)
from gateway.core.eras import INPUT_REQUIRED
from gateway.core.host_side import pending_key
from gateway.core.messages import id_key, result, valid_id
from gateway.core.session_record import SessionRecord
from gateway.errors import (
    ELICITATION_BLOCKED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UPSTREAM_FAILED,
    URL_ELICITATION_REQUIRED,
    jsonrpc_error,
)

# Server -> client requests the host may answer (elicitation is policed separately).
FORWARDED_REQUESTS = frozenset({
    "sampling/createMessage", "roots/list", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
})
FORWARDED_NOTIFICATIONS = frozenset({
    "notifications/message", "notifications/resources/updated", "notifications/resources/list_changed",
    "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/tasks/status",
    "notifications/subscriptions/acknowledged",  # 2026-07-28: the first event of subscriptions/listen
})
ELICIT = "elicitation/create"
_NO_ANSWER = object()


@dataclass(frozen=True, slots=True)
class StreamContext:
    """What the stream a message arrived on is for.

    `awaiting`: the host request id this stream answers (request streams), or nothing (standalone).
    `progress_tokens`: tokens of host requests in flight that this stream may report progress on.
    """

    awaiting: Any = _NO_ANSWER
    progress_tokens: frozenset[str] = frozenset()

    @property
    def answers_request(self) -> bool:
        return self.awaiting is not _NO_ANSWER


STANDALONE = StreamContext()


def progress_key(msg: dict[str, Any]) -> str | None:
    """id_key of a request's `_meta.progressToken`, or None when it has none (or not a string or integer)."""
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return id_key(token) if valid_id(token) else None


def serving(msg: dict[str, Any]) -> StreamContext:
    """The context of the stream that answers host request `msg`: its id, its progress token."""
    token = progress_key(msg)
    return StreamContext(awaiting=msg["id"], progress_tokens=frozenset({token}) if token else frozenset())


def from_upstream(rec: SessionRecord, upstream: str, msg: Any, ctx: StreamContext) -> list[Command]:
    if isinstance(msg, list):  # a JSON array: every element is sorted on its own
        return [c for m in msg for c in from_upstream(rec, upstream, m, ctx)] or [
            Dropped("upstream.message_dropped", "empty JSON array")
        ]
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return [Dropped("upstream.message_dropped", "not a JSON-RPC 2.0 message")]
    method = msg.get("method")
    if "method" in msg:
        if not isinstance(method, str):
            return [Dropped("upstream.message_dropped", "method is not a string")]
        if "id" in msg:
            return _request(rec, upstream, msg, method)
        return _notification(upstream, msg, method, ctx)
    if "id" in msg and ("result" in msg) != ("error" in msg):
        return _response(upstream, msg, ctx)
    return [Dropped("upstream.message_dropped", "neither request, notification nor response")]


def _request(rec: SessionRecord, upstream: str, msg: dict[str, Any], method: str) -> list[Command]:
    rid = msg["id"]
    if not valid_id(rid):
        return [Dropped("upstream.request_dropped", "request id is not a string or integer", {"method": method})]
    if method == "ping":
        return [ToUpstream(upstream, result(rid, {}))]
    if method == ELICIT:
        params = msg.get("params")
        if not isinstance(params, dict):
            return [
                ToUpstream(upstream, jsonrpc_error(rid, INVALID_PARAMS, "elicitation/create params must be an object")),
                Dropped("elicitation.invalid", "params not an object"),
            ]
        mode = params.get("mode", "form")
        # A mode that was not offered (or is not even a string) still goes to the gate: refused
        # there (-32602), counted against the rate limit and logged like every other decision.
        offered = isinstance(mode, str) and mode in rec.offered
        return [CheckElicitation(upstream, msg, mode if isinstance(mode, str) else repr(mode), offered)]
    if method in FORWARDED_REQUESTS:
        return [_forward_request(upstream, msg, msg)]
    return [
        ToUpstream(upstream, jsonrpc_error(rid, METHOD_NOT_FOUND, f"method {method[:60]!r} is not relayed")),
        Dropped("upstream.request_refused", "unknown server request method", {"method": method[:60]}),
    ]


def _forward_request(upstream: str, original: dict[str, Any], out: dict[str, Any]) -> ForwardServerRequest:
    # The host sees the server's own id: its upstream session is the host's alone.
    params = out.get("params")
    schema = params.get("requestedSchema") if isinstance(params, dict) else None
    pending: dict[str, Any] = {"id": original["id"], "m": original["method"], "up": upstream}
    if isinstance(schema, dict) and original["method"] == ELICIT:
        pending["schema"] = schema
    return ForwardServerRequest(upstream, {**out, "id": original["id"]}, pending)


def _notification(upstream: str, msg: dict[str, Any], method: str, ctx: StreamContext) -> list[Command]:
    params = msg.get("params")
    if method == "notifications/progress":
        token = params.get("progressToken") if isinstance(params, dict) else None
        if valid_id(token) and id_key(token) in ctx.progress_tokens:
            return [ToHost(msg)]
        return [Dropped("upstream.progress_dropped", "progress token of no request in flight here")]
    if method == "notifications/cancelled":
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not valid_id(rid):
            return [Dropped("upstream.cancel_dropped", "no valid requestId")]
        return [ForgetServerRequest(pending_key(rid), msg)]
    if method == "notifications/elicitation/complete":
        eid = params.get("elicitationId") if isinstance(params, dict) else None
        if not isinstance(eid, str) or not eid:
            return [Dropped("elicitation.complete_dropped", "no elicitationId")]
        return [RouteCompletion(upstream, msg, eid)]
    if method in FORWARDED_NOTIFICATIONS:
        return [ToHost(msg)]
    if method == ELICIT or method in FORWARDED_REQUESTS or method == "ping":
        return [Dropped("upstream.request_dropped", "server request sent without an id", {"method": method})]
    return [Dropped("upstream.notification_dropped", "unknown notification method", {"method": method[:60]})]


def _response(upstream: str, msg: dict[str, Any], ctx: StreamContext) -> list[Command]:
    if not ctx.answers_request or not valid_id(msg["id"]) or id_key(msg["id"]) != id_key(ctx.awaiting):
        return [Dropped("upstream.response_dropped", "response to no request being served on this stream")]
    rid = msg["id"]
    error = msg.get("error")
    if "error" in msg:
        if not isinstance(error, dict) or not _is_int(error.get("code")) or not isinstance(error.get("message"), str):
            return [
                ToHost(jsonrpc_error(rid, UPSTREAM_FAILED, f"server {upstream!r} sent a malformed error")),
                Dropped("upstream.error_malformed", "error without integer code and string message"),
            ]
        if error["code"] == URL_ELICITATION_REQUIRED:
            data = error.get("data")
            entries = data.get("elicitations") if isinstance(data, dict) else None
            return [CheckUrlRequired(upstream, msg, tuple(entries) if isinstance(entries, list) else ())]
        return [ToHost(msg)]
    res = msg.get("result")
    if not isinstance(res, dict):
        return [
            ToHost(jsonrpc_error(rid, UPSTREAM_FAILED, f"server {upstream!r} sent a result that is not an object")),
            Dropped("upstream.result_malformed", "result is not an object"),
        ]
    if res.get("resultType") == INPUT_REQUIRED:
        return [CheckInputRequired(upstream, msg)]  # 2026-07-28: its elicitations are policed one by one
    if res.get("resultType") not in (None, "complete"):
        return [
            ToHost(jsonrpc_error(
                rid, UPSTREAM_FAILED, f"server {upstream!r} sent a result type the gateway does not relay")),
            Dropped("upstream.result_refused", "unsupported resultType",
                    {"result_type": str(res.get("resultType"))[:40]}),
        ]
    return [ToHost(msg)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- policy outcomes (the driver feeds decisions back here) ------------------------------------


def deliver_elicitation(rec: SessionRecord, check: CheckElicitation, params: dict[str, Any]) -> ForwardServerRequest:
    """Policy let this elicitation through with `params` (possibly changed)."""
    if params.get("mode") == "form" and rec.host_version < "2025-11-25":
        params = {k: v for k, v in params.items() if k != "mode"}
    return _forward_request(check.upstream, check.message, {**check.message, "params": params})


def url_entry(entry: Any) -> dict[str, Any] | None:
    """A -32042 entry as the URL-mode params policy judges: always mode url, whatever it says."""
    return {**entry, "mode": "url"} if isinstance(entry, dict) else None


def url_required_outcome(check: CheckUrlRequired, kept: list[dict[str, Any]]) -> ToHost:
    """The -32042 error with only the entries policy let through, or a plain error if none is left."""
    msg = check.message
    error = msg["error"]
    if kept:
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        return ToHost({**msg, "error": {**error, "data": {**data, "elicitations": kept}}})
    refused = len(check.entries)
    return ToHost(jsonrpc_error(
        msg["id"], ELICITATION_BLOCKED,
        f"server {check.upstream!r} requires {refused} URL elicitation(s) that gateway policy refused",
    ))
