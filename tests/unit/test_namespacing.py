"""Names on /mcp (gateway/core/namespacing.py): valid, never colliding, routed back exactly."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core import namespacing as ns

TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
servers = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.-]{0,20}", fullmatch=True).filter(lambda s: "__" not in s)
names = st.from_regex(r"[A-Za-z0-9._-]{1,200}", fullmatch=True)


@given(server=servers, a=names, b=names)
def test_names_are_valid_tool_names_and_never_collide(server: str, a: str, b: str) -> None:
    na, nb = ns.name(server, a), ns.name(server, b)
    assert TOOL_NAME.fullmatch(na) and TOOL_NAME.fullmatch(nb)
    assert (na == nb) == (a == b)


@given(server=servers, original=names)
def test_a_name_routes_back_to_its_server_and_name(server: str, original: str) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": ns.name(server, original)}}
    routed_server, out, part = ns.route(msg, (server, "other"))
    assert routed_server == server
    if not ns.shortened(server, original):
        assert out["params"]["name"] == original
    else:
        assert ns.looks_shortened(part) and len(msg["params"]["name"]) == 128


@given(server=servers, uri=st.text(min_size=1, max_size=80))
def test_uris_route_back_for_reads_subscriptions_and_completions(server: str, uri: str) -> None:
    wrapped = ns.uri(server, uri)
    for method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        routed_server, out, _ = ns.route({"method": method, "id": 1, "params": {"uri": wrapped}}, (server,))
        assert (routed_server, out["params"]["uri"]) == (server, uri)
    msg = {"method": "completion/complete", "id": 1, "params": {"ref": {"type": "ref/resource", "uri": wrapped}}}
    assert ns.route(msg, (server,))[1]["params"]["ref"]["uri"] == uri


@pytest.mark.parametrize("bad", [None, 3, "", "web", "web__", "other__echo", "mcpgw://other/x", "mcpgw://web"])
def test_names_of_servers_the_host_may_not_use_are_not_routed(bad: object) -> None:
    for msg in ({"method": "tools/call", "id": 1, "params": {"name": bad}},
                {"method": "resources/read", "id": 1, "params": {"uri": bad}}):
        with pytest.raises(ns.NotRoutable):
            ns.route(msg, ("web",))


@given(positions=st.dictionaries(st.sampled_from(["a", "b.c", "d-e"]), st.text(max_size=30), max_size=3))
def test_cursors_round_trip(positions: dict[str, str]) -> None:
    cursor = ns.encode_cursor(positions)
    assert (cursor is None) == (not positions)
    if cursor is not None:
        assert ns.decode_cursor(cursor, ("a", "b.c", "d-e")) == positions


@pytest.mark.parametrize("cursor", ["", "!!!", "bnVsbA", "eyJ4IjoxfQ", "eyJub3doZXJlIjoieCJ9", 7, "A" * 20000])
def test_forged_cursors_are_refused(cursor: object) -> None:
    with pytest.raises(ns.NotRoutable):
        ns.decode_cursor(cursor, ("a",))


@given(server=servers, rid=st.integers() | st.text(max_size=20))
def test_server_request_ids_round_trip(server: str, rid: int | str) -> None:
    msg = ns.to_host(server, {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {}})
    assert ns.split_server_request_id(msg["id"], (server,)) == (server, rid)


@pytest.mark.parametrize("forged", [7, "web", "web__", "web__{", "web__true", "web__[1]", "else__1"])
def test_forged_answer_ids_are_refused(forged: object) -> None:
    with pytest.raises(ns.NotRoutable):
        ns.split_server_request_id(forged, ("web",))


def test_only_resource_updates_and_server_requests_are_renamed_on_the_way_to_the_host() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert ns.to_host("web", note) is note
    updated = ns.to_host("web", {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                 "params": {"uri": "file:///a"}})
    assert updated["params"]["uri"] == "mcpgw://web/file:///a"
    answer = {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert ns.to_host("web", answer) is answer


def test_list_entries_are_named_and_titled_by_server() -> None:
    tool = ns.item("tools/list", "web", {"name": "echo", "annotations": {"title": "Echo it"}})
    assert tool == {"name": "web__echo", "annotations": {"title": "Echo it"}, "title": "[web] Echo it"}
    template = ns.item("resources/templates/list", "web", {"uriTemplate": "file:///{p}", "name": "files"})
    assert template is not None and template["uriTemplate"] == "mcpgw://web/file:///{p}"
    assert ns.item("tools/list", "web", {"title": "no name"}) is None
