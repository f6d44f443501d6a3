"""StdioUpstream with small scripted children: no child outlives a failed initialize, every queue is bounded."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

from gateway.errors import UpstreamFailure
from gateway.upstream.stdio import StdioUpstream

pytestmark = pytest.mark.anyio

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}'


def child(code: str, **kw: Any) -> StdioUpstream:
    return StdioUpstream("kid", sys.executable, ["-c", code], {}, None, **kw)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # Still in the process table: only a zombie would be acceptable, and asyncio reaps its children.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[1].startswith("Z")


async def test_initialize_that_fails_because_the_child_exits_leaves_no_child() -> None:
    up = child("import sys; sys.stdin.readline(); sys.exit(3)")
    pid = None
    with pytest.raises(UpstreamFailure, match="process exited"):
        async with up.post(INIT, session_id=None, protocol_version=None) as reply:
            pid = up.process_id(reply.session_id or "")
            async for _ in reply.messages:
                pass
    assert pid is not None and gone(pid)
    assert up.session_ids == []


async def test_initialize_the_caller_gives_up_on_leaves_no_child() -> None:
    up = child("import time; time.sleep(60)")
    pids: list[int] = []

    async def first_post() -> None:
        async with up.post(INIT, session_id=None, protocol_version=None) as reply:
            pid = up.process_id(reply.session_id or "")
            assert pid is not None
            pids.append(pid)
            async for _ in reply.messages:
                pass

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await first_post()
    assert len(pids) == 1 and gone(pids[0])
    assert up.session_ids == []


async def test_initialize_answered_with_an_error_keeps_the_child_until_end_session() -> None:
    code = (
        "import sys\n"
        "sys.stdin.readline()\n"
        "print('{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"bad version\"}}', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    up = child(code)
    async with up.post(INIT, session_id=None, protocol_version=None) as reply:
        messages = [m async for m in reply.messages]
    assert messages[0]["error"]["code"] == -32602
    assert reply.session_id is not None
    pid = up.process_id(reply.session_id)
    assert pid is not None and not gone(pid)
    await up.end_session(session_id=reply.session_id, protocol_version=None)
    assert gone(pid) and up.session_ids == []


FLOOD = (
    "import sys\n"
    "sys.stdin.readline()\n"
    "for i in range(100000):\n"
    "    sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":%d}}\\n' % i)\n"
    "sys.stdout.flush()\n"
    "import time; time.sleep(60)\n"
)


async def test_bound_a_child_that_floods_an_unread_stream_is_cut_off() -> None:
    """Tried: 100000 notifications on a request stream nobody reads; queue 10, grace 0.2 s."""
    up = child(FLOOD, max_queued=10, flood_grace=0.2)
    async with up.post(INIT, session_id=None, protocol_version=None) as reply:
        pid = up.process_id(reply.session_id or "")
        assert pid is not None
        await asyncio.sleep(0.6)  # read nothing for longer than the grace time
        got = 0
        with pytest.raises(UpstreamFailure, match=r"flooded: more than 10 messages stayed unread for 0\.2s"):
            async for _ in reply.messages:
                got += 1
    assert got <= 10
    assert gone(pid) and up.session_ids == []


async def test_bound_backlog_keeps_the_newest_messages_when_no_stream_is_open() -> None:
    """Tried: 1000 notifications while no stream is open; the standalone stream later gets the newest 256."""
    code = (
        "import sys\n"
        "sys.stdin.readline()\n"
        "print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}', flush=True)\n"
        "for i in range(1000):\n"
        "    sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":%d}}\\n' % i)\n"
        "sys.stdout.flush()\n"
        "import time; time.sleep(60)\n"
    )
    up = child(code)
    try:
        async with up.post(INIT, session_id=None, protocol_version=None) as reply:
            assert [m async for m in reply.messages] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
        sid = reply.session_id
        assert sid is not None
        session = up.session(sid)  # test-only peek
        assert session is not None
        backlog = session.channel.demux.backlog  # wait until the reader has seen all 1000
        async with asyncio.timeout(5):
            while not (backlog and backlog[-1]["params"]["i"] == 999):
                await asyncio.sleep(0.02)
        assert len(backlog) == 256
        async with up.open_stream(session_id=sid, protocol_version=None, last_event_id="ignored") as stream:
            async with asyncio.timeout(5):
                first = await anext(stream.messages)
        assert first["params"]["i"] == 1000 - 256
    finally:
        await up.close()


async def test_bound_a_line_over_the_limit_stops_the_child() -> None:
    """Tried: a 5000-byte line on stdout with a 1024-byte line limit."""
    code = "import sys\nsys.stdin.readline()\nprint('x' * 5000, flush=True)\nimport time; time.sleep(60)\n"
    up = child(code, max_line_bytes=1024)
    pid = None
    with pytest.raises(UpstreamFailure, match="wrote a line over 1024 bytes"):
        async with up.post(INIT, session_id=None, protocol_version=None) as reply:
            pid = up.process_id(reply.session_id or "")
            async for _ in reply.messages:
                pass
    assert pid is not None and gone(pid)


async def test_close_stops_every_child() -> None:
    code = "import sys\nsys.stdin.readline()\nprint('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}', flush=True)\nsys.stdin.readline()\n"
    up = child(code)
    pids = []
    for _ in range(3):
        async with up.post(INIT, session_id=None, protocol_version=None) as reply:
            [m async for m in reply.messages]
        pids.append(up.process_id(reply.session_id or ""))
    await up.close()
    assert all(p is not None and gone(p) for p in pids) and up.session_ids == []
