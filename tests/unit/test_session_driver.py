"""The session driver with an in-memory upstream, the memory store and the real policy gate.

Fakes here are only the HTTP side (a responder that records what it was asked to
write) and the upstream transport (a handler playing the server). No sockets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.driver.contracts import DriverSettings, HostGone, OneByOne
from gateway.driver.session_driver import SessionDriver
from gateway.elicitation_gate import ElicitationGate
from gateway.errors import HostProtocolError
from gateway.metrics import GatewayMetrics
from gateway.policy.policy_config import ElicitationPolicy
from gateway.state.memory_store import MemoryStateStore
from gateway.upstream.in_memory import InMemoryUpstream, JsonReply, SseReply, Status, UpstreamCall

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}, "url": {}}},
                   "clientInfo": {"name": "t", "version": "1"}}}
FORM = {"mode": "form", "message": "Name?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
PASSWORD = {"mode": "form", "message": "Sign in", "requestedSchema": {
    "type": "object", "properties": {"password": {"type": "string", "title": "Password"}}}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Stream(OneByOne):
    def __init__(self, fail_after: int | None = None) -> None:
        self.events: list[tuple[bytes, str | None]] = []
        self.fail_after = fail_after
        self.writes = 0  # calls of write or write_many: what a socket would see as writes

    async def write_many(self, events: list[tuple[bytes, str | None]]) -> None:
        await super().write_many(events)  # event by event, through any subclass's write
        self.writes -= len(events) - 1  # one write on a socket

    async def write(self, payload: bytes, event_id: str | None) -> None:
        self.writes += 1
        if self.fail_after is not None and len(self.events) >= self.fail_after:
            raise HostGone()
        self.events.append((payload, event_id))

    async def comment(self) -> None:
        return None

    def messages(self) -> list[Any]:
        import orjson

        return [orjson.loads(p) for p, _ in self.events if p]


class Responder:
    def __init__(self, stream: Stream | None = None) -> None:
        self.body: Any = None
        self.status = 0
        self.session_id: str | None = None
        self.stream_ = stream or Stream()
        self.streamed = False

    async def json(self, body: Any, status: int = 200, session_id: str | None = None) -> None:
        self.body, self.status, self.session_id = body, status, session_id

    async def stream(self, session_id: str) -> Stream:
        self.streamed = True
        return self.stream_


class Server:
    """Plays an MCP server: initialize, tools/call answered on a stream that elicits `asks` first."""

    def __init__(self, asks: list[dict[str, Any]] | None = None, init_error: bool = False, slow: float = 0) -> None:
        self.asks = asks or []
        self.init_error = init_error
        self.slow = slow
        self.answers: list[Any] = []
        self.answered = asyncio.Event()

    async def __call__(self, call: UpstreamCall) -> Any:
        if call.verb == "DELETE":
            return Status(200)
        if call.verb == "GET":
            return Status(405)
        msg = call.body
        if msg.get("method") == "initialize":
            await asyncio.sleep(self.slow if msg["id"] != "gateway-probe" else 0)
            if self.init_error and msg["id"] != "gateway-probe":
                return JsonReply({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32600, "message": "no"}},
                                 session_id="up-1")
            return JsonReply({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}},
                session_id="probe" if msg["id"] == "gateway-probe" else "up-1")
        if "method" not in msg:
            self.answers.append(msg)
            self.answered.set()
            return Status(202)
        if "id" not in msg:
            return Status(202)
        if msg["method"] == "tools/list":
            return JsonReply({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})

        async def events() -> AsyncIterator[Any]:
            for n, params in enumerate(self.asks):
                yield {"jsonrpc": "2.0", "id": 100 + n, "method": "elicitation/create", "params": params}
            if self.asks:
                await asyncio.wait_for(self.answered.wait(), 5)
            yield {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": []}}

        return SseReply(events())


def make_driver(server: Server, **settings: Any) -> tuple[SessionDriver, InMemoryUpstream, MemoryStateStore]:
    upstream = InMemoryUpstream("crm", server)
    store = MemoryStateStore()
    gate = ElicitationGate("crm", ElicitationPolicy(rate_limit=None), None)
    base = {"session_ttl": 60, "buffer_ttl": 60, "owner_ttl": 60, "completion_grace": 5, "max_sessions": 100,
            "protocol": "legacy"}
    driver = SessionDriver("crm", upstream, gate, store, GatewayMetrics(), DriverSettings(**{**base, **settings}), "r1")
    return driver, upstream, store


def session_calls(upstream: InMemoryUpstream) -> list[UpstreamCall]:
    """The calls of host sessions, without the one-time probe of the server's revisions."""
    return [c for c in upstream.calls if c.session_id != "probe" and not (
        c.verb == "POST" and c.body.get("id") == "gateway-probe")]


async def initialized(driver: SessionDriver) -> str:
    responder = Responder()
    await driver.initialize(dict(INIT), responder, None)
    assert responder.session_id is not None
    return responder.session_id


async def test_initialize_stores_the_record_and_rewrites_capabilities() -> None:
    driver, upstream, store = make_driver(Server())
    sid = await initialized(driver)
    rec, _ = await driver.load(sid)
    assert (rec.upstream_session_id, rec.offered) == ("up-1", frozenset({"form", "url"}))
    [init_call] = [c for c in session_calls(upstream) if c.verb == "POST"]
    assert init_call.body["params"]["capabilities"]["elicitation"] == {"form": {}, "url": {}}
    assert await store.count_sessions() == 1
    assert driver.live == {}  # an idle session holds nothing in the replica


