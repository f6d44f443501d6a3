"""One host session bound to one upstream session: the sans-IO heart of the proxy.

Events in (`from_host`, `from_upstream`, the policy outcome), commands out. No
I/O, no clocks. Messages are raw dicts from orjson; only the fields the gateway
owns (ids, progress tokens, the elicitation params policy changed) are touched,
everything else passes untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.core.capabilities import host_elicitation_modes, offered_modes, rewrite_initialize_params
from gateway.core.commands import (
    CheckElicitation,
    CheckUrlRequired,
    Command,
    Dropped,
    RouteCompletion,
    ToHost,
    ToUpstream,
)
from gateway.core.id_map import IdMap
from gateway.core.messages import LATEST_VERSION, kind_of, result, version_at_most
from gateway.errors import (
    ELICITATION_BLOCKED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    URL_ELICITATION_REQUIRED,
    jsonrpc_error,
)

# Requests the gateway answers itself on the host hop.
_LOCAL_PING = "ping"
# 2026-07-28 discovery: not served yet, so answer it here; SDK clients then fall back to initialize.
_DISCOVER = "server/discover"


@dataclass
class PendingServerRequest:
    """A server-to-host request the host has not answered yet."""

    upstream_id: Any
    method: str
    requested_schema: dict[str, Any] | None = None


@dataclass
class HostSession:
    server: str
    session_id: str
    policy_modes: tuple[str, ...]
    host_version: str = LATEST_VERSION
    upstream_version: str = LATEST_VERSION
    upstream_session_id: str | None = None
    offered: frozenset[str] = frozenset()
    initialized: bool = False
    host_requests: IdMap = field(default_factory=IdMap)
    server_requests: IdMap = field(default_factory=IdMap)
    pending_server: dict[int, PendingServerRequest] = field(default_factory=dict)
    progress_tokens: IdMap = field(default_factory=IdMap)
    _init_upstream_id: int | None = None

    # -- host -> upstream -------------------------------------------------

    def from_host(self, msg: dict[str, Any]) -> list[Command]:
        kind = kind_of(msg)
        if kind == "request":
            return self._host_request(msg)
        if kind == "notification":
            return self._host_notification(msg)
        if kind == "response":
            return self._host_response(msg)
        return [ToHost(jsonrpc_error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message"))]

    def _host_request(self, msg: dict[str, Any]) -> list[Command]:
        method, rid = msg["method"], msg["id"]
        if method == _LOCAL_PING:
            return [ToHost(result(rid, {}))]
        if method == _DISCOVER:
            return [ToHost(jsonrpc_error(rid, METHOD_NOT_FOUND, "server/discover is not served; use initialize"))]
        if self.host_requests.issued_for(rid) is not None:
            return [ToHost(jsonrpc_error(rid, INVALID_REQUEST, "request id already in use in this session"))]
        out = dict(msg)
        if method == "initialize":
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            assert isinstance(params, dict)
            self.host_version = version_at_most(params.get("protocolVersion"))
            self.offered = offered_modes(host_elicitation_modes(params.get("capabilities")), self.policy_modes)
            out["params"] = rewrite_initialize_params(params, self.offered, self.host_version)
        out["id"] = self.host_requests.issue(rid)
        if method == "initialize":
            self._init_upstream_id = out["id"]
        self._remap_progress_token(out)
        return [ToUpstream(out, expects_response=True)]

    def _remap_progress_token(self, out: dict[str, Any]) -> None:
        params = out.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict) or "progressToken" not in meta:
            return
        token = meta["progressToken"]
        if isinstance(token, bool) or not isinstance(token, str | int):
            return
        assert isinstance(params, dict)
        out["params"] = {**params, "_meta": {**meta, "progressToken": self.progress_tokens.issue(token)}}

    def _host_notification(self, msg: dict[str, Any]) -> list[Command]:
        if msg["method"] == "notifications/initialized":
            self.initialized = True
        if msg["method"] == "notifications/cancelled":
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            issued = self.host_requests.issued_for(rid)
            if issued is None:
                return [Dropped("host.cancel_dropped", "unknown request id")]
            assert isinstance(params, dict)
            return [ToUpstream({**msg, "params": {**params, "requestId": issued}})]
        return [ToUpstream(msg)]

    def _host_response(self, msg: dict[str, Any]) -> list[Command]:
        found, upstream_id = self.server_requests.original(msg["id"])
        pending = self.pending_server.pop(msg["id"], None) if found else None
        if not found or pending is None:
            return [Dropped("host.response_dropped", "answer to a request this session was not sent")]
        self.server_requests.release(msg["id"])
        out = {**msg, "id": upstream_id}
        result_ = msg.get("result")
        if pending.method == "elicitation/create" and pending.requested_schema is not None and (
            isinstance(result_, dict) and result_.get("action") == "accept"
        ):
            return [ToUpstream(out, answer_schema=pending.requested_schema)]
        return [ToUpstream(out)]

    # -- upstream -> host -------------------------------------------------

    def from_upstream(self, msg: Any) -> list[Command]:
        kind = kind_of(msg)
        if kind == "response":
            return self._upstream_response(msg)
        if kind == "request":
            return self._upstream_request(msg)
        if kind == "notification":
            return self._upstream_notification(msg)
        return [Dropped("upstream.message_dropped", "not a JSON-RPC 2.0 message")]

    def _upstream_response(self, msg: dict[str, Any]) -> list[Command]:
        found, host_id = self.host_requests.original(msg["id"])
        if not found:
            return [Dropped("upstream.response_dropped", "response to no pending request")]
        self.host_requests.release(msg["id"])
        out = {**msg, "id": host_id}
        error = msg.get("error")
        if isinstance(error, dict) and error.get("code") == URL_ELICITATION_REQUIRED:
            data = error.get("data")
            entries = data.get("elicitations") if isinstance(data, dict) else None
            return [CheckUrlRequired(out, tuple(entries) if isinstance(entries, list) else ())]
        if msg["id"] == self._init_upstream_id and isinstance(msg.get("result"), dict):
            self._init_upstream_id = None
            res = msg["result"]
            self.upstream_version = version_at_most(res.get("protocolVersion"))
            out["result"] = {**res, "protocolVersion": self.host_version}
        return [ToHost(out)]

    def _upstream_request(self, msg: dict[str, Any]) -> list[Command]:
        method, rid = msg["method"], msg["id"]
        if method == _LOCAL_PING:
            return [ToUpstream(result(rid, {}))]
        if method == "elicitation/create":
            params = msg.get("params")
            if not isinstance(params, dict):
                return [
                    ToUpstream(jsonrpc_error(rid, INVALID_PARAMS, "elicitation/create params must be an object")),
                    Dropped("elicitation.invalid", "params not an object"),
                ]
            mode = params.get("mode", "form")
            # A mode that was not offered still goes to the gate: it is refused there (-32602),
            # counted against the rate limit and logged like every other decision.
            return [CheckElicitation(msg, mode if isinstance(mode, str) else repr(mode), mode in self.offered)]
        return [self._forward_server_request(msg, msg)]

    def _forward_server_request(self, original: dict[str, Any], out: dict[str, Any]) -> ToHost:
        issued = self.server_requests.issue(original["id"])
        params = out.get("params")
        schema = params.get("requestedSchema") if isinstance(params, dict) else None
        self.pending_server[issued] = PendingServerRequest(
            original["id"], original["method"], schema if isinstance(schema, dict) else None
        )
        return ToHost({**out, "id": issued})

    def deliver_elicitation(self, msg: dict[str, Any], params: dict[str, Any]) -> list[Command]:
        """Policy let this elicitation through with `params` (possibly changed)."""
        if params.get("mode") == "form" and self.host_version < "2025-11-25":
            params = {k: v for k, v in params.items() if k != "mode"}
        return [self._forward_server_request(msg, {**msg, "params": params})]

    def url_required_outcome(self, msg: dict[str, Any], kept: list[dict[str, Any]], refused: int) -> list[Command]:
        """The -32042 error with only the entries policy let through, or a plain error if none is left."""
        error = msg["error"]
        if kept:
            data = {**error.get("data", {}), "elicitations": kept}
            return [ToHost({**msg, "error": {**error, "data": data}})]
        return [
            ToHost(
                jsonrpc_error(
                    msg["id"], ELICITATION_BLOCKED,
                    f"server {self.server!r} requires {refused} URL elicitation(s) that gateway policy refused",
                )
            )
        ]

    def refuse_server_request(self, msg: dict[str, Any], code: int, message: str, data: Any = None) -> list[Command]:
        return [ToUpstream(jsonrpc_error(msg["id"], code, message, data))]

    def _upstream_notification(self, msg: dict[str, Any]) -> list[Command]:
        method = msg["method"]
        params = msg.get("params")
        if method == "notifications/progress" and isinstance(params, dict):
            found, token = self.progress_tokens.original(params.get("progressToken"))
            if not found:
                return [Dropped("upstream.progress_dropped", "unknown progress token")]
            return [ToHost({**msg, "params": {**params, "progressToken": token}})]
        if method == "notifications/cancelled" and isinstance(params, dict):
            issued = self.server_requests.issued_for(params.get("requestId"))
            if issued is None:
                return [Dropped("upstream.cancel_dropped", "unknown request id")]
            self.pending_server.pop(issued, None)
            self.server_requests.release(issued)
            return [ToHost({**msg, "params": {**params, "requestId": issued}})]
        if method == "notifications/elicitation/complete":
            eid = params.get("elicitationId") if isinstance(params, dict) else None
            if not isinstance(eid, str) or not eid:
                return [Dropped("elicitation.complete_dropped", "no elicitationId")]
            return [RouteCompletion(msg, eid)]
        return [ToHost(msg)]

    # -- edge events -------------------------------------------------------

    def upstream_lost(self, upstream_ids: list[int], message: str, code: int) -> list[Command]:
        """The stream that was to carry these responses died: fail each host request."""
        out: list[Command] = []
        for uid in upstream_ids:
            found, host_id = self.host_requests.original(uid)
            if found:
                self.host_requests.release(uid)
                out.append(ToHost(jsonrpc_error(host_id, code, message)))
        return out
