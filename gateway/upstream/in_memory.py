"""An upstream with no transport, for tests: a handler callable plays the server (like httpx's MockTransport).

    async def handler(call: UpstreamCall) -> UpstreamResponse:
        if call.verb == "POST" and call.body["method"] == "initialize":
            return JsonReply({"jsonrpc": "2.0", "id": call.body["id"], "result": {...}}, session_id="s1")
        return Status(202)

    upstream = InMemoryUpstream("files", handler)

The handler gets each POST (with its parsed body), GET (standalone stream or a
resumption, with `last_event_id`) and DELETE, and returns one of:

- `JsonReply(message_or_list, session_id=None, status=200)`: one JSON body;
- `SseReply(events, session_id=None, then="end")`: a stream; `events` is an
  iterable or async iterable of messages (dicts) and `Event`s (a message
  with an id and/or retry; a `Event` with no message is a priming event).
  `then="break"` makes the stream break after the last event instead of ending;
- `Status(code, session_id=None)`: 202 (accepted, no messages), 404 (session
  gone when a session id was sent), 405 (a GET the server does not offer),
  any other code >= 400 (the server failed);
- or it raises: `UpstreamFailure` as is, `OSError`/`TimeoutError` as
  "unreachable", anything else propagates (a bug in the test).

A POST's stream that ends or breaks before a JSON-RPC response, after an event
with an id, is resumed as `StreamableHttpUpstream` resumes it: the handler gets a
GET with `last_event_id` (after the `ResumePolicy` wait, default none here).
Every call is recorded in `calls`; `open_replies` counts replies whose context
is still open (a test can check that leaving early closed them).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from gateway.core.raw_json import parse
from gateway.errors import (
    UPSTREAM_FAILED,
    UPSTREAM_STREAM_LOST,
    UPSTREAM_UNREACHABLE,
    UpstreamFailure,
    UpstreamSessionGone,
)
from gateway.upstream.connector import UpstreamReply, no_messages
from gateway.upstream.resume import ResumePolicy, resume_refused

Verb = Literal["POST", "GET", "DELETE"]


@dataclass(frozen=True)
class UpstreamCall:
    verb: Verb
    body: Any
    """The parsed JSON of a POST; None for GET and DELETE."""
    session_id: str | None
    protocol_version: str | None
    last_event_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    message: Any = None
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True)
class JsonReply:
    messages: Any
    session_id: str | None = None
    status: int = 200


@dataclass(frozen=True)
class SseReply:
    events: Iterable[Any] | AsyncIterable[Any]
    session_id: str | None = None
    then: Literal["end", "break"] = "end"


@dataclass(frozen=True)
class Status:
    code: int
    session_id: str | None = None


UpstreamResponse = JsonReply | SseReply | Status
Handler = Callable[[UpstreamCall], "UpstreamResponse | Awaitable[UpstreamResponse]"]


@dataclass
class InMemoryUpstream:
    name: str
    handler: Handler
    resume: ResumePolicy = field(default_factory=lambda: ResumePolicy(default_retry_seconds=0))
    calls: list[UpstreamCall] = field(default_factory=list)
    open_replies: int = 0
    started: bool = False

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.started = False

    async def _call(self, call: UpstreamCall) -> UpstreamResponse:
        self.calls.append(call)
        try:
            answer = self.handler(call)
            if inspect.isawaitable(answer):
                answer = await answer
        except UpstreamFailure:
            raise
        except (OSError, TimeoutError) as exc:
            raise UpstreamFailure(
                UPSTREAM_UNREACHABLE, f"server {self.name!r} is unreachable ({type(exc).__name__})"
            ) from None
        return answer

    @asynccontextmanager
    async def post(
        self, body: bytes, *, session_id: str | None, protocol_version: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[UpstreamReply]:
        call = UpstreamCall("POST", orjson.loads(body), session_id, protocol_version, headers=dict(headers or {}))
        async with self._reply(call, await self._call(call), resumable=True) as reply:
            yield reply

    @asynccontextmanager
    async def open_stream(
        self, *, session_id: str, protocol_version: str | None, last_event_id: str | None = None
    ) -> AsyncIterator[UpstreamReply]:
        call = UpstreamCall("GET", None, session_id, protocol_version, last_event_id)
        answer = await self._call(call)
        if isinstance(answer, Status) and answer.code == 405:
            yield UpstreamReply(405, session_id, False, no_messages())
            return
        async with self._reply(call, answer, resumable=False) as reply:
            yield reply

    async def end_session(self, *, session_id: str, protocol_version: str | None) -> None:
        await self._call(UpstreamCall("DELETE", None, session_id, protocol_version))

    @asynccontextmanager
    async def _reply(self, call: UpstreamCall, answer: UpstreamResponse, *, resumable: bool) -> AsyncIterator[
        UpstreamReply
    ]:
        sid = answer.session_id or call.session_id
        if isinstance(answer, Status):
            if answer.code == 404 and call.session_id is not None:
                raise UpstreamSessionGone()
            if answer.code == 202:
                reply = UpstreamReply(202, sid, False, no_messages())
            else:
                raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.name!r} answered HTTP {answer.code}")
        elif isinstance(answer, JsonReply):
            reply = UpstreamReply(answer.status, sid, False, _listed(answer.messages))
        else:
            reply = UpstreamReply(200, sid, True, no_messages())
            reply.messages = self._stream(reply, call, answer, resumable)
        self.open_replies += 1
        try:
            yield reply
        finally:
            self.open_replies -= 1
            messages = reply.messages
            if hasattr(messages, "aclose"):
                await messages.aclose()

    async def _stream(
        self, reply: UpstreamReply, call: UpstreamCall, answer: SseReply, resumable: bool
    ) -> AsyncIterator[Any]:
        answered = resumed = False
        failures = 0
        while True:
            before = reply.last_event_id
            events = _events(answer.events)
            try:
                async for item in events:
                    event = item if isinstance(item, Event) else Event(item)
                    if event.id is not None:
                        reply.last_event_id = event.id
                    if event.retry is not None:
                        reply.retry_ms = event.retry
                    if event.message is None:
                        continue
                    answered = answered or _is_response(event.message)
                    yield parse(orjson.dumps(event.message))
                    if answered and resumed:
                        return
            finally:
                if hasattr(events, "aclose"):
                    await events.aclose()
            if resumed and reply.last_event_id != before:
                failures = 0
            if answered:
                return
            if not resumable or reply.last_event_id is None or self.resume.max_attempts == 0:
                if answer.then == "break":
                    raise UpstreamFailure(UPSTREAM_STREAM_LOST, f"stream from server {self.name!r} broke")
                return
            answer, failures = await self._reopen(reply, call, failures)
            resumed = True

    async def _reopen(self, reply: UpstreamReply, call: UpstreamCall, failures: int) -> tuple[SseReply, int]:
        while True:
            self.resume.check_budget(self.name, reply.resumed, failures)
            await asyncio.sleep(self.resume.delay(reply.retry_ms))
            reply.resumed += 1
            get = UpstreamCall("GET", None, reply.session_id, call.protocol_version, reply.last_event_id)
            try:
                answer = await self._call(get)
            except UpstreamSessionGone:
                raise
            except UpstreamFailure:
                failures += 1
                continue
            if isinstance(answer, SseReply):
                return answer, failures + 1
            if isinstance(answer, Status) and answer.code == 404:
                raise UpstreamSessionGone()
            if isinstance(answer, Status) and answer.code == 405:
                raise resume_refused(self.name)
            failures += 1


def _is_response(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


async def _listed(messages: Any) -> AsyncIterator[Any]:
    for message in messages if isinstance(messages, list) else [messages]:
        yield parse(orjson.dumps(message))


def _events(source: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[Any]:
    if isinstance(source, AsyncIterable):
        return aiter(source)

    async def from_sync() -> AsyncIterator[Any]:
        for item in source:
            yield item

    return from_sync()