async def test_a_failed_initialize_ends_its_upstream_session_and_stores_nothing() -> None:
    driver, upstream, store = make_driver(Server(init_error=True))
    responder = Responder()
    await driver.initialize(dict(INIT), responder, None)
    assert responder.body["error"]["code"] == -32600 and responder.session_id is None
    assert [c.verb for c in session_calls(upstream)] == ["POST", "DELETE"]
    assert await store.count_sessions() == 0


async def test_max_sessions_holds_under_concurrent_initializes() -> None:
    driver, _, store = make_driver(Server(slow=0.05), max_sessions=2)
    outcomes = await asyncio.gather(*(initialized(driver) for _ in range(5)), return_exceptions=True)
    assert sum(isinstance(o, str) for o in outcomes) == 2
    assert all(isinstance(o, HostProtocolError) and o.status == 503 for o in outcomes if not isinstance(o, str))
    assert await store.count_sessions() == 2


async def test_an_elicitation_answered_through_the_store_reaches_the_server_once() -> None:
    server = Server(asks=[FORM])
    driver, _, _ = make_driver(server)
    sid = await initialized(driver)
    rec, _ = await driver.load(sid)
    responder = Responder()
    call = asyncio.ensure_future(driver.host_request(
        rec, {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "t"}}, responder))
    while not responder.stream_.messages():
        await asyncio.sleep(0.01)
    [asked] = responder.stream_.messages()
    assert asked["params"]["message"] == "[crm] Name?" and asked["id"] == 100
    answer = {"jsonrpc": "2.0", "id": 100, "result": {"action": "accept", "content": {"name": "Ada"}}}
    rec, pending = await driver.load(sid, take="i:100")
    await driver.host_oneway(rec, answer, pending)
    await asyncio.wait_for(call, 5)
    assert server.answers == [answer]
    assert responder.stream_.messages()[-1] == {"jsonrpc": "2.0", "id": "c1", "result": {"content": []}}
    # the same answer again: the store released nothing, the host is told
    rec, pending = await driver.load(sid, take="i:100")
    with pytest.raises(HostProtocolError):
        await driver.host_oneway(rec, answer, pending)
    assert driver.live == {}  # the call's progress token and runtime are gone with it
    # event ids on the request stream name this replica and the request
    assert all(eid is not None and eid.startswith("r.r1.") for _, eid in responder.stream_.events)


async def test_a_blocked_elicitation_goes_back_to_the_server_not_to_the_host() -> None:
    server = Server(asks=[PASSWORD])
    driver, _, _ = make_driver(server)
    rec, _ = await driver.load(await initialized(driver))
    responder = Responder()
    await asyncio.wait_for(driver.host_request(
        rec, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t"}}, responder), 5)
    assert [m.get("method") for m in responder.stream_.messages()] == [None]
    [refusal] = server.answers
    assert refusal["id"] == 100 and refusal["error"]["code"] == -32050


async def test_pending_server_requests_are_capped_per_session() -> None:
    server = Server(asks=[FORM] * 5)
    driver, _, _ = make_driver(server, max_pending=3)
    rec, _ = await driver.load(await initialized(driver))
    responder = Responder()
    task = asyncio.ensure_future(driver.host_request(
        rec, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "t"}}, responder))
    await asyncio.wait_for(task, 5)
    asked = [m for m in responder.stream_.messages() if m.get("method") == "elicitation/create"]
    assert len(asked) == 3
    refused = [a for a in server.answers if "error" in a]
    assert [a["id"] for a in refused] == [103, 104] and all(a["error"]["code"] == -32052 for a in refused)


async def test_a_host_gone_mid_stream_detaches_the_relay_into_the_store() -> None:
    server = Server(asks=[FORM])
    driver, _, store = make_driver(server)
    sid = await initialized(driver)
    rec, _ = await driver.load(sid)
    stream = Stream(fail_after=1)  # the priming event gets through, the elicitation does not
    responder = Responder(stream)
    call = asyncio.ensure_future(driver.host_request(
        rec, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "t"}}, responder))
    await asyncio.sleep(0.2)
    [(_, priming_id)] = stream.events
    token = priming_id.split(".")[2]
    buffered = [p for _, p in await store.events_after(f"{sid}/{token}", None)]
    assert any(b"elicitation/create" in p for p in buffered)  # kept for a host that resumes
    rec, pending = await driver.load(sid, take="i:100")
    await driver.host_oneway(rec, {"jsonrpc": "2.0", "id": 100, "result": {"action": "decline"}}, pending)
    await asyncio.wait_for(call, 5)
    buffered = [p for _, p in await store.events_after(f"{sid}/{token}", None)]
    assert any(b'"id":4' in p for p in buffered)  # the result too


async def test_progress_reaches_the_host_only_for_its_own_token() -> None:
    async def handler(call: UpstreamCall) -> Any:
        msg = call.body
        if call.verb != "POST":
            return Status(200)
        if msg.get("method") == "initialize":
            return JsonReply({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-11-25"}},
                             session_id="up-1")
        if "id" not in msg:
            return Status(202)
        progress = [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": t, "progress": 1}}
                    for t in ("mine", "other", 7)]
        return SseReply([*progress, {"jsonrpc": "2.0", "id": msg["id"], "result": {}}])

    upstream = InMemoryUpstream("crm", handler)
    driver = SessionDriver("crm", upstream, ElicitationGate("crm", ElicitationPolicy(rate_limit=None), None),
                           MemoryStateStore(), GatewayMetrics(),
                           DriverSettings(60, 60, 60, 5, 100, protocol="legacy"), "r1")
    rec, _ = await driver.load(await initialized(driver))
    responder = Responder()
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "_meta": {"progressToken": "mine"}}}
    await driver.host_request(rec, call, responder)
    tokens = [m["params"]["progressToken"] for m in responder.stream_.messages() if "method" in m]
    assert tokens == ["mine"]
