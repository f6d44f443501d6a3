"""One contract for every StateStore backend (memory, and the real Redis)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.state.errors import StateUnavailable
from gateway.state.memory_store import MemoryStateStore
from gateway.state.redis_store import RedisStateStore
from gateway.state.store import Owner, OwnerKey, StateStore, open_state_store

from .conftest import StoreHarness

pytestmark = pytest.mark.anyio

KEY = OwnerKey(server="crm", upstream_session="up-1", elicitation_id="el-1")
ALICE = Owner(host_session="host-a", user="alice")
BOB = Owner(host_session="host-b", user="bob")


# -- sessions --------------------------------------------------------------------------------


async def test_session_crud(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.get_session("s1") is None
    record = {"server": "crm", "caps": {"form": {}}, "n": 3, "name": "Zoë"}
    await store.put_session("s1", record, ttl_s=30)
    assert await store.get_session("s1") == record
    assert await store.get_session("s2") is None

    await store.put_session("s1", {"v": 2}, ttl_s=30)
    assert await store.get_session("s1") == {"v": 2}

    assert await store.touch_session("s1", ttl_s=30) is True
    assert await store.touch_session("nope", ttl_s=30) is False
    assert await store.delete_session("s1") is True
    assert await store.delete_session("s1") is False
    assert await store.get_session("s1") is None


async def test_session_record_is_a_copy(harness: StoreHarness) -> None:
    record: dict[str, object] = {"items": [1]}
    await harness.store.put_session("s1", record, ttl_s=30)
    record["items"] = [2]
    got = await harness.store.get_session("s1")
    assert got == {"items": [1]}


async def test_session_expires_and_touch_extends(harness: StoreHarness) -> None:
    store = harness.store
    await store.put_session("short", {"a": 1}, ttl_s=0.2)
    await store.put_session("touched", {"b": 2}, ttl_s=0.2)
    assert await store.touch_session("touched", ttl_s=5) is True
    await harness.advance(0.35)
    assert await store.get_session("short") is None
    assert await store.touch_session("short", ttl_s=5) is False
    assert await store.delete_session("short") is False
    assert await store.get_session("touched") == {"b": 2}


async def test_rejects_non_positive_ttl(harness: StoreHarness) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        await harness.store.put_session("s", {}, ttl_s=0)
    with pytest.raises(ValueError, match="ttl_s"):
        await harness.store.register_owner(KEY, ALICE, ttl_s=-1)
    with pytest.raises(ValueError, match="grace_s"):
        await harness.store.complete(KEY, grace_s=-1)


# -- ownership -------------------------------------------------------------------------------


async def test_register_and_owner_of(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.owner_of(KEY) is None
    await store.register_owner(KEY, ALICE, ttl_s=30)
    assert await store.owner_of(KEY) == ALICE
    other = OwnerKey(server="crm", upstream_session="up-1", elicitation_id="el-2")
    assert await store.owner_of(other) is None
    assert await store.complete(other, grace_s=5) is None


async def test_complete_delivers_once_then_replay_is_none(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(KEY, ALICE, ttl_s=30)
    assert await store.complete(KEY, grace_s=5) == ALICE
    assert await store.complete(KEY, grace_s=5) is None
    assert await store.owner_of(KEY) is None


async def test_completed_marker_forgotten_after_grace(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(KEY, ALICE, ttl_s=30)
    assert await store.complete(KEY, grace_s=0.2) == ALICE
    await harness.advance(0.35)
    assert await store.complete(KEY, grace_s=0.2) is None
    # Forgotten: the id can be registered afresh (a server reusing it) and completes again.
    await store.register_owner(KEY, BOB, ttl_s=30)
    assert await store.owner_of(KEY) == BOB
    assert await store.complete(KEY, grace_s=0) == BOB
    assert await store.complete(KEY, grace_s=0) is None


async def test_reregistering_replaces_a_completed_marker(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(KEY, ALICE, ttl_s=30)
    assert await store.complete(KEY, grace_s=30) == ALICE
    await store.register_owner(KEY, BOB, ttl_s=30)
    assert await store.complete(KEY, grace_s=30) == BOB


async def test_owner_expires_unless_completed(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(KEY, ALICE, ttl_s=0.2)
    await harness.advance(0.35)
    assert await store.owner_of(KEY) is None
    assert await store.complete(KEY, grace_s=5) is None


async def test_ownership_is_namespaced_by_server_and_upstream_session(harness: StoreHarness) -> None:
    store = harness.store
    on_crm = OwnerKey("crm", "up-1", "same-id")
    on_tickets = OwnerKey("tickets", "up-1", "same-id")
    other_session = OwnerKey("crm", "up-2", "same-id")
    await store.register_owner(on_crm, ALICE, ttl_s=30)
    await store.register_owner(on_tickets, BOB, ttl_s=30)
    assert await store.owner_of(other_session) is None
    assert await store.complete(on_tickets, grace_s=5) == BOB
    assert await store.owner_of(on_crm) == ALICE
    assert await store.complete(on_crm, grace_s=5) == ALICE


async def test_separators_inside_ids_do_not_alias(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(OwnerKey("a:b", "c", "d"), ALICE, ttl_s=30)
    assert await store.owner_of(OwnerKey("a", "b:c", "d")) is None
    assert await store.owner_of(OwnerKey("a:b", "c", "d")) == ALICE


async def test_concurrent_completes_deliver_once(harness: StoreHarness) -> None:
    store = harness.store
    await store.register_owner(KEY, ALICE, ttl_s=30)
    results = await asyncio.gather(*(store.complete(KEY, grace_s=5) for _ in range(10)))
    assert [r for r in results if r is not None] == [ALICE]


@pytest.mark.redis
async def test_two_replicas_racing_deliver_once(redis_prefix: str) -> None:
    replicas = [RedisStateStore("redis://127.0.0.1:6379/15", prefix=redis_prefix) for _ in range(2)]
    try:
        await replicas[0].register_owner(KEY, ALICE, ttl_s=30)
        assert await replicas[1].owner_of(KEY) == ALICE
        results = await asyncio.gather(*(r.complete(KEY, grace_s=5) for r in replicas * 5))
        assert [r for r in results if r is not None] == [ALICE]
    finally:
        for replica in replicas:
            await replica.close()


# -- buffered events -------------------------------------------------------------------------


async def test_events_append_and_replay_in_order(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.events_after("h", None) == []
    ids = [await store.append_event("h", f"m{i}".encode(), ttl_s=30) for i in range(5)]
    assert ids == ["1", "2", "3", "4", "5"]
    assert await store.events_after("h", None) == [(i, f"m{n}".encode()) for n, i in enumerate(ids)]
    assert await store.events_after("h", "3") == [("4", b"m3"), ("5", b"m4")]
    assert await store.events_after("h", "5") == []
    assert await store.events_after("other", None) == []


async def test_event_payloads_are_binary_safe(harness: StoreHarness) -> None:
    payload = b'data: {"a":1}\r\n\x00\xff:2:'
    event_id = await harness.store.append_event("h", payload, ttl_s=30)
    assert await harness.store.events_after("h", None) == [(event_id, payload)]


async def test_events_are_per_session(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.append_event("a", b"a1", ttl_s=30) == "1"
    assert await store.append_event("b", b"b1", ttl_s=30) == "1"
    assert await store.append_event("a", b"a2", ttl_s=30) == "2"
    assert await store.events_after("a", "1") == [("2", b"a2")]
    assert await store.events_after("b", None) == [("1", b"b1")]


async def test_events_trimmed_to_max_events(harness: StoreHarness) -> None:
    store = harness.store
    for i in range(7):
        await store.append_event("h", str(i).encode(), ttl_s=30, max_events=3)
    assert await store.events_after("h", None) == [("5", b"4"), ("6", b"5"), ("7", b"6")]
    # Asking from a trimmed id yields what is left after it.
    assert await store.events_after("h", "2") == [("5", b"4"), ("6", b"5"), ("7", b"6")]


async def test_unknown_last_event_id_replays_everything(harness: StoreHarness) -> None:
    store = harness.store
    await store.append_event("h", b"x", ttl_s=30)
    await store.append_event("h", b"y", ttl_s=30)
    everything = [("1", b"x"), ("2", b"y")]
    assert await store.events_after("h", "not-an-id") == everything
    # Higher than any id issued: it predates an expired counter, so all is newer.
    assert await store.events_after("h", "99") == everything


async def test_drop_events_keeps_ids_increasing(harness: StoreHarness) -> None:
    store = harness.store
    await store.append_event("h", b"x", ttl_s=30)
    await store.drop_events("h")
    assert await store.events_after("h", None) == []
    assert await store.append_event("h", b"y", ttl_s=30) == "2"
    assert await store.events_after("h", "1") == [("2", b"y")]
    await store.drop_events("never-had-events")


async def test_event_buffer_expires(harness: StoreHarness) -> None:
    store = harness.store
    await store.append_event("h", b"x", ttl_s=0.2)
    await harness.advance(0.35)
    assert await store.events_after("h", None) == []
    # A new generation starts at 1; a client's old id from before still gets it.
    assert await store.append_event("h", b"y", ttl_s=30) == "1"
    assert await store.events_after("h", "1") == []
    assert await store.events_after("h", "7") == [("1", b"y")]


async def test_append_rejects_bad_max_events(harness: StoreHarness) -> None:
    with pytest.raises(ValueError, match="max_events"):
        await harness.store.append_event("h", b"x", ttl_s=30, max_events=0)


# -- lifecycle and failure -------------------------------------------------------------------


async def test_ping(harness: StoreHarness) -> None:
    await harness.store.ping()


def test_open_state_store_selects_backend() -> None:
    assert isinstance(open_state_store(None, "memory"), MemoryStateStore)
    with pytest.raises(ValueError, match=r"state\.url"):
        open_state_store(None, "redis")


@pytest.mark.redis
async def test_open_state_store_redis() -> None:
    store = open_state_store("redis://127.0.0.1:6379/15", "redis", prefix="mcpgw-test:open:")
    try:
        assert isinstance(store, RedisStateStore)
        await store.ping()
    finally:
        await store.close()


def test_backends_satisfy_the_protocol() -> None:
    stores: list[type[StateStore]] = [MemoryStateStore, RedisStateStore]
    assert len(stores) == 2


async def test_unreachable_redis_raises_state_unavailable() -> None:
    store = RedisStateStore("redis://127.0.0.1:1/0", socket_timeout_s=0.2)
    try:
        with pytest.raises(StateUnavailable):
            await store.ping()
        with pytest.raises(StateUnavailable):
            await store.get_session("s")
        with pytest.raises(StateUnavailable):
            await store.put_session("s", {}, ttl_s=1)
        with pytest.raises(StateUnavailable):
            await store.register_owner(KEY, ALICE, ttl_s=1)
        with pytest.raises(StateUnavailable):
            await store.complete(KEY, grace_s=1)
        with pytest.raises(StateUnavailable):
            await store.append_event("h", b"x", ttl_s=1)
        with pytest.raises(StateUnavailable):
            await store.events_after("h", None)
    finally:
        await store.close()


# -- session records with pending server requests, the idle index, wake-ups, replicas -------------


async def test_load_session_refreshes_and_takes_a_pending_entry_once(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.load_session("s1", 30) == (None, None)
    await store.put_session("s1", {"v": 1}, ttl_s=30)
    assert await store.put_pending("s1", "i:1", {"id": 1, "m": "elicitation/create"}, max_pending=4) is True
    assert await store.load_session("s1", 30, take="i:2") == ({"v": 1}, None)
    assert await store.load_session("s1", 30, take="i:1") == ({"v": 1}, {"id": 1, "m": "elicitation/create"})
    assert await store.load_session("s1", 30, take="i:1") == ({"v": 1}, None)  # an answer is taken once
    assert await store.put_pending("nope", "i:1", {}, max_pending=4) is False  # no session, nothing stored


async def test_pending_entries_are_capped_and_dropped(harness: StoreHarness) -> None:
    store = harness.store
    await store.put_session("s1", {"v": 1}, ttl_s=30)
    assert [await store.put_pending("s1", f"i:{n}", {"id": n}, max_pending=3) for n in range(5)] == [
        True, True, True, False, False]
    assert await store.put_pending("s1", "i:0", {"id": 0, "again": True}, max_pending=3) is True  # replace is fine
    assert await store.drop_pending("s1", "i:1") is True
    assert await store.drop_pending("s1", "i:1") is False
    assert await store.put_pending("s1", "i:9", {"id": 9}, max_pending=3) is True
    # a put of the record keeps its pending entries
    await store.put_session("s1", {"v": 2}, ttl_s=30)
    assert await store.load_session("s1", 30, take="i:9") == ({"v": 2}, {"id": 9})


async def test_counted_pending_entries_are_uncounted_when_taken_dropped_or_deleted(harness: StoreHarness) -> None:
    store = harness.store
    for sid in ("s1", "s2"):
        await store.put_session(sid, {"v": 1}, ttl_s=30)
    assert await store.put_pending("s1", "i:1", {"id": 1}, max_pending=5, counted_as="crm")
    assert await store.put_pending("s1", "i:1", {"id": 1, "again": 1}, max_pending=5, counted_as="crm")  # replaced
    assert await store.put_pending("s1", "i:2", {"id": 2}, max_pending=5, counted_as="crm")
    assert await store.put_pending("s1", "i:3", {"id": 3}, max_pending=5)  # sampling: not counted
    assert await store.put_pending("s2", "i:1", {"id": 1}, max_pending=5, counted_as="files")
    assert await store.pending_counts() == {"crm": 2, "files": 1}
    # taken: the entry comes back as it was put (the count marker stays inside the store)
    assert await store.load_session("s1", 30, take="i:1") == ({"v": 1}, {"id": 1, "again": 1})
    assert await store.load_session("s1", 30, take="i:1") == ({"v": 1}, None)  # once
    assert await store.pending_counts() == {"crm": 1, "files": 1}
    assert await store.drop_pending("s1", "i:2") and not await store.drop_pending("s1", "i:2")
    assert await store.pending_counts() == {"files": 1}
    await store.delete_session("s2")
    assert await store.pending_counts() == {}


async def test_session_expires_with_its_pending_entries(harness: StoreHarness) -> None:
    store = harness.store
    await store.put_session("s1", {"v": 1}, ttl_s=0.2)
    await store.put_pending("s1", "i:1", {"id": 1}, max_pending=3)
    await harness.advance(0.3)
    assert await store.load_session("s1", 30, take="i:1") == (None, None)


async def test_take_idle_claims_each_idle_session_once(harness: StoreHarness) -> None:
    store = harness.store
    await store.put_session("old", {"s": "crm"}, ttl_s=60)
    await harness.advance(0.4)
    await store.put_session("new", {"s": "crm"}, ttl_s=60)
    assert await store.count_sessions() == 2
    assert await store.take_idle(0.3) == [("old", {"s": "crm"})]
    assert await store.take_idle(0.3) == []
    assert await store.get_session("old") is None
    assert await store.count_sessions() == 1
    await harness.advance(0.4)
    await store.load_session("new", 60)  # seen again: not idle
    assert await store.take_idle(0.3) == []
    assert await store.delete_session("new") is True
    assert await store.count_sessions() == 0


async def test_events_are_bounded_in_bytes_keeping_the_newest(harness: StoreHarness) -> None:
    store = harness.store
    for n in range(10):
        await store.append_event("h", bytes([65 + n]) * 100, ttl_s=30, max_events=1000, max_bytes=350)
    kept = await store.events_after("h", None)
    assert [p[:1] for _, p in kept] == [b"H", b"I", b"J"]
    big = b"x" * 1000  # larger than the bound alone: the newest event always stays
    await store.append_event("h", big, ttl_s=30, max_events=1000, max_bytes=350)
    assert [p for _, p in await store.events_after("h", None)] == [big]


async def test_subscribers_are_woken_by_appends_to_their_session_only(harness: StoreHarness) -> None:
    store = harness.store
    async with store.subscribe("h1") as wake, store.subscribe("h2") as other:
        await store.append_event("h1", b"x", ttl_s=30)
        await asyncio.wait_for(wake.wait(), 2)
        await asyncio.sleep(0.1)
        assert not other.is_set()


async def test_replica_heartbeats_expire(harness: StoreHarness) -> None:
    store = harness.store
    assert await store.replica_alive("r1") is False
    await store.beat("r1", ttl_s=0.2)
    assert await store.replica_alive("r1") is True
    await harness.advance(0.3)
    assert await store.replica_alive("r1") is False


@pytest.mark.redis
async def test_an_append_on_one_replica_wakes_a_subscriber_on_another(redis_prefix: str) -> None:
    a = RedisStateStore("redis://127.0.0.1:6379/15", prefix=redis_prefix)
    b = RedisStateStore("redis://127.0.0.1:6379/15", prefix=redis_prefix)
    try:
        async with b.subscribe("h") as wake:
            await asyncio.sleep(0.1)
            await a.append_event("h", b"hello", ttl_s=30)
            await asyncio.wait_for(wake.wait(), 2)
            assert [p for _, p in await b.events_after("h", None)] == [b"hello"]
    finally:
        await a.close()
        await b.close()


def test_the_redis_client_parses_replies_with_hiredis() -> None:
    # The Redis state's round trips are parsed in C (hiredis, a dependency: docs/performance.md); redis-py
    # falls back to its pure-Python parser silently when hiredis is missing.
    from redis.asyncio.connection import DefaultParser

    from gateway.state.redis_client import connect_redis

    client = connect_redis("redis://127.0.0.1:6379/15")
    assert DefaultParser.__name__ == "_AsyncHiredisParser"
    assert client.connection_pool.connection_kwargs.get("parser_class", DefaultParser) is DefaultParser
