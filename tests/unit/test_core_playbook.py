"""Playbooks for the sans-IO core: an event in, exactly these commands out. No network, no store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core import host_side, upstream_gate
from gateway.core.commands import (
    CheckElicitation,
    CheckInputRequired,
    CheckUrlRequired,
    Dropped,
    ForgetServerRequest,
    ForwardServerRequest,
    RouteCompletion,
    ToHost,
    ToUpstream,
)
from gateway.core.messages import id_key
from gateway.core.session_record import SessionRecord
from gateway.core.upstream_gate import STANDALONE, StreamContext
from gateway.errors import INVALID_PARAMS, METHOD_NOT_FOUND, UPSTREAM_FAILED


def req(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def init_params(caps: dict[str, Any], version: str = "2025-11-25") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "h", "version": "1"}}


def record(offered: frozenset[str] = frozenset({"form", "url"}), host_version: str = "2025-11-25") -> SessionRecord:
    return SessionRecord("sess-1", "crm", "alice", host_version, "2025-11-25", offered, "up-1")


def on_request_stream(rid: Any = 7, token: Any = None) -> StreamContext:
    return StreamContext(awaiting=rid, progress_tokens=frozenset({id_key(token)}) if token is not None else frozenset())


ELICIT_FORM = {"mode": "form", "message": "hi", "requestedSchema": {"type": "object", "properties": {}}}


# -- initialize ------------------------------------------------------------------------------------


def test_initialize_rewrites_elicitation_to_policy_and_host_intersection() -> None:
    version, offered, out = host_side.initialize_upstream(
        req(7, "initialize", init_params({"elicitation": {"form": {}, "url": {}}, "roots": {}})), ("form",))
    assert (version, offered) == ("2025-11-25", frozenset({"form"}))
    assert out["params"]["capabilities"] == {"roots": {}, "elicitation": {"form": {}}}
    assert out["id"] == 7


def test_initialize_bare_object_means_form_and_is_sent_explicitly() -> None:
    _, _, out = host_side.initialize_upstream(req(1, "initialize", init_params({"elicitation": {}}, "2025-06-18")),
                                              ("form", "url"))
    assert out["params"]["capabilities"]["elicitation"] == {"form": {}}


def test_initialize_without_overlap_sends_no_elicitation_capability() -> None:
    _, offered, out = host_side.initialize_upstream(req(1, "initialize", init_params({"elicitation": {"form": {}}})), ())
    assert offered == frozenset() and "elicitation" not in out["params"]["capabilities"]


def test_initialize_answer_carries_host_hop_version() -> None:
    upstream_version, answer = host_side.initialize_answer(
        {"jsonrpc": "2.0", "id": "a", "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}, "2025-06-18")
    assert upstream_version == "2025-11-25" and answer["result"]["protocolVersion"] == "2025-06-18"


# -- host -> upstream ------------------------------------------------------------------------------


def test_ping_discover_and_a_second_initialize_are_answered_locally() -> None:
    rec = record()
    assert host_side.from_host(rec, req(3, "ping")) == [ToHost({"jsonrpc": "2.0", "id": 3, "result": {}})]
    [d] = host_side.from_host(rec, req(4, "server/discover"))
    assert isinstance(d, ToHost) and d.message["error"]["code"] == METHOD_NOT_FOUND
    [i] = host_side.from_host(rec, req(5, "initialize", init_params({})))
    assert isinstance(i, ToHost) and "error" in i.message


def test_host_requests_notifications_and_cancels_pass_unchanged_to_the_sessions_own_upstream() -> None:
    rec = record()
    call = req("x", "tools/call", {"name": "t", "_meta": {"progressToken": 5}})
    assert host_side.from_host(rec, call) == [ToUpstream("crm", call)]
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "x"}}
    assert host_side.from_host(rec, cancel) == [ToUpstream("crm", cancel)]
    [bad] = host_side.from_host(rec, {"hello": 1})
    assert isinstance(bad, Dropped)


def test_host_answer_needs_the_pending_entry_and_restores_the_server_id() -> None:
    rec = record()
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"action": "decline"}}
    [dropped] = host_side.host_answer(rec, answer, None)
    assert isinstance(dropped, Dropped)  # forged or replayed: the store released nothing
    [out] = host_side.host_answer(rec, answer, {"id": 1, "m": "elicitation/create", "up": "crm"})
    assert out == ToUpstream("crm", answer)
    accepted = {"jsonrpc": "2.0", "id": 1, "result": {"action": "accept", "content": {"a": 1}}}
    [checked] = host_side.host_answer(rec, accepted, {"id": 1, "m": "elicitation/create", "up": "crm", "schema": {"x": 1}})
    assert isinstance(checked, ToUpstream) and checked.answer_schema == {"x": 1}


# -- upstream -> host: the gate ----------------------------------------------------------------------


def test_elicitation_in_offered_mode_goes_to_policy_then_host_with_a_pending_entry() -> None:
    rec = record()
    msg = req(1, "elicitation/create", ELICIT_FORM)
    [check] = upstream_gate.from_upstream(rec, "crm", msg, on_request_stream())
    assert check == CheckElicitation("crm", msg, "form", True)
    fwd = upstream_gate.deliver_elicitation(rec, check, {**ELICIT_FORM, "message": "[crm] hi"})
    assert isinstance(fwd, ForwardServerRequest)
    assert fwd.message["id"] == 1 and fwd.message["params"]["message"] == "[crm] hi"
    assert fwd.pending == {"id": 1, "m": "elicitation/create", "up": "crm", "schema": ELICIT_FORM["requestedSchema"]}


def test_elicitation_in_mode_not_offered_goes_to_the_gate_marked_not_offered() -> None:
    msg = req(4, "elicitation/create", {"mode": "url", "message": "m", "url": "https://a.example", "elicitationId": "e"})
    assert upstream_gate.from_upstream(record(frozenset({"form"})), "crm", msg, STANDALONE) == [
        CheckElicitation("crm", msg, "url", False)]


def test_missing_mode_means_form() -> None:
    msg = req(4, "elicitation/create", {"message": "m", "requestedSchema": {}})
    assert upstream_gate.from_upstream(record(frozenset({"url"})), "crm", msg, STANDALONE) == [
        CheckElicitation("crm", msg, "form", False)]


def test_elicitation_params_that_are_not_an_object_are_refused() -> None:
    out = upstream_gate.from_upstream(record(), "crm", req(5, "elicitation/create", ["x"]), STANDALONE)
    assert isinstance(out[0], ToUpstream) and out[0].message["error"]["code"] == INVALID_PARAMS
    assert not any(isinstance(c, ToHost | ForwardServerRequest) for c in out)


def test_form_mode_key_removed_for_2025_06_18_host() -> None:
    rec = record(host_version="2025-06-18")
    msg = req(1, "elicitation/create", ELICIT_FORM)
    [check] = upstream_gate.from_upstream(rec, "crm", msg, STANDALONE)
    assert isinstance(check, CheckElicitation)
    fwd = upstream_gate.deliver_elicitation(rec, check, dict(ELICIT_FORM))
    assert "mode" not in fwd.message["params"]


# The bypass shapes found in review: each is policed or refused, never forwarded.

def test_elicitation_without_an_id_is_refused_not_forwarded() -> None:
    msg = {"jsonrpc": "2.0", "method": "elicitation/create", "params": ELICIT_FORM}
    [out] = upstream_gate.from_upstream(record(), "crm", msg, on_request_stream())
    assert isinstance(out, Dropped) and out.event == "upstream.request_dropped"


def test_elicitation_inside_a_json_array_is_policed_element_by_element() -> None:
    a, b = req(1, "elicitation/create", ELICIT_FORM), {"jsonrpc": "2.0", "method": "elicitation/create", "params": {}}
    out = upstream_gate.from_upstream(record(), "crm", [a, b], STANDALONE)
    assert isinstance(out[0], CheckElicitation) and isinstance(out[1], Dropped)


def test_url_required_entry_claiming_form_mode_is_judged_as_url_mode() -> None:
    rec = record()
    entry = {"mode": "form", "message": "log in", "url": "https://evil.example/x", "elicitationId": "e1"}
    err = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32042, "message": "m", "data": {"elicitations": [entry]}}}
    [check] = upstream_gate.from_upstream(rec, "crm", err, on_request_stream(7))
    assert isinstance(check, CheckUrlRequired)
    assert upstream_gate.url_entry(check.entries[0])["mode"] == "url"
    assert upstream_gate.url_entry("not an object") is None


@pytest.mark.parametrize("code", ["-32042", -32042.0, True, None])
def test_error_with_a_code_that_is_not_an_integer_is_replaced(code: Any) -> None:
    err = {"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": "m", "data": {"elicitations": [{}]}}}
    out = upstream_gate.from_upstream(record(), "crm", err, on_request_stream(7))
    [to_host] = [c for c in out if isinstance(c, ToHost)]
    assert to_host.message["error"]["code"] == UPSTREAM_FAILED and "data" not in to_host.message["error"]


def test_responses_only_for_the_request_the_stream_serves() -> None:
    rec = record()
    ok = {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert upstream_gate.from_upstream(rec, "crm", ok, on_request_stream(7)) == [ToHost(ok)]
    for ctx, msg in [
        (STANDALONE, ok),  # a response on the standalone stream
        (on_request_stream(7), {"jsonrpc": "2.0", "id": 8, "result": {}}),  # another id
        (on_request_stream(7), {"jsonrpc": "2.0", "id": "7", "result": {}}),  # same digits, other JSON type
    ]:
        [out] = upstream_gate.from_upstream(rec, "crm", msg, ctx)
        assert isinstance(out, Dropped)


def test_input_required_results_are_policed_and_unknown_result_types_refused() -> None:
    res = {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "input_required", "inputRequests": {}}}
    assert upstream_gate.from_upstream(record(), "crm", res, on_request_stream(7)) == [CheckInputRequired("crm", res)]
    odd = {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "later"}}
    out = upstream_gate.from_upstream(record(), "crm", odd, on_request_stream(7))
    assert any(isinstance(c, ToHost) and c.message["error"]["code"] == UPSTREAM_FAILED for c in out)


def test_unknown_methods_are_refused_known_ones_forwarded() -> None:
    rec = record()
    [refusal, dropped] = upstream_gate.from_upstream(rec, "crm", req(9, "evil/steal"), STANDALONE)
    assert isinstance(refusal, ToUpstream) and refusal.message["error"]["code"] == METHOD_NOT_FOUND
    assert isinstance(dropped, Dropped)
    [n] = upstream_gate.from_upstream(rec, "crm", {"jsonrpc": "2.0", "method": "notifications/evil"}, STANDALONE)
    assert isinstance(n, Dropped)
    listed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert upstream_gate.from_upstream(rec, "crm", listed, STANDALONE) == [ToHost(listed)]
    [s] = upstream_gate.from_upstream(rec, "crm", req(2, "sampling/createMessage", {"messages": []}), STANDALONE)
    assert isinstance(s, ForwardServerRequest) and s.pending["m"] == "sampling/createMessage"
    assert upstream_gate.from_upstream(rec, "crm", req(3, "ping"), STANDALONE) == [
        ToUpstream("crm", {"jsonrpc": "2.0", "id": 3, "result": {}})]


def test_progress_only_for_requests_in_flight_on_this_stream() -> None:
    rec = record()
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 5, "progress": 1}}
    assert upstream_gate.from_upstream(rec, "crm", progress, on_request_stream(7, token=5)) == [ToHost(progress)]
    [other] = upstream_gate.from_upstream(rec, "crm", progress, on_request_stream(7, token=6))
    assert isinstance(other, Dropped)
    [string_token] = upstream_gate.from_upstream(
        rec, "crm", {**progress, "params": {"progressToken": "5"}}, on_request_stream(7, token=5))
    assert isinstance(string_token, Dropped)


def test_server_cancel_and_completion_go_through_the_store() -> None:
    rec = record()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    assert upstream_gate.from_upstream(rec, "crm", cancel, STANDALONE) == [ForgetServerRequest(id_key(3), cancel)]
    done = {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "e"}}
    assert upstream_gate.from_upstream(rec, "crm", done, STANDALONE) == [RouteCompletion("crm", done, "e")]
    [nameless] = upstream_gate.from_upstream(rec, "crm", {**done, "params": {}}, STANDALONE)
    assert isinstance(nameless, Dropped)


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "code", "mode", "x"]),
        children, max_size=6),
    max_leaves=20,
))
def test_property_nothing_unsorted_reaches_the_host(msg: Any) -> None:
    """Whatever a hostile server sends, the gate returns commands; a message reaches the host
    only as a response to the awaited request, a known notification, or a request with a pending entry."""
    for ctx in (STANDALONE, on_request_stream(1)):
        for c in upstream_gate.from_upstream(record(), "crm", msg, ctx):
            if isinstance(c, ToHost):
                m = c.message
                assert m.get("jsonrpc") == "2.0"
                if "method" in m:
                    assert m["method"] in upstream_gate.FORWARDED_NOTIFICATIONS or m["method"] == "notifications/progress"
                else:
                    assert ctx.answers_request and id_key(m["id"]) == id_key(1)
            if isinstance(c, ForwardServerRequest):
                assert c.message["method"] in upstream_gate.FORWARDED_REQUESTS
