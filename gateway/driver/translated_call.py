"""A 2026-07-28 host's call to a handshake-era server: held upstream across the host's retries.

The replica that gets the first request opens an upstream session for the call (the host
has none), sends `initialize` with the host's capabilities narrowed by policy, then the
call. A runner relays what the server sends into the call's buffer in the store:
- an `elicitation/create` that policy allows becomes an input request (`ask`); one it blocks
  is refused to the server as in the handshake era, and the host never hears of it;
- sampling and roots requests become input requests if the host declared them, else the
  server gets -32601;
- progress and other known notifications pass; the answer ends the call (`final`).

The host gets an `input_required` result with the asks and a `requestState` the gateway
seals (call, replica, upstream session, the server's request id per key, buffer position).
Its retry, on any replica, answers the server's pending requests in the upstream session
and reads the buffer on from that position. The upstream call waits at most
`elicitation_timeout_seconds` for an answer, then is cancelled and its session deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import orjson

from gateway.core import eras, input_rounds, sealed_state, upstream_gate
from gateway.core.commands import (
    CheckElicitation,
    CheckUrlRequired,
    Dropped,
    ForwardServerRequest,
    ToHost,
    ToUpstream,
)
from gateway.core.input_rounds import ELICIT
from gateway.core.messages import LATEST_VERSION, id_key
from gateway.core.raw_json import encode
from gateway.core.session_record import SessionRecord
from gateway.driver.call_clock import CallClock, bounded, note_answer, timeout_failure
from gateway.driver.contracts import HostGone, Responder
from gateway.driver.host_streams import ModernReply
from gateway.driver.services import DriverServices
from gateway.elicitation_gate import refusal
from gateway.errors import (
    ANSWER_REJECTED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UPSTREAM_STREAM_LOST,
    UpstreamFailure,
    error_to_wire,
    jsonrpc_error,
)
from gateway.logs import get_logger
from gateway.state.errors import StateUnavailable

log = get_logger("gateway.translated")

_BATCH_WINDOW = 0.05  # asks that arrive together go out in one round
_STATE_META = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
               "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel")


class TranslatedCalls:
    def __init__(self, driver: DriverServices) -> None:
        self.d = driver
        self._key: bytes | None = None
        self._runners: set[asyncio.Future[None]] = set()

    def close(self) -> None:
        for runner in list(self._runners):
            runner.cancel()

    async def seal_key(self) -> bytes:
        if self._key is None:
            self._key = await self.d.store.shared_secret("request-state")
        return self._key

    # -- the host's side --------------------------------------------------------------------------------

    async def call(self, rec: SessionRecord, msg: dict[str, Any], responder: Responder) -> None:
        rid = msg["id"]
        answers, state = input_rounds.retry_params(msg)
        try:
            if state is None:
                if msg["method"] not in eras.INPUT_REQUIRED_METHODS:
                    await responder.json(await self._one_shot(rec, msg))
                    return
                token = uuid.uuid4().hex
                runner = asyncio.ensure_future(self._runner(rec, msg, token))
                self._runners.add(runner)
                runner.add_done_callback(self._runners.discard)
                try:
                    await self._round(rec, msg, responder, {"c": token, "r": self.d.replica, "p": None})
                except asyncio.CancelledError:
                    runner.cancel()  # the host closed its request before any answer: so does the gateway
                    raise
                return
            sealed = sealed_state.unseal(await self.seal_key(), state)
            if (sealed is None or sealed.get("s") != self.d.server or sealed.get("u") != rec.user
                    or sealed.get("exp", 0) < time.time()):
                await responder.json(jsonrpc_error(rid, INVALID_PARAMS, "Invalid or expired requestState",
                                                   {"reason": "invalid_request_state"}), 400)
                return
            error = await self._answer(rec, sealed, answers)
            if error is not None:
                await responder.json(jsonrpc_error(rid, ANSWER_REJECTED, error), 400)
                return
            await self._round(rec, msg, responder, sealed)
        except UpstreamFailure as exc:
            status, body = error_to_wire(exc, rid)
            await responder.json(body, status)
        except HostGone:
            return  # the host left mid-reply; a held call runs on, bounded by its elicitation timeout

    async def _answer(self, rec: SessionRecord, sealed: dict[str, Any], answers: Any) -> str | None:
        """Post the host's answers to the server's pending requests; drop answers to keys never asked."""
        asked: dict[str, Any] = sealed.get("k", {})
        dropped = 0
        for key, value in (answers.items() if isinstance(answers, dict) else ()):
            entry = asked.get(key)
            if entry is None:
                dropped += 1
                continue
            response = {"jsonrpc": "2.0", "id": entry["id"], "result": value}
            if entry.get("schema") is not None and isinstance(value, dict) and value.get("action") == "accept":
                response, error = self.d.gate.check_answer(response, entry["schema"], session=rec.session_id)
                if error is not None:
                    await self._post(sealed["us"], response)  # the server learns the answer was refused
                    await self._answered(sealed, entry["id"])
                    return error
            await self._post(sealed["us"], response)
            await self._answered(sealed, entry["id"])
        if dropped:
            self.d.dropped(rec, Dropped("host.answer_dropped", "answers for input requests never sent to this host",
                                         {"keys": dropped}))
        return None

    async def _answered(self, sealed: dict[str, Any], server_request_id: Any) -> None:
        """The runner's clock (on whichever replica) resumes: the server has its answer."""
        await note_answer(self.d.store, f"tc/{sealed['c']}", server_request_id, self.d.settings.elicitation_timeout)

    async def _round(
        self, rec: SessionRecord, msg: dict[str, Any], responder: Responder, sealed: dict[str, Any]
    ) -> None:
        """Read the call's buffer on from the sealed position: the next asks, or the call's answer."""
        token, position = sealed["c"], sealed.get("p")
        buffer = f"tc/{token}"
        asks: dict[str, Any] = {}
        upstream_session: str | None = sealed.get("us")
        deadline = time.monotonic() + self.d.settings.elicitation_timeout + self.d.settings.keepalive
        batch_until: float | None = None
        out = ModernReply(responder)
        async with self.d.store.subscribe(buffer) as wake:
            while True:
                wake.clear()
                for event_id, payload in await self.d.store.events_after(buffer, position):
                    event = orjson.loads(payload)
                    if event["t"] == "final" and asks:
                        break  # the asks go out first; the next retry reads the answer from here
                    position = event_id
                    if event["t"] == "session":
                        upstream_session = event["us"]
                    elif event["t"] == "msg":
                        await out.notify(event["m"])  # progress and the like, on this request's stream
                    elif event["t"] == "ask":
                        asks[event["k"]] = event
                        batch_until = batch_until or time.monotonic() + _BATCH_WINDOW
                    elif event["t"] == "final":
                        answer = {**event["m"], "id": msg["id"]}
                        if "result" in answer:
                            answer["result"] = eras.modern_result(msg["method"], answer["result"])
                        await out.answer(answer)
                        return
                if asks and (batch_until is None or time.monotonic() >= batch_until):
                    await out.answer(await self._input_required(rec, msg, token, sealed, position,
                                                                upstream_session, asks))
                    return
                wait = (batch_until - time.monotonic()) if batch_until else 1.0
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), max(0.0, wait))
                if wake.is_set() or asks:
                    continue
                if time.monotonic() > deadline or not await self.d.store.replica_alive(sealed["r"]):
                    await out.answer(jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST,
                                                   "the call was lost (timed out or its gateway replica stopped)"))
                    return

    async def _input_required(
        self, rec: SessionRecord, msg: dict[str, Any], token: str, sealed: dict[str, Any], position: str | None,
        upstream_session: str | None, asks: dict[str, Any],
    ) -> dict[str, Any]:
        state = {
            "s": self.d.server, "u": rec.user, "c": token, "r": sealed["r"], "us": upstream_session, "p": position,
            "exp": time.time() + self.d.settings.elicitation_timeout,
            "k": {key: {"id": a["id"], **({"schema": a["schema"]} if a.get("schema") else {})}
                  for key, a in asks.items()},
        }
        result = {
            "resultType": eras.INPUT_REQUIRED,
            "inputRequests": {key: a["req"] for key, a in asks.items()},
            "requestState": sealed_state.seal(await self.seal_key(), state),
        }
        return {"jsonrpc": "2.0", "id": msg["id"], "result": result}

    # -- the upstream side: runs on the replica that got the first request ------------------------------

    async def _runner(self, rec: SessionRecord, msg: dict[str, Any], token: str) -> None:
        buffer = f"tc/{token}"
        upstream_session: str | None = None

        async def put(event: dict[str, Any]) -> None:
            with contextlib.suppress(StateUnavailable):
                await self.d.store.append_event(buffer, orjson.dumps(event), self.d.settings.elicitation_timeout,
                                                max_events=10_000)

        # The server's time is bounded by its request timeout, paused while an ask waits for the host's
        # retry; that wait is bounded by the elicitation timeout (`call_clock.py`).
        clock = CallClock(self.d.store, buffer, self.d.settings.request_timeout, self.d.settings.elicitation_timeout,
                          pending_in_store=False)
        try:
            upstream_session = await self._open_session(rec)
            await put({"t": "session", "us": upstream_session})
            outcome = await bounded(self._relay_call(rec, msg, upstream_session, put, clock), clock)
            if outcome in ("request_timeout", "elicitation_timeout"):
                await self._post(upstream_session, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                    "params": {"requestId": msg["id"], "reason": outcome}})
                failure = timeout_failure(self.d.server, outcome, self.d.settings)
                await put({"t": "final", "m": jsonrpc_error(msg["id"], failure.code, failure.message)})
                log.warning("request.timed_out", server=self.d.server, session=rec.session_id, reason=outcome,
                            pending_with_host=len(clock.expired_ids))
        except UpstreamFailure as exc:
            await put({"t": "final", "m": jsonrpc_error(msg["id"], exc.code, exc.message)})
        except TimeoutError:
            if upstream_session is not None:
                await self._post(upstream_session, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                    "params": {"requestId": msg["id"], "reason": "no answer in time"}})
            await put({"t": "final", "m": jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST,
                                                        "no answer from the host in time; call cancelled")})
            log.info("request.cancelled_upstream", server=self.d.server, session=rec.session_id, reason="timeout")
        finally:
            if upstream_session is not None:
                with contextlib.suppress(UpstreamFailure):
                    await self.d.upstream.end_session(session_id=upstream_session, protocol_version=LATEST_VERSION)

    async def _open_session(self, rec: SessionRecord) -> str | None:
        caps = eras.narrow_capabilities(rec.host_capabilities, rec.offered)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LATEST_VERSION, "capabilities": caps,
            "clientInfo": rec.client_info or {"name": "mcp-elicitation-gateway", "version": "0.1.0"}}}
        async with self.d.upstream.post(encode(init), session_id=None, protocol_version=None) as reply:
            session = reply.session_id
            async for answer in reply.messages:
                if isinstance(answer, dict) and answer.get("id") == 0 and "error" in answer:
                    raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"server {self.d.server!r} refused initialize")
        await self._post(session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        return session

    async def _one_shot(self, rec: SessionRecord, msg: dict[str, Any]) -> dict[str, Any]:
        """A request that cannot ask for input (tools/list, ...): its own short upstream session."""
        session = await self._open_session(rec)
        try:
            body = encode(_without_envelope(msg))
            async with self.d.upstream.post(body, session_id=session, protocol_version=LATEST_VERSION) as reply:
                async for answer in reply.messages:
                    if isinstance(answer, dict) and "method" not in answer and id_key(answer.get("id")) == id_key(
                            msg["id"]):
                        if "result" in answer:
                            return {**answer, "result": eras.modern_result(msg["method"], answer["result"])}
                        return dict(answer)
        finally:
            with contextlib.suppress(UpstreamFailure):
                await self.d.upstream.end_session(session_id=session or "", protocol_version=LATEST_VERSION)
        return jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST, f"server {self.d.server!r} gave no answer")

    async def _relay_call(
        self, rec: SessionRecord, msg: dict[str, Any], session: str | None, put: Any, clock: CallClock
    ) -> str:
        # The server's requests are judged as for a 2025-11-25 host (form `mode` kept) with the modes it was offered.
        legacy = SessionRecord(rec.session_id, rec.server, rec.user, LATEST_VERSION, LATEST_VERSION, rec.offered,
                               session, rec.host_capabilities)
        ctx = upstream_gate.serving(msg)
        asks = 0
        timeout = self.d.settings.elicitation_timeout
        async with self.d.upstream.post(encode(_without_envelope(msg)), session_id=session,
                                        protocol_version=LATEST_VERSION) as reply:
            messages = reply.messages.__aiter__()
            while True:
                try:
                    upstream_msg = await asyncio.wait_for(messages.__anext__(), timeout)
                except StopAsyncIteration:
                    break
                for c in upstream_gate.from_upstream(legacy, self.d.server, upstream_msg, ctx):
                    if isinstance(c, ToHost):
                        if "method" in c.message:
                            await put({"t": "msg", "m": c.message})
                        else:
                            await put({"t": "final", "m": c.message})
                            return "ok"
                    elif isinstance(c, ToUpstream):
                        await self._post(session, c.message)
                    elif isinstance(c, CheckElicitation):
                        decision = await self.d.decide(legacy, c.message["params"], c.offered, register_owner=False)
                        if decision is None or decision.params is None:
                            await self._post(session, refusal(c.message["id"], decision))
                            continue
                        params = {k: v for k, v in decision.params.items() if k != "elicitationId"}
                        schema = params.get("requestedSchema")
                        asks += 1
                        clock.asked(c.message["id"])
                        await put({"t": "ask", "k": f"e{asks}", "id": c.message["id"],
                                   "req": {"method": ELICIT, "params": params},
                                   "schema": schema if isinstance(schema, dict) else None})
                    elif isinstance(c, ForwardServerRequest):
                        capability = "sampling" if c.message["method"].startswith("sampling") else "roots"
                        if c.message["method"].startswith("tasks/") or not (
                                isinstance(rec.host_capabilities, dict) and capability in rec.host_capabilities):
                            await self._post(session, jsonrpc_error(c.message["id"], METHOD_NOT_FOUND,
                                                                    f"the host did not declare {capability}"))
                            continue
                        asks += 1
                        clock.asked(c.message["id"])
                        await put({"t": "ask", "k": f"r{asks}", "id": c.message["id"],
                                   "req": {"method": c.message["method"], "params": c.message.get("params", {})}})
                    elif isinstance(c, CheckUrlRequired):
                        # -32042 has no 2026-07-28 form: the host gets it policed, as a handshake-era host would.
                        await put({"t": "final", "m": await self.d.police_url_required(legacy, c)})
                        return "ok"
                    elif isinstance(c, Dropped):
                        self.d.dropped(legacy, c)
        await put({"t": "final", "m": jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST,
                                                    f"server {self.d.server!r} closed the stream without answering")})
        return "upstream_stream_lost"

    async def _post(self, session: str | None, message: dict[str, Any]) -> None:
        try:
            async with self.d.upstream.post(encode(message), session_id=session,
                                            protocol_version=LATEST_VERSION) as reply:
                async for _ in reply.messages:
                    pass
        except UpstreamFailure as exc:
            log.warning("upstream.post_failed", server=self.d.server, reason=exc.message)


def _without_envelope(msg: dict[str, Any]) -> dict[str, Any]:
    """The request as a handshake-era server expects it: no 2026 envelope, no input-round fields."""
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    assert isinstance(params, dict)
    meta = {k: v for k, v in eras.request_meta(msg).items() if k not in _STATE_META}
    out = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    if meta:
        out["_meta"] = meta
    return {**msg, "params": out}
