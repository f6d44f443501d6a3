"""Playbooks for the sans-IO core: an event in, exactly these commands out. No network."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core.commands import CheckElicitation, Dropped, ToHost, ToUpstream
from gateway.core.host_session import HostSession
from gateway.errors import INVALID_PARAMS, METHOD_NOT_FOUND, UPSTREAM_STREAM_LOST


def req(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def init_params(caps: dict[str, Any], version: str = "2025-11-25") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "h", "version": "1"}}


def initialized(policy_modes: tuple[str, ...] = ("form", "url"), caps: Any = None, version: str = "2025-11-25") -> HostSession:
    s = HostSession("crm", "sess-1", policy_modes)
    caps = {"elicitation": {"form": {}, "url": {}}} if caps is None else caps
    [cmd] = s.from_host(req(1, "initialize", init_params(caps, version)))
    assert isinstance(cmd, ToUpstream)
    s.from_upstream({"jsonrpc": "2.0", "id": cmd.message["id"], "result": {"protocolVersion": version, "capabilities": {}}})
    return s


def test_initialize_rewrites_elicitation_to_policy_and_host_intersection() -> None:
    s = HostSession("crm", "sess-1", ("form",))
    [cmd] = s.from_host(req(7, "initialize", init_params({"elicitation": {"form": {}, "url": {}}, "roots": {}})))
    assert isinstance(cmd, ToUpstream) and cmd.expects_response
    assert cmd.message["params"]["capabilities"] == {"roots": {}, "elicitation": {"form": {}}}
    assert s.offered == frozenset({"form"})


def test_initialize_bare_object_means_form_and_is_sent_explicitly() -> None:
    s = HostSession("crm", "sess-1", ("form", "url"))
    [cmd] = s.from_host(req(1, "initialize", init_params({"elicitation": {}}, "2025-06-18")))
    assert isinstance(cmd, ToUpstream)
    assert cmd.message["params"]["capabilities"]["elicitation"] == {"form": {}}


def test_initialize_without_overlap_sends_no_elicitation_capability() -> None:
    s = HostSession("crm", "sess-1", ())
    [cmd] = s.from_host(req(1, "initialize", init_params({"elicitation": {"form": {}}})))
    assert isinstance(cmd, ToUpstream)
    assert "elicitation" not in cmd.message["params"]["capabilities"]


def test_initialize_response_carries_host_hop_version() -> None:
    s = HostSession("crm", "sess-1", ("form",))
    [cmd] = s.from_host(req("a", "initialize", init_params({}, "2025-06-18")))
    assert isinstance(cmd, ToUpstream)
    [out] = s.from_upstream({"jsonrpc": "2.0", "id": cmd.message["id"], "result": {"protocolVersion": "2025-03-26"}})
    assert out == ToHost({"jsonrpc": "2.0", "id": "a", "result": {"protocolVersion": "2025-06-18"}})
    assert s.upstream_version == "2025-03-26"


def test_ping_and_discover_are_answered_locally() -> None:
    s = initialized()
    assert s.from_host(req(5, "ping")) == [ToHost({"jsonrpc": "2.0", "id": 5, "result": {}})]
    [out] = s.from_host(req(6, "server/discover"))
    assert isinstance(out, ToHost) and out.message["error"]["code"] == METHOD_NOT_FOUND
    assert s.from_upstream(req(9, "ping")) == [ToUpstream({"jsonrpc": "2.0", "id": 9, "result": {}})]


def test_request_ids_are_remapped_and_restored_with_their_json_type() -> None:
    s = initialized()
    [a] = s.from_host(req(1, "tools/list"))
    [b] = s.from_host(req("1", "tools/list"))
    assert isinstance(a, ToUpstream) and isinstance(b, ToUpstream)
    assert a.message["id"] != b.message["id"]
    [back_b] = s.from_upstream({"jsonrpc": "2.0", "id": b.message["id"], "result": {"tools": []}})
    [back_a] = s.from_upstream({"jsonrpc": "2.0", "id": a.message["id"], "result": {"tools": []}})
    assert isinstance(back_a, ToHost) and back_a.message["id"] == 1
    assert isinstance(back_b, ToHost) and back_b.message["id"] == "1"


def test_duplicate_pending_id_is_refused() -> None:
    s = initialized()
    s.from_host(req(3, "tools/list"))
    [out] = s.from_host(req(3, "tools/list"))
    assert isinstance(out, ToHost) and "already in use" in out.message["error"]["message"]


def test_unknown_and_replayed_upstream_responses_are_dropped() -> None:
    s = initialized()
    [a] = s.from_host(req(1, "tools/list"))
    assert isinstance(a, ToUpstream)
    response = {"jsonrpc": "2.0", "id": a.message["id"], "result": {}}
    assert isinstance(s.from_upstream(response)[0], ToHost)
    [again] = s.from_upstream(response)
    assert isinstance(again, Dropped)
    [forged] = s.from_upstream({"jsonrpc": "2.0", "id": 999, "result": {}})
    assert isinstance(forged, Dropped)


def test_progress_token_is_remapped_both_ways() -> None:
    s = initialized()
    [a] = s.from_host(req(1, "tools/call", {"name": "x", "_meta": {"progressToken": "host-tok"}}))
    assert isinstance(a, ToUpstream)
    token = a.message["params"]["_meta"]["progressToken"]
    assert token != "host-tok"
    [p] = s.from_upstream({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
    assert isinstance(p, ToHost) and p.message["params"]["progressToken"] == "host-tok"
    [bad] = s.from_upstream({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "zzz", "progress": 1}})
    assert isinstance(bad, Dropped)


def test_host_cancel_is_remapped_and_unknown_cancel_dropped() -> None:
    s = initialized()
    [a] = s.from_host(req(42, "tools/call", {"name": "x"}))
    assert isinstance(a, ToUpstream)
    [c] = s.from_host({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}})
    assert isinstance(c, ToUpstream) and c.message["params"]["requestId"] == a.message["id"]
    [d] = s.from_host({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 43}})
    assert isinstance(d, Dropped)


def test_elicitation_in_offered_mode_goes_to_policy_then_host_with_new_id() -> None:
    s = initialized()
    upstream_req = req(1, "elicitation/create", {"mode": "form", "message": "hi", "requestedSchema": {"type": "object", "properties": {}}})
    [check] = s.from_upstream(upstream_req)
    assert check == CheckElicitation(upstream_req, "form", True)
    [to_host] = s.deliver_elicitation(upstream_req, {**upstream_req["params"], "message": "[crm] hi"})
    assert isinstance(to_host, ToHost)
    host_id = to_host.message["id"]
    assert to_host.message["params"]["message"] == "[crm] hi"
    [answer] = s.from_host({"jsonrpc": "2.0", "id": host_id, "result": {"action": "decline"}})
    assert answer == ToUpstream({"jsonrpc": "2.0", "id": 1, "result": {"action": "decline"}})
    # the same answer again is a forged / replayed id
    [replay] = s.from_host({"jsonrpc": "2.0", "id": host_id, "result": {"action": "decline"}})
    assert isinstance(replay, Dropped)


def test_elicitation_in_mode_not_offered_goes_to_the_gate_marked_not_offered() -> None:
    """The gate refuses it with -32602 (and counts it against the rate limit); the host never sees it."""
    s = initialized(policy_modes=("form",))
    msg = req(4, "elicitation/create", {"mode": "url", "message": "m", "url": "https://a.example", "elicitationId": "e"})
    assert s.from_upstream(msg) == [CheckElicitation(msg, "url", False)]
    [refusal] = s.refuse_server_request(msg, INVALID_PARAMS, "not offered")
    assert refusal == ToUpstream({"jsonrpc": "2.0", "id": 4, "error": {"code": INVALID_PARAMS, "message": "not offered"}})


def test_missing_mode_means_form() -> None:
    s = initialized(policy_modes=("url",), caps={"elicitation": {"form": {}, "url": {}}})
    msg = req(4, "elicitation/create", {"message": "m", "requestedSchema": {}})
    assert s.from_upstream(msg) == [CheckElicitation(msg, "form", False)]


def test_elicitation_params_that_are_not_an_object_are_refused_in_the_core() -> None:
    s = initialized()
    out = s.from_upstream(req(5, "elicitation/create", ["x"]))
    assert isinstance(out[0], ToUpstream) and out[0].message["error"]["code"] == INVALID_PARAMS
    assert not any(isinstance(c, ToHost) for c in out)


def test_form_mode_key_removed_for_2025_06_18_host() -> None:
    s = initialized(caps={"elicitation": {}}, version="2025-06-18")
    upstream_req = req(1, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": {}})
    [to_host] = s.deliver_elicitation(upstream_req, dict(upstream_req["params"]))
    assert isinstance(to_host, ToHost) and "mode" not in to_host.message["params"]


def test_server_requests_from_two_sessions_with_same_id_stay_apart() -> None:
    a, b = initialized(), initialized()
    for s in (a, b):
        [c] = s.from_upstream(req(1, "sampling/createMessage", {"messages": []}))
        assert isinstance(c, ToHost)
    # an answer to session a's request posted to session b is not b's to give
    [ok] = a.from_host({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert isinstance(ok, ToUpstream)
    [dropped] = b.from_host({"jsonrpc": "2.0", "id": 2, "result": {}})
    assert isinstance(dropped, Dropped)


def test_upstream_lost_fails_pending_requests_once() -> None:
    s = initialized()
    [a] = s.from_host(req("x", "tools/call", {"name": "t"}))
    assert isinstance(a, ToUpstream)
    [err] = s.upstream_lost([a.message["id"]], "gone", UPSTREAM_STREAM_LOST)
    assert isinstance(err, ToHost) and err.message["id"] == "x" and err.message["error"]["code"] == UPSTREAM_STREAM_LOST
    assert s.upstream_lost([a.message["id"]], "gone", UPSTREAM_STREAM_LOST) == []


def test_non_jsonrpc_input_is_rejected_or_dropped() -> None:
    s = initialized()
    [h] = s.from_host({"hello": 1})
    assert isinstance(h, ToHost) and "error" in h.message
    [u] = s.from_upstream([1, 2])
    assert isinstance(u, Dropped)


ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=20))


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, min_size=1, max_size=30, unique_by=lambda v: (type(v), v)))
def test_property_every_host_id_round_trips_exactly(host_ids: list[Any]) -> None:
    s = initialized()
    sent = []
    for hid in host_ids:
        [c] = s.from_host(req(hid, "tools/list"))
        assert isinstance(c, ToUpstream)
        sent.append((hid, c.message["id"]))
    assert len({u for _, u in sent}) == len(sent)
    for hid, uid in reversed(sent):
        [back] = s.from_upstream({"jsonrpc": "2.0", "id": uid, "result": {}})
        assert isinstance(back, ToHost)
        assert back.message["id"] == hid and type(back.message["id"]) is type(hid)
