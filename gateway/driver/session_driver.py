"""The session driver: carries out every command of the sans-IO core, in one place.

No HTTP in here. The HTTP edge parses, finds the verb and hands over a
`Responder` (answer as JSON, or open an SSE stream); the driver talks to the
upstreams, the policy gate and the state store, and feeds what comes back to
the core (`host_side`, `upstream_gate`) as events.

What lives where:
- the store (memory or Redis) holds everything another replica needs: the
  session record, server requests awaiting a host answer, URL-mode owners and
  buffered events. Any replica serves any request.
- `Live` holds only what exists while this replica serves something for a
  session: requests in flight (their progress tokens), request streams that
  carried URL-mode elicitations, the upstream standalone stream while a host
  GET stream is open here or a URL-mode completion is awaited. An idle session
  has no `Live` entry and no upstream connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway import tracing
from gateway.core import eras, host_side, upstream_gate
from gateway.core.commands import (
    AnswerRound,
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
from gateway.core.messages import id_key, kind_of
from gateway.core.raw_json import encode
from gateway.core.session_record import SessionRecord
from gateway.core.upstream_gate import StreamContext
from gateway.driver.call_clock import CallClock, bounded, note_answer, timeout_failure
from gateway.driver.contracts import DriverSettings, HostGone, HostStream, Responder
from gateway.driver.host_streams import RequestRelay, SessionBuffers, StreamTag, lost
from gateway.driver.modern import ModernCalls
from gateway.driver.translated_call import TranslatedCalls
from gateway.driver.upstream_profile import ProfileCache
from gateway.elicitation_gate import ElicitationGate, refusal
from gateway.errors import (
    ANSWER_REJECTED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    POLICY_UNAVAILABLE,
    UPSTREAM_FAILED,
    HostProtocolError,
    UpstreamFailure,
    UpstreamSessionGone,
    error_to_wire,
    jsonrpc_error,
)
from gateway.logs import get_logger
from gateway.metrics import GatewayMetrics, era_label, method_label
from gateway.policy.engine import Decision
from gateway.state.errors import StateUnavailable
from gateway.state.owner import Owner, OwnerKey
from gateway.state.store import StateStore
from gateway.upstream.connector import Upstream

log = get_logger("gateway.driver")

_LISTENER_MAX_BACKOFF = 30.0
_LISTENER_READY_WAIT = 1.0


@dataclass
class Live:
    """Replica-local runtime of one session, only while something is being served."""

    in_flight: dict[str, str | None] = field(default_factory=dict)
    """id_key(host request id) -> id_key(progress token) or None."""
    request_streams: dict[str, HostStream] = field(default_factory=dict)
    """URL-mode elicitationId -> the open request stream that carried it."""
    calls: dict[str, asyncio.Future[str]] = field(default_factory=dict)
    """id_key(host request id) -> the task running that call here (a 2026-07-28 cancel closes it)."""
    listener: asyncio.Task[None] | None = None
    listener_ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the upstream standalone stream answered (or failed): calls wait for it briefly, so a
    server request the server sends there when the call starts is not lost."""
    get_task: asyncio.Task[Any] | None = None
    """The task serving the host's GET stream here."""
    awaiting_completions: int = 0
    notify_tokens: float = 1e9  # the bucket starts full (clamped to the rate at first use)
    notify_at: float = 0.0
    notify_dropped: int = 0
    notify_logged: float = 0.0

    @property
    def idle(self) -> bool:
        return not (self.in_flight or self.request_streams or self.get_task or self.awaiting_completions)


@dataclass
class Call:
    """What a host request's task shares with its handler: the relay, once the upstream streams."""

    relay: RequestRelay | None = None
    clock: CallClock | None = None

    def relaying(self, relay: RequestRelay) -> RequestRelay:
        """The call's relay; the requests it carries to the host pause the call's clock."""
        self.relay = relay
        if self.clock is not None:
            relay.on_request = self.clock.asked
        return relay


