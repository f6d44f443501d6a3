"""An SDK server that uses SSE polling (2025-11-25): an event store, a short `retry`, and tools that close
their request's SSE stream before answering, as the conformance scenario `server-sse-polling` does.

Run: python polling_server.py PORT
"""

from __future__ import annotations

import asyncio
import itertools
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage
from pydantic import BaseModel

RETRY_MS = 50

mcp = MCPServer("polling")


class Name(BaseModel):
    name: str


class MemoryEventStore(EventStore):
    """Every event of every stream, in order; replay sends the events of the same stream after the given id."""

    def __init__(self) -> None:
        self._events: list[tuple[EventId, StreamId, JSONRPCMessage | None]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{stream_id}:{next(self._ids)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        index = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for eid, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream_id


@mcp.tool()
async def poll_then_answer(text: str, ctx: Context) -> str:
    """Progress, close the stream, more progress while the client is away, then the answer."""
    await ctx.report_progress(0.25, 1.0, "started")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    await ctx.report_progress(0.75, 1.0, "sent while the client was away")
    return text


@mcp.tool()
async def poll_then_ask(ctx: Context) -> str:
    """Close the stream first, then ask the client a question: it arrives on the resumed stream.
    The pause lets the SDK write its priming event (the id to resume from) before the close: closed
    earlier, the stream ends with no id at all and there is nothing to resume (an SDK race)."""
    await asyncio.sleep(0.1)
    await ctx.close_sse_stream()
    result = await ctx.elicit("What is your name?", Name)
    return result.data.name if result.action == "accept" else result.action  # type: ignore[union-attr]


_background: set[asyncio.Task[None]] = set()


@mcp.tool()
async def standalone_poll(ctx: Context) -> str:
    """On the standalone stream: a notice, close the stream, then (later) a second notice to be replayed."""
    session = ctx.request_context.session
    await session.send_elicit_complete("first")
    await asyncio.sleep(0.05)
    await ctx.close_standalone_sse_stream()

    async def later() -> None:
        await asyncio.sleep(0.1)
        await session.send_elicit_complete("second")

    task = asyncio.create_task(later())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return "ok"


def main() -> None:
    port = int(sys.argv[1])
    app = mcp.streamable_http_app(event_store=MemoryEventStore(), retry_interval=RETRY_MS)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
