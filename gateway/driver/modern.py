"""2026-07-28 on either hop, and translation between the eras.

Four pairings, one gate:
- modern host, modern server: the request goes up with the host's capabilities narrowed to
  what policy allows; an `input_required` result comes back with only the input requests
  policy allows (each judged like the `elicitation/create` it stands for); the host's retry
  gets `decline` merged in for blocked ones and loses answers to keys it was never sent.
- modern host, handshake-era server: the gateway opens an upstream session for the call; a
  server's `elicitation/create` becomes an `input_required` result whose `requestState` the
  gateway seals; the upstream call is held open (bounded by `elicitation_timeout_seconds`)
  and the retry, on any replica, answers it (`driver/translated_call.py`).
- handshake-era host, modern server: requests go up with the `_meta` envelope; an
  `input_required` result becomes `elicitation/create` requests on the call's stream, the
  host's answers (any replica) are collected, and the gateway retries with a new id.
- handshake-era host and server: the session driver, unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from gateway.core import eras, input_rounds, upstream_gate
from gateway.core.capabilities import host_elicitation_modes, offered_modes
from gateway.core.commands import Dropped
from gateway.core.input_rounds import ELICIT, InputAsk, RoundRecord
from gateway.core.messages import id_key
from gateway.core.raw_json import encode
from gateway.core.session_record import SessionRecord
from gateway.driver.call_clock import timeout_failure
from gateway.driver.contracts import HostGone, Responder
from gateway.driver.host_streams import ModernReply
from gateway.driver.services import DriverServices
from gateway.driver.translated_call import TranslatedCalls
from gateway.errors import (
    ANSWER_REJECTED,
    ELICITATION_BLOCKED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UPSTREAM_STREAM_LOST,
    UpstreamFailure,
    error_to_wire,
    jsonrpc_error,
)
from gateway.logs import get_logger
from gateway.metrics import method_label
from gateway.state.errors import StateUnavailable

log = get_logger("gateway.modern")

MAX_ROUNDS = 10
ANONYMOUS = "anonymous"


class ModernCalls:
    def __init__(self, driver: DriverServices, translated: TranslatedCalls) -> None:
        self.d = driver
        self.translated = translated

    # -- a 2026-07-28 host ---------------------------------------------------------------------------

    async def host_request(
        self, msg: dict[str, Any], responder: Responder, user: str | None, headers: Mapping[str, str]
    ) -> None:
        """A request from a host speaking 2026-07-28: no session; its envelope says who it is."""
        started = time.monotonic()
        outcome = "error"
        try:
            await self._host_request(msg, responder, user, headers)
            outcome = "ok"
        finally:
            self.d.request_done(method_label(msg["method"]), started, outcome, eras.MODERN_VERSION)

    async def _host_request(
        self, msg: dict[str, Any], responder: Responder, user: str | None, headers: Mapping[str, str]
    ) -> None:
        rid = msg["id"]
        problem = eras.envelope_problem(msg)
        if problem is not None:
            await responder.json(jsonrpc_error(rid, INVALID_PARAMS, problem), 400)
            return
        mismatch = eras.header_mismatch(msg, headers)
        if mismatch is not None:
            await responder.json(jsonrpc_error(rid, eras.HEADER_MISMATCH, mismatch), 400)
            return
        version = eras.envelope_version(msg)
        if not eras.is_modern(version):
            await responder.json(jsonrpc_error(rid, eras.UNSUPPORTED_VERSION, "Unsupported protocol version", {
                "supported": list(eras.MODERN_VERSIONS), "requested": version}), 400)
            return
        if msg["method"] in eras.HANDSHAKE_ONLY_METHODS:
            await responder.json(jsonrpc_error(rid, METHOD_NOT_FOUND, "Method not found", msg["method"]), 404)
            return
        upstream_version = await self.d.profiles.version_for(eras.MODERN_VERSION)
        profile = await self.d.profiles.describe()
        if msg["method"] == "server/discover":
            await responder.json({"jsonrpc": "2.0", "id": rid, "result": eras.discover_result(
                profile.capabilities, profile.server_info, profile.instructions)})
            return
        caps = eras.request_meta(msg)[eras.META_CAPABILITIES]
        offered = offered_modes(host_elicitation_modes(caps), tuple(self.d.gate.policy.modes))
        # A modern host has no session: the call's token names it in logs and state.
        rec = SessionRecord(f"call-{uuid.uuid4().hex[:16]}", self.d.server, user or ANONYMOUS, eras.MODERN_VERSION,
                            upstream_version, offered, None, caps, eras.request_meta(msg).get(eras.META_CLIENT_INFO))
        if eras.is_modern(upstream_version):
            await self._modern_to_modern(rec, msg, responder)
        else:
            await self.translated.call(rec, msg, responder)

    async def _modern_to_modern(self, rec: SessionRecord, msg: dict[str, Any], responder: Responder) -> None:
        rid = msg["id"]
        out = msg
        answers, state = input_rounds.retry_params(msg)
        if answers is not None or state is not None:
            merged = await self._merge_retry(rec, msg, answers, state)
            if isinstance(merged, str):
                await responder.json(jsonrpc_error(rid, ANSWER_REJECTED, merged), 400)
                return
            out = merged
        out = eras.with_envelope(out, eras.narrow_capabilities(rec.host_capabilities, rec.offered), rec.client_info)
        reply_to_host = ModernReply(responder)
        try:
            # One round is one upstream request, and no person is waited for inside it (the host answers
            # between rounds, in its retry): the request timeout bounds the round as a whole.
            async with asyncio.timeout(self.d.settings.request_timeout), self.d.upstream.post(
                    encode(out), session_id=None, protocol_version=eras.MODERN_VERSION,
                    headers=eras.routing_headers(out)) as reply:
                async for upstream_msg in reply.messages:
                    commands = self.d.classify(rec, upstream_msg, upstream_gate.serving(msg))
                    for host_msg in await self.d.run(rec, commands, reply_to_host.stream):
                        if "method" in host_msg:  # progress on the way: the reply becomes a stream
                            await reply_to_host.notify(host_msg)
                            continue
                        host_msg = await self._police_result(rec, msg, host_msg)
                        await reply_to_host.answer(host_msg, _status_of(host_msg))
                        return
            await reply_to_host.answer(jsonrpc_error(
                rid, UPSTREAM_STREAM_LOST, f"server {self.d.server!r} closed the stream without answering"))
        except UpstreamFailure as exc:
            status, body = error_to_wire(exc, rid)
            with contextlib.suppress(HostGone):
                await reply_to_host.answer(body, status)
        except HostGone:
            return
        except TimeoutError:  # closing the request cancelled it upstream (2026-07-28 has no notification for it)
            log.warning("request.timed_out", server=self.d.server, session=rec.session_id, reason="request_timeout",
                        pending_with_host=0)
            status, body = error_to_wire(timeout_failure(self.d.server, "request_timeout", self.d.settings), rid)
            with contextlib.suppress(HostGone):
                await reply_to_host.answer(body, status)

    async def _police_result(
        self, rec: SessionRecord, request: dict[str, Any], answer: dict[str, Any]
    ) -> dict[str, Any]:
        """An input_required result with only what policy allows; its round remembered for the retry."""
        result = answer.get("result")
        if not eras.is_input_required(result):
            return answer
        assert isinstance(result, dict)
        kept, record = await self.police_round(rec, result)
        key = input_rounds.round_key(self.d.server, result.get("requestState"), request)
        try:
            await self.d.store.put_round(key, record.to_json(), self.d.settings.elicitation_timeout)
        except StateUnavailable:
            return jsonrpc_error(answer["id"], -32052, "gateway state unavailable: input requests not relayed")
        if not kept and not result.get("requestState"):
            # Nothing left to ask and no state to carry a retry: the call cannot go on.
            return jsonrpc_error(answer["id"], ELICITATION_BLOCKED,
                                 f"server {self.d.server!r} asked only for input that gateway policy refused")
        return {**answer, "result": input_rounds.kept_result(result, kept)}

    async def _merge_retry(
        self, rec: SessionRecord, msg: dict[str, Any], answers: Any, state: Any
    ) -> dict[str, Any] | str:
        """The retry as the server gets it, or why the host's answer is refused."""
        raw = await self.d.store.get_round(input_rounds.round_key(self.d.server, state, msg))
        record = RoundRecord.from_json(raw) if raw is not None else RoundRecord()  # unknown round: no answer passes
        merged, dropped, to_check = input_rounds.merged_responses(answers, record)
        if dropped:
            self.d.dropped(rec, Dropped("host.answer_dropped", "answers for input requests never sent to this host",
                                         {"keys": len(dropped)}))
        for key, schema in to_check:
            answer = {"id": key, "result": merged[key]}
            checked, error = self.d.gate.check_answer(answer, schema, session=rec.session_id)
            if error is not None:
                return error
            merged[key] = checked["result"]
        return input_rounds.with_responses(msg, merged)

    # -- one round of input requests, judged ----------------------------------------------------------

    async def police_round(self, rec: SessionRecord, result: dict[str, Any]) -> tuple[dict[str, Any], RoundRecord]:
        """(the input requests the host may see, the record of what was sent and blocked)."""
        asks, malformed = input_rounds.asks_of(result)
        kept: dict[str, Any] = {}
        record = RoundRecord()
        if malformed:
            self.d.dropped(rec, Dropped("upstream.input_request_dropped", "not a {method, params} object",
                                         {"keys": len(malformed)}))
        for ask in asks:
            request = await self.judge(rec, ask)
            if request is None:
                if ask.method == ELICIT:
                    record.blocked.append(ask.key)
                continue
            kept[ask.key] = request
            schema = request["params"].get("requestedSchema") if isinstance(request.get("params"), dict) else None
            record.sent[ask.key] = {"m": ask.method, **({"schema": schema} if isinstance(schema, dict) else {})}
        return kept, record

    async def judge(self, rec: SessionRecord, ask: InputAsk) -> dict[str, Any] | None:
        """The input request as the host may see it, or None if it must not reach the host."""
        if ask.method == ELICIT:
            params = ask.params
            if not isinstance(params, dict):
                self.d.dropped(rec, Dropped("elicitation.invalid", "params not an object"))
                return None
            mode = input_rounds.elicitation_mode(params)
            # 2026 URL requests carry no elicitationId; policy judges them as the URL request they are.
            probe = {**params, "elicitationId": f"input:{ask.key}"} if mode == "url" else params
            decision = await self.d.decide(rec, probe, mode in rec.offered, register_owner=False)
            if decision is None or decision.params is None:
                return None
            allowed = dict(decision.params)
            if mode == "url" and "elicitationId" not in params:
                allowed.pop("elicitationId", None)
            return {"method": ELICIT, "params": allowed}
        if ask.method in ("sampling/createMessage", "roots/list"):
            capability = "sampling" if ask.method.startswith("sampling") else "roots"
            if isinstance(rec.host_capabilities, dict) and capability in rec.host_capabilities:
                return {"method": ask.method, "params": ask.params}
            self.d.dropped(rec, Dropped("upstream.input_request_dropped", f"host did not declare {capability}"))
            return None
        self.d.dropped(rec, Dropped("upstream.input_request_dropped", "unknown input request method",
                                     {"method": ask.method[:60]}))
        return None

    # -- a handshake-era host, a 2026-07-28 server ---------------------------------------------------

    async def rounds_for_legacy_host(
        self, rec: SessionRecord, msg: dict[str, Any], emit: Any, call_token: str
    ) -> AsyncIterator[Any]:
        """Upstream messages of a call to a modern server, across its rounds, for a handshake-era host.

        `input_required` results never come out of here: their requests are judged, sent to the
        host as `elicitation/create` (or sampling, roots) through `emit`, the answers collected
        from the store (any replica may take them), and the call retried with a new id.
        """
        caps = eras.narrow_capabilities(rec.host_capabilities, rec.offered)
        out = eras.with_envelope(msg, caps, rec.client_info)
        ids = itertools.count(1)
        consented: list[str] = []  # URL-mode asks the host accepted: their completion follows the call's answer
        for _ in range(MAX_ROUNDS):
            final: dict[str, Any] | None = None
            async with self.d.upstream.post(encode(out), session_id=None, protocol_version=eras.MODERN_VERSION,
                                            headers=eras.routing_headers(out)) as reply:
                async for upstream_msg in reply.messages:
                    if isinstance(upstream_msg, dict) and "method" not in upstream_msg and eras.is_input_required(
                            upstream_msg.get("result")):
                        final = upstream_msg
                        break
                    if isinstance(upstream_msg, dict) and "method" not in upstream_msg:
                        upstream_msg = {**upstream_msg, "id": msg["id"]}  # a retry's answer is the host's call's
                        for elicitation_id in consented:
                            await emit({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                                        "params": {"elicitationId": elicitation_id}})
                        consented.clear()
                    yield upstream_msg
            if final is None:
                return
            result = final["result"]
            kept, record = await self.police_round(rec, result)
            answers = await self._ask_legacy_host(rec, kept, record, emit, call_token)
            if answers is not None:
                consented += [f"{call_token}.{n}" for n, (key, request) in enumerate(kept.items())
                              if _is_url(request) and (answers.get(key) or {}).get("action") == "accept"]
            if answers is None:
                yield jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST, "no answer from the host in time; call cancelled")
                return
            merged, _, _ = input_rounds.merged_responses(answers, record)
            retry = {**msg, "id": f"{msg['id']}.retry{next(ids)}"}
            retry = input_rounds.with_responses(retry, merged)
            if "requestState" in result:
                retry["params"] = {**retry["params"], "requestState": result["requestState"]}
            out = eras.with_envelope(retry, caps, rec.client_info)
        yield jsonrpc_error(msg["id"], UPSTREAM_STREAM_LOST, f"server {self.d.server!r} asked for more than "
                            f"{MAX_ROUNDS} rounds of input")

    async def _ask_legacy_host(
        self, rec: SessionRecord, kept: dict[str, Any], record: RoundRecord, emit: Any, call_token: str
    ) -> dict[str, Any] | None:
        """Send the kept input requests to the host as requests; the answers by key, or None on timeout."""
        buffer = f"{rec.session_id}/answers/{call_token}"
        wanted: dict[str, str] = {}
        for n, (key, request) in enumerate(kept.items()):
            host_id = f"input.{call_token}.{n}"
            params = request.get("params") if isinstance(request.get("params"), dict) else {}
            if request["method"] == ELICIT and params.get("mode") == "url":
                params = {**params, "elicitationId": f"{call_token}.{n}"}  # 2025-11-25 hosts need one
            if request["method"] == ELICIT and params.get("mode") == "form" and rec.host_version < "2025-11-25":
                params = {k: v for k, v in params.items() if k != "mode"}
            pending = {"id": host_id, "m": request["method"], "up": self.d.server, "tr": buffer, "k": key}
            schema = record.sent.get(key, {}).get("schema")
            if schema is not None:
                pending["schema"] = schema
            stored = await self.d.store.put_pending(
                rec.session_id, id_key(host_id), pending, self.d.settings.max_pending,
                self.d.server if request["method"] == ELICIT else None)
            if not stored:
                if request["method"] == ELICIT:
                    record.blocked.append(key)  # over the cap: declined for the host
                continue
            wanted[key] = host_id
            await emit({"jsonrpc": "2.0", "id": host_id, "method": request["method"], "params": params})
        answers: dict[str, Any] = {}
        if not wanted:
            return answers
        try:
            async with self.d.store.subscribe(buffer) as wake:
                deadline = asyncio.get_running_loop().time() + self.d.settings.elicitation_timeout
                while True:
                    wake.clear()
                    for _, payload in await self.d.store.events_after(buffer, None):
                        item = orjson.loads(payload)
                        if item.get("k") in wanted:
                            answers[item["k"]] = item.get("r")
                    if set(wanted) <= set(answers):
                        return answers
                    left = deadline - asyncio.get_running_loop().time()
                    if left <= 0:
                        return None
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), min(left, self.d.settings.keepalive))
        finally:
            with contextlib.suppress(StateUnavailable):
                await self.d.store.drop_events(buffer)


def _is_url(request: dict[str, Any]) -> bool:
    params = request.get("params")
    return request.get("method") == ELICIT and isinstance(params, dict) and params.get("mode") == "url"


def _status_of(answer: dict[str, Any]) -> int:
    """HTTP status for a modern reply, as the SDK server sets it for its own errors."""
    error = answer.get("error")
    if not isinstance(error, dict):
        return 200
    code = error.get("code")
    if code == METHOD_NOT_FOUND:
        return 404
    if code in (-32700, -32600, INVALID_PARAMS, eras.HEADER_MISMATCH, eras.MISSING_CAPABILITY,
                eras.UNSUPPORTED_VERSION):
        return 400
    return 200