class SessionDriver:
    def __init__(
        self,
        server: str,
        upstream: Upstream,
        gate: ElicitationGate,
        store: StateStore,
        metrics: GatewayMetrics,
        settings: DriverSettings,
        replica: str,
    ) -> None:
        self.server = server
        self.upstream = upstream
        self.gate = gate
        self.store = store
        self.metrics = metrics
        self.settings = settings
        self.replica = replica
        self.live: dict[str, Live] = {}
        # (method, era, outcome) -> the request counter and duration histogram children, bound once (the
        # labels come from fixed sets: methods are known ones or "other").
        self._request_metrics: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._reserved = 0  # initializes under way here: counted against max_sessions with the stored sessions
        self._ok_lines = 0.0  # credit toward the next `ok` request line (logging.request_lines)
        self.buffers = SessionBuffers(server, store, settings)
        self.profiles = ProfileCache(upstream, settings.protocol)
        self.translated = TranslatedCalls(self)
        self.modern = ModernCalls(self, self.translated)

    # -- sessions ----------------------------------------------------------------------------

    async def initialize(
        self, msg: dict[str, Any], responder: Responder, user: str | None, session_id: str | None = None
    ) -> None:
        """`session_id`: the aggregated endpoint names its per-server sessions itself (any replica finds them)."""
        count = await self.store.count_sessions()
        if count + self._reserved >= self.settings.max_sessions:
            raise HostProtocolError(503, INTERNAL_ERROR, "too many sessions", msg["id"])
        self._reserved += 1  # reserved before the next await, so concurrent initializes cannot overshoot
        try:
            await self._initialize(msg, responder, user, session_id or uuid.uuid4().hex)
        finally:
            self._reserved -= 1

    async def _initialize(self, msg: dict[str, Any], responder: Responder, user: str | None, sid: str) -> None:
        started = time.monotonic()
        host_version, offered, out = host_side.initialize_upstream(msg, tuple(self.gate.policy.modes))
        try:
            upstream_version = await self.profiles.version_for(host_version)
        except UpstreamFailure as exc:
            self.request_done("initialize", started, "upstream_error", host_version)
            status, body = error_to_wire(exc, msg["id"])
            await responder.json(body, status)
            return
        if eras.is_modern(upstream_version):
            profile = await self.profiles.describe()
            # A 2026-07-28 server has no initialize: the gateway answers it, and keeps what every
            # later request must carry upstream (the host's capabilities and identity).
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            assert isinstance(params, dict)
            caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
            rec = SessionRecord(sid, self.server, user or sid, host_version, eras.MODERN_VERSION, offered, None,
                                caps, params.get("clientInfo"), self.settings.generation)
            result: dict[str, Any] = {"protocolVersion": host_version, "capabilities": profile.capabilities,
                                      "serverInfo": profile.server_info or {"name": self.server, "version": ""}}
            if isinstance(profile.instructions, str):
                result["instructions"] = profile.instructions
            await self._created(rec, started, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, responder)
            return
        upstream_sid: str | None = None
        answer: dict[str, Any] | None = None
        try:
            async with self.upstream.post(encode(out), session_id=None, protocol_version=None) as reply:
                upstream_sid = reply.session_id
                async for upstream_msg in reply.messages:
                    if isinstance(upstream_msg, dict) and "id" in upstream_msg and "method" not in upstream_msg:
                        answer = upstream_msg if id_key(upstream_msg.get("id")) == id_key(msg["id"]) else answer
        except UpstreamFailure as exc:
            await self._end_upstream(upstream_sid, None, sid)
            self.request_done("initialize", started, "upstream_error", host_version)
            status, body = error_to_wire(exc, msg["id"])
            await responder.json(body, status)
            return
        if answer is None or not isinstance(answer.get("result"), dict):
            await self._end_upstream(upstream_sid, None, sid)  # no stdio child or upstream session left behind
            self.request_done("initialize", started, "error", host_version)
            if answer is None or not isinstance(answer.get("error"), dict):
                answer = lost(msg["id"], f"server {self.server!r} did not answer initialize")
            await responder.json({**answer, "id": msg["id"]})
            return
        upstream_version, host_answer = host_side.initialize_answer(answer, host_version)
        # Until host authentication exists, the user identity is the session.
        rec = SessionRecord(sid, self.server, user or sid, host_version, upstream_version, offered, upstream_sid,
                            generation=self.settings.generation)
        await self._created(rec, started, host_answer, responder)

    async def _created(self, rec: SessionRecord, started: float, answer: dict[str, Any], responder: Responder) -> None:
        try:
            await self.store.put_session(rec.session_id, rec.to_json(), self.settings.session_ttl)
        except StateUnavailable:
            await self._end_upstream(rec.upstream_session_id, rec.upstream_version, rec.session_id)
            raise
        self.metrics.sessions_created.labels(self.server).inc()
        log.info("session.created", server=self.server, session=rec.session_id, host_version=rec.host_version,
                 upstream_version=rec.upstream_version, offered_modes=sorted(rec.offered))
        self.request_done("initialize", started, "ok", rec.host_version)
        await responder.json(answer, session_id=rec.session_id)

    async def load(self, sid: str, take: str | None = None) -> tuple[SessionRecord, dict[str, Any] | None]:
        """The session (any replica's), and with `take` a pending server request released once."""
        raw, pending = await self.store.load_session(sid, self.settings.session_ttl, take)
        generation = self.settings.generation
        if raw is None or raw.get("s") != self.server or raw.get("g", generation) != generation:
            raise HostProtocolError(404, INVALID_REQUEST, "Session not found")
        return SessionRecord.from_json(sid, raw), pending

    async def end(self, rec: SessionRecord, *, reason: str) -> None:
        deleted = False
        with contextlib.suppress(StateUnavailable):
            deleted = await self.store.delete_session(rec.session_id)
        await self._forget(rec.session_id, rec, reason, deleted)

    async def _forget(self, sid: str, rec: SessionRecord | None, reason: str, counted: bool) -> None:
        live = self.live.pop(sid, None)
        if live is not None and live.listener is not None:
            live.listener.cancel()
        with contextlib.suppress(StateUnavailable):
            await self.store.drop_events(sid)
        if counted:
            self.metrics.sessions_ended.labels(self.server, reason).inc()
            log.info("session.ended", server=self.server, session=sid, reason=reason)
        if rec is not None:
            await self._end_upstream(rec.upstream_session_id, rec.upstream_version, sid)

    async def expired(self, sid: str, raw: dict[str, Any], reason: str) -> None:
        """A session of this server that the sweep claimed (idle on every replica) and deleted."""
        await self._forget(sid, SessionRecord.from_json(sid, raw), reason, True)

    async def _end_upstream(self, upstream_sid: str | None, version: str | None, sid: str) -> None:
        if upstream_sid is None:
            return
        try:
            await self.upstream.end_session(session_id=upstream_sid, protocol_version=version)
        except UpstreamFailure as exc:
            log.warning("session.upstream_end_failed", server=self.server, session=sid, reason=exc.message)

    async def close(self) -> None:
        self.buffers.close()
        self.translated.close()
        for live in self.live.values():
            if live.listener is not None:
                live.listener.cancel()
        self.live.clear()

    def _live(self, sid: str) -> Live:
        live = self.live.get(sid)
        if live is None:
            live = self.live[sid] = Live()
        return live

    def _release(self, sid: str) -> None:
        live = self.live.get(sid)
        if live is not None and live.idle:
            if live.listener is not None:
                live.listener.cancel()
            del self.live[sid]

    # -- host requests ------------------------------------------------------------------------

    async def host_request(self, rec: SessionRecord, msg: dict[str, Any], responder: Responder) -> None:
        started = time.monotonic()
        method = method_label(msg["method"])
        commands = host_side.from_host(rec, msg)
        forward = next((c for c in commands if isinstance(c, ToUpstream)), None)
        if forward is None:
            local = next(c.message for c in commands if isinstance(c, ToHost))
            self.request_done(method, started, "local", rec.host_version)
            await responder.json(local)
            return
        outcome = "host_disconnected"
        key = id_key(msg["id"])
        live = self._live(rec.session_id)
        live.in_flight[key] = upstream_gate.progress_key(msg)
        if live.listener is not None and not live.listener_ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(live.listener_ready.wait(), _LISTENER_READY_WAIT)
        call = Call()
        # The call runs in a task of its own: if the host goes away (its handler is cancelled),
        # the call goes on detached, so the host can resume it, for at most resume_grace.
        task = asyncio.ensure_future(self._call(rec, forward, msg, responder, call))
        live.calls[key] = task
        counted_later = False
        try:
            outcome = await asyncio.shield(task)
        except asyncio.CancelledError:
            if call.relay is not None:
                if call.relay.answered:
                    # The host left after its answer (SDK clients close the stream at once): the call's own
                    # outcome ("ok", or "upstream_stream_lost" when the answer was that error) is counted
                    # when the call ends, a moment later. The host request's span ends now: it says what
                    # the host got, an answer.
                    counted_later = True
                    tracing.annotate(method=method, outcome="ok", era=era_label(rec.host_version))
                    task.add_done_callback(lambda done: self.request_done(
                        method, started, _outcome_of(done), rec.host_version))
                call.relay.detach()
            self.buffers.spawn(self._detached(rec, msg["id"], task, call), name=f"detached:{rec.session_id}")
            raise
        finally:
            live.in_flight.pop(key, None)
            live.calls.pop(key, None)
            self._release(rec.session_id)
            if not counted_later:
                self.request_done(method, started, outcome, rec.host_version)

    async def _detached(self, rec: SessionRecord, request_id: Any, task: asyncio.Future[str], call: Call) -> None:
        """A call whose host left: give it resume_grace to finish, then release it and tell the server."""
        try:
            await asyncio.wait_for(asyncio.shield(task), self.settings.resume_grace)
            return
        except TimeoutError:
            task.cancel()
        except Exception:  # noqa: S110 - the call's own failure was logged where it happened
            pass
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if call.relay is not None and call.relay.answered:
            return
        await self.cancel_upstream(rec, request_id, "host disconnected")
        if call.relay is not None:
            await call.relay.store_final(lost(request_id, "host disconnected; the call was cancelled"))
        log.info("request.cancelled_upstream", server=self.server, session=rec.session_id, reason="host_disconnected")

    async def _call(
        self, rec: SessionRecord, forward: ToUpstream, msg: dict[str, Any], responder: Responder, call: Call
    ) -> str:
        """The call, bounded by the server's request timeout (paused while the host answers) and the
        elicitation timeout (`driver/call_clock.py`)."""
        call.clock = CallClock(self.store, rec.session_id, self.settings.request_timeout,
                               self.settings.elicitation_timeout)
        outcome = await bounded(self._call_unbounded(rec, forward, msg, responder, call), call.clock)
        if outcome in ("request_timeout", "elicitation_timeout"):
            if call.relay is not None and call.relay.answered:
                return "ok"  # the answer went out as the clock ran out: it stands
            await self._timed_out(rec, msg["id"], outcome, call, responder)
        return outcome

    async def _timed_out(self, rec: SessionRecord, request_id: Any, why: str, call: Call, responder: Responder) -> None:
        """Cancel the call upstream, withdraw the host's unanswered requests, and tell the host why."""
        assert call.clock is not None
        if not eras.is_modern(rec.upstream_version):  # a 2026-07-28 server saw its request closed: that cancels
            await self.cancel_upstream(rec, request_id, why.replace("_", " "))
        for host_id in call.clock.expired_ids:
            if call.relay is not None:
                await call.relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": host_id, "reason": "no answer in time"}})
        status, body = error_to_wire(timeout_failure(self.server, why, self.settings), request_id)
        await _answer_quietly(responder, body, status, call)
        log.warning("request.timed_out", server=self.server, session=rec.session_id, reason=why,
                    pending_with_host=len(call.clock.expired_ids))

    async def _call_unbounded(
        self, rec: SessionRecord, forward: ToUpstream, msg: dict[str, Any], responder: Responder, call: Call
    ) -> str:
        ctx = upstream_gate.serving(msg)
        if eras.is_modern(rec.upstream_version):
            return await self._call_modern_upstream(rec, forward, msg, responder, call, ctx)
        try:
            async with self.upstream.post(
                encode(forward.message), session_id=rec.upstream_session_id, protocol_version=rec.upstream_version
            ) as reply:
                if not reply.streaming:
                    answers: list[dict[str, Any]] = []
                    async for upstream_msg in reply.messages:
                        answers.extend(await self.run(rec, upstream_gate.from_upstream(
                            rec, forward.upstream, upstream_msg, ctx), None))
                    answer = next((a for a in answers if "method" not in a), None) or lost(
                        msg["id"], f"server {self.server!r} gave no answer")
                    await responder.json(answer)
                    return "error" if "error" in answer else "ok"

                async def process(upstream_msg: Any, via: HostStream) -> list[dict[str, Any]]:
                    commands = upstream_gate.from_upstream(rec, forward.upstream, upstream_msg, ctx)
                    return await self.run(rec, commands, via)

                call.relaying(RequestRelay(
                    self.buffers, rec, forward.upstream, msg["id"], self.replica, process,
                    lambda c: self.dropped(rec, c),
                ))
                assert call.relay is not None
                try:
                    call.relay.attach(await responder.stream(rec.session_id))
                except (ConnectionResetError, RuntimeError):
                    call.relay.detach()
                return await call.relay.run(reply.messages, lambda: reply.queued)
        except UpstreamSessionGone as exc:
            await self.end(rec, reason="upstream_session_gone")
            status, body = error_to_wire(exc, msg["id"])
            await _answer_quietly(responder, body, status, call)
            return "upstream_session_gone"
        except UpstreamFailure as exc:
            status, body = error_to_wire(exc, msg["id"])
            await _answer_quietly(responder, body, status, call)
            return "upstream_error"

    async def _call_modern_upstream(
        self, rec: SessionRecord, forward: ToUpstream, msg: dict[str, Any], responder: Responder, call: Call,
        ctx: StreamContext,
    ) -> str:
        """A handshake-era host's call to a 2026-07-28 server: always answered on a stream, since
        the server's input requests become requests to the host on it."""

        async def process(upstream_msg: Any, via: HostStream) -> list[dict[str, Any]]:
            return await self.run(rec, self.classify(rec, upstream_msg, ctx), via)

        relay = call.relaying(RequestRelay(
            self.buffers, rec, forward.upstream, msg["id"], self.replica, process, lambda c: self.dropped(rec, c)))
        try:
            relay.attach(await responder.stream(rec.session_id))
        except (ConnectionResetError, RuntimeError):
            relay.detach()
        return await relay.run(self.modern.rounds_for_legacy_host(rec, msg, relay.send, relay.tag.token))

    def classify(self, rec: SessionRecord, msg: Any, ctx: StreamContext) -> list[Command]:
        return upstream_gate.from_upstream(rec, self.server, msg, ctx)

    async def host_oneway(self, rec: SessionRecord, msg: dict[str, Any], pending: dict[str, Any] | None) -> None:
        """A notification or an answer to a server request. Raises HostProtocolError when refused."""
        noted: asyncio.Future[None] | None = None
        if kind_of(msg) == "response":
            commands = host_side.host_answer(rec, msg, pending)
            # The call that asked resumes its request clock, on whichever replica (with no request timeout, no
            # clock follows answers: `CallClock._await_deadline`). Beside the answer's way upstream, not before
            # it: the server need not wait for this write. (The entry is taken already: a clock that runs out
            # meanwhile finds it answered.)
            if pending is not None and self.settings.request_timeout is not None:
                noted = asyncio.ensure_future(
                    note_answer(self.store, rec.session_id, msg.get("id"), self.settings.buffer_ttl))
        else:
            commands = host_side.from_host(rec, msg)
        try:
            await self._carry_out(rec, commands)
        finally:
            if noted is not None:
                await noted

    async def _carry_out(self, rec: SessionRecord, commands: list[Command]) -> None:
        for c in commands:
            if isinstance(c, AnswerRound):
                await self._answer_round(rec, c)
            elif isinstance(c, ToUpstream) and eras.is_modern(rec.upstream_version):
                self._cancel_local(rec, c.message)  # a 2026-07-28 server takes no notifications: closing is cancelling
            elif isinstance(c, ToUpstream) and c.answer_schema is not None:
                answer, error = self.gate.check_answer(c.message, c.answer_schema, session=rec.session_id)
                await self._post_oneway(rec, answer)  # the server learns the answer was refused, and why
                if error is not None:
                    raise HostProtocolError(400, ANSWER_REJECTED, error)
            elif isinstance(c, ToUpstream):
                await self._post_oneway(rec, c.message)
            elif isinstance(c, Dropped):
                self.dropped(rec, c)
                raise HostProtocolError(400, INVALID_REQUEST, c.reason)
            elif isinstance(c, ToHost):
                raise HostProtocolError(400, c.message["error"]["code"], c.message["error"]["message"])

    async def _answer_round(self, rec: SessionRecord, c: AnswerRound) -> None:
        """The host answered an input request of a 2026-07-28 server: into the call's answer buffer,
        where the replica running the call picks it up."""
        result = c.message.get("result")
        error: str | None = None
        if not isinstance(result, dict):
            result = {"action": "cancel"} if c.method == "elicitation/create" else None
        elif c.answer_schema is not None and result.get("action") == "accept":
            checked, error = self.gate.check_answer(c.message, c.answer_schema, session=rec.session_id)
            result = checked.get("result") if error is None else {"action": "decline"}
        if result is not None:
            await self.store.append_event(c.buffer, orjson.dumps({"k": c.key, "r": result}), self.settings.buffer_ttl)
        if error is not None:
            raise HostProtocolError(400, ANSWER_REJECTED, error)

    def _cancel_local(self, rec: SessionRecord, message: dict[str, Any]) -> None:
        if message.get("method") != "notifications/cancelled":
            return
        params = message.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        live = self.live.get(rec.session_id)
        task = live.calls.get(id_key(rid)) if live is not None else None
        if task is not None:
            task.cancel()

    async def _post_oneway(self, rec: SessionRecord, message: dict[str, Any]) -> None:
        """Notifications and responses upstream: the upstream answers 202 and no body."""
        try:
            body = encode(message)
        except orjson.JSONEncodeError:
            raise HostProtocolError(400, INVALID_REQUEST, "message cannot be re-encoded (nested too deeply)") from None
        try:
            async with self.upstream.post(
                body, session_id=rec.upstream_session_id, protocol_version=rec.upstream_version
            ) as reply:
                async for _ in reply.messages:
                    pass
        except UpstreamFailure as exc:
            log.warning("upstream.post_failed", server=self.server, session=rec.session_id, reason=exc.message)

    async def cancel_upstream(self, rec: SessionRecord, request_id: Any, reason: str) -> None:
        await self._post_oneway(rec, {
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        })

    # -- the host's standalone stream (GET) -------------------------------------------------------

    async def attach(self, rec: SessionRecord, last_event_id: str | None, stream: HostStream) -> None:
        """Serve the session's GET stream until the host leaves or the session ends.

        A Last-Event-ID of a request stream resumes that call instead.
        """
        resumed = StreamTag.parse(last_event_id)
        if resumed is not None:
            await self.buffers.resume(rec, resumed, stream)
            return
        sid = rec.session_id
        current = asyncio.current_task()
        previous = self.live[sid].get_task if sid in self.live else None
        if previous is not None and previous is not current and not previous.done():
            # The host opened its GET stream again. The one it left is noticed only at its next write
            # (a keepalive), so it is replaced now rather than the new one refused.
            previous.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.wait({previous}), 2.0)
        live = self._live(sid)
        live.get_task = current
        self._ensure_listener(rec, live)
        try:
            await self.buffers.serve_standalone(sid, last_event_id, stream, lambda: sid in self.live)
        finally:
            if self.live.get(sid) is live and live.get_task is current:
                live.get_task = None
                self._release(sid)

    def _ensure_listener(self, rec: SessionRecord, live: Live) -> None:
        if eras.is_modern(rec.upstream_version):
            return  # a 2026-07-28 server has no standalone stream
        if live.listener is None or live.listener.done():
            live.listener = asyncio.create_task(self._listen(rec))

    async def _listen(self, rec: SessionRecord) -> None:
        """This replica's standalone stream to the upstream, while a host GET or a completion needs it.

        Servers may close it at any time (SSE polling): reopened with a backoff that
        resets whenever a stream carried messages. What arrives goes to the session's
        buffer, so the host's GET stream gets it on whichever replica it is open.
        """
        failures = 0
        last_event_id: str | None = None
        while rec.session_id in self.live and not self.live[rec.session_id].idle:
            delivered = False
            retry_ms: int | None = None
            try:
                async with self.upstream.open_stream(
                    session_id=rec.upstream_session_id or "", protocol_version=rec.upstream_version,
                    last_event_id=last_event_id,
                ) as reply:
                    self._listener_ready(rec.session_id)
                    if reply.status == 405:
                        return
                    try:
                        async for upstream_msg in reply.messages:
                            delivered = True
                            for out in await self.run(rec, upstream_gate.from_upstream(
                                rec, rec.server, upstream_msg, self._standalone_context(rec.session_id)), None):
                                await self.publish(rec, out)
                    finally:
                        # SSE polling: the server may close at any time; reopen where it left off.
                        last_event_id, retry_ms = reply.last_event_id or last_event_id, reply.retry_ms
            except UpstreamSessionGone:
                self._listener_ready(rec.session_id)
                return
            except UpstreamFailure as exc:
                self._listener_ready(rec.session_id)
                log.info("stream.standalone_lost", server=self.server, session=rec.session_id, reason=exc.message)
            failures = 0 if delivered else failures + 1
            wait = retry_ms / 1000 if delivered and retry_ms is not None else 0.5 * 2**failures
            await asyncio.sleep(min(_LISTENER_MAX_BACKOFF, wait))

    def _notification_allowed(self, rec: SessionRecord) -> bool:
        """A token bucket per session on this replica: `max_notifications_per_second`, as burst too."""
        live = self.live.get(rec.session_id)
        if live is None:
            return True  # a 2026-07-28 call: one request's stream, bounded by that request
        rate = self.settings.max_notifications_per_second
        now = time.monotonic()
        live.notify_tokens = min(rate, live.notify_tokens + (now - live.notify_at) * rate)
        live.notify_at = now
        if live.notify_tokens >= 1:
            live.notify_tokens -= 1
            return True
        live.notify_dropped += 1
        if now - live.notify_logged >= 1.0:
            live.notify_logged = now
            self.dropped(rec, Dropped("upstream.notification_flood", "over max_notifications_per_second",
                                      {"dropped": live.notify_dropped}))
        return False

    def _listener_ready(self, sid: str) -> None:
        live = self.live.get(sid)
        if live is not None:
            live.listener_ready.set()

    def _standalone_context(self, sid: str) -> StreamContext:
        live = self.live.get(sid)
        tokens = frozenset(t for t in live.in_flight.values() if t) if live else frozenset()
        return StreamContext(progress_tokens=tokens)

    async def publish(self, rec: SessionRecord, msg: dict[str, Any]) -> None:
        """Into the session's buffer: the host's GET stream (any replica) is woken, or it waits there."""
        if not await self.buffers.publish(rec, msg):
            self.dropped(rec, Dropped("upstream.message_dropped", "cannot be re-encoded (nested too deeply)"))

    # -- running core commands -------------------------------------------------------------------

    async def run(self, rec: SessionRecord, commands: list[Command], via: HostStream | None) -> list[dict[str, Any]]:
        """Carry out commands; return the messages for the host on the stream being served."""
        to_host: list[dict[str, Any]] = []
        for c in commands:
            if isinstance(c, ToHost):
                if "method" in c.message and not self._notification_allowed(rec):
                    continue  # a server flooding notifications: the excess is dropped (logged once a second)
                to_host.append(c.message)
            elif isinstance(c, ToUpstream):
                await self._post_oneway(rec, c.message)
            elif isinstance(c, ForwardServerRequest):
                to_host.extend(await self._forward(rec, c))
            elif isinstance(c, CheckElicitation):
                to_host.extend(await self._police(rec, c, via))
            elif isinstance(c, CheckUrlRequired):
                to_host.append(await self.police_url_required(rec, c))
            elif isinstance(c, CheckInputRequired):
                if eras.is_modern(rec.host_version):
                    to_host.append(c.message)  # the modern-host path polices the round itself
                else:
                    self.dropped(rec, Dropped("upstream.result_refused", "input_required in a handshake-era session"))
                    to_host.append(jsonrpc_error(c.message["id"], UPSTREAM_FAILED,
                                                 f"server {self.server!r} sent a result this session cannot take"))
            elif isinstance(c, RouteCompletion):
                await self._route_completion(rec, c)
            elif isinstance(c, ForgetServerRequest):
                with contextlib.suppress(StateUnavailable):
                    if await self.store.drop_pending(rec.session_id, c.key):
                        to_host.append(c.message)
                        continue
                self.dropped(rec, Dropped("upstream.cancel_dropped", "cancels no request pending with the host"))
            elif isinstance(c, Dropped):
                self.dropped(rec, c)
        return to_host

    async def _forward(self, rec: SessionRecord, c: ForwardServerRequest) -> list[dict[str, Any]]:
        """Remember the request (any replica may get the answer), then it goes to the host."""
        try:
            encode(c.message)
        except orjson.JSONEncodeError:  # fails alone: the server learns it, nothing else is affected
            self.dropped(rec, Dropped("upstream.request_refused", "cannot be re-encoded (nested too deeply)"))
            await self._post_oneway(rec, jsonrpc_error(
                c.pending["id"], INVALID_PARAMS, "request cannot be relayed: JSON nested too deeply"))
            return []
        try:
            counted = rec.server if c.message.get("method") == "elicitation/create" else None
            stored = await self.store.put_pending(
                rec.session_id, host_side.pending_key(c.message["id"]), c.pending, self.settings.max_pending, counted
            )
        except StateUnavailable:
            stored = False
        if not stored:
            self.dropped(rec, Dropped("upstream.request_refused", "too many requests pending, or state unavailable"))
            await self._post_oneway(rec, jsonrpc_error(
                c.pending["id"], POLICY_UNAVAILABLE, "too many requests pending with the host, or state unavailable"))
            return []
        return [c.message]

    async def decide(
        self, rec: SessionRecord, params: dict[str, Any], offered: bool, *, register_owner: bool = True
    ) -> Decision | None:
        """The gate's decision, with the owner registered for an allowed URL-mode request.

        None when policy or state failed: the caller blocks (fail closed).
        """
        try:
            decision = await self.gate.decide(params, session=rec.session_id, user=rec.user, offered=offered)
            if register_owner and decision.params is not None and params.get("mode") == "url":
                key = self._owner_key(rec, decision.params["elicitationId"])
                await self.store.register_owner(key, Owner(rec.session_id, rec.user), self.settings.owner_ttl)
        except Exception as exc:  # fail closed: a policy or state failure never lets the request through
            log.error("elicitation.policy_failed", server=self.server, session=rec.session_id,
                      error_type=type(exc).__name__)
            return None
        self.metrics.record_decision(self.server, decision)
        return decision

    def _owner_key(self, rec: SessionRecord, elicitation_id: str) -> OwnerKey:
        # elicitationId is unique only per server session: namespace the bookkeeping, never the id.
        return OwnerKey(self.server, rec.upstream_session_id or rec.session_id, elicitation_id)

    async def _police(
        self, rec: SessionRecord, check: CheckElicitation, via: HostStream | None
    ) -> list[dict[str, Any]]:
        decision = await self.decide(rec, check.message["params"], check.offered)
        if decision is None or decision.params is None:
            await self._post_oneway(rec, refusal(check.message["id"], decision))
            return []
        if check.mode == "url":
            self._await_completion(rec, decision.params["elicitationId"], via)
        return await self._forward(rec, upstream_gate.deliver_elicitation(rec, check, decision.params))

    def _await_completion(self, rec: SessionRecord, elicitation_id: str, via: HostStream | None) -> None:
        """Keep an upstream standalone stream here until the completion arrives (or the owner TTL lapses)."""
        live = self._live(rec.session_id)
        if via is not None:
            live.request_streams[elicitation_id] = via
        live.awaiting_completions += 1
        self._ensure_listener(rec, live)

        async def expire() -> None:
            await asyncio.sleep(self.settings.owner_ttl)
            self._completion_done(rec.session_id, elicitation_id)

        self.buffers.spawn(expire(), name=f"owner:{rec.session_id}:{elicitation_id}")

    def _completion_done(self, sid: str, elicitation_id: str) -> None:
        live = self.live.get(sid)
        if live is not None and live.awaiting_completions > 0:
            live.awaiting_completions -= 1
            live.request_streams.pop(elicitation_id, None)
            self._release(sid)

    async def police_url_required(self, rec: SessionRecord, check: CheckUrlRequired) -> dict[str, Any]:
        """-32042: every entry is judged as URL mode; owners are registered for the kept ones."""
        kept: list[dict[str, Any]] = []
        for entry in check.entries:
            params = upstream_gate.url_entry(entry)
            if params is None:
                continue
            decision = await self.decide(rec, params, "url" in rec.offered)
            if decision is not None and decision.params is not None:
                kept.append(decision.params)
                self._await_completion(rec, decision.params["elicitationId"], None)
        return upstream_gate.url_required_outcome(check, kept).message

    async def _route_completion(self, rec: SessionRecord, c: RouteCompletion) -> None:
        """Only the session (and user) that received this elicitation gets its completion, once."""
        try:
            owner = await self.store.complete(self._owner_key(rec, c.elicitation_id), self.settings.completion_grace)
        except StateUnavailable:
            owner, reason = None, "state unavailable"
        else:
            reason = "unknown, forged or already completed elicitationId"
        if owner is None or owner.host_session != rec.session_id or owner.user != rec.user:
            self.dropped(rec, Dropped("elicitation.complete_dropped", reason, {"elicitation_id": c.elicitation_id}))
            return
        live = self.live.get(rec.session_id)
        stream = live.request_streams.get(c.elicitation_id) if live else None
        route = "buffered"
        if stream is not None:
            try:
                await stream.write(encode(c.message), None)
                route = "request_stream"
            except HostGone:
                stream = None
        if stream is None:
            await self.publish(rec, c.message)
        self._completion_done(rec.session_id, c.elicitation_id)
        log.info("elicitation.completed", server=self.server, session=rec.session_id,
                 elicitation_id=c.elicitation_id, route=route)

    # -- helpers --------------------------------------------------------------------------------------

    def dropped(self, rec: SessionRecord, c: Dropped) -> None:
        self.metrics.dropped.labels(self.server, c.event).inc()
        log.warning(c.event, server=self.server, session=rec.session_id, reason=c.reason, **c.fields)

    def request_done(self, method: str, started: float, outcome: str, host_version: str | None = None) -> None:
        elapsed = time.monotonic() - started
        era = era_label(host_version)
        children = self._request_metrics.get((method, era, outcome))
        if children is None:
            children = self._request_metrics[(method, era, outcome)] = (
                self.metrics.requests.labels(self.server, method, era, outcome),
                self.metrics.request_seconds.labels(self.server, method, era))
        children[0].inc()
        children[1].observe(elapsed)
        tracing.annotate(method=method, outcome=outcome, era=era)
        if outcome == "ok":
            # Thinned evenly, not at random: 0.25 writes exactly every fourth line. The metrics above count all.
            self._ok_lines += self.settings.request_lines
            if self._ok_lines < 1.0:
                return
            self._ok_lines -= 1.0
        log.info("request", server=self.server, method=method, duration_ms=round(elapsed * 1000, 2), outcome=outcome)




def _outcome_of(call: asyncio.Future[str]) -> str:
    """A finished call's outcome; one that was cancelled or failed after its answer went out counts as ok."""
    if call.cancelled() or call.exception() is not None:
        return "ok"
    return call.result()


async def _answer_quietly(responder: Responder, body: Any, status: int, call: Call) -> None:
    """An error for the host: on its stream if one started (or into the store if it left), else as JSON."""
    if call.relay is not None:
        await call.relay._send(body)
        return
    with contextlib.suppress(ConnectionResetError, RuntimeError):
        await responder.json(body, status)
