"""StdioUpstream supervision with small scripted children: a crash fails the call in flight at once, the process
is restarted with backoff and initialized again, later calls work; bounded attempts; no child left behind."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure, UpstreamSessionGone
from gateway.upstream.restart import RestartPolicy
from gateway.upstream.stdio import StdioUpstream

pytestmark = pytest.mark.anyio

INIT = b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
FAST = RestartPolicy(backoff_base_seconds=0.01, backoff_max_seconds=0.05, max_attempts=3)

# Answers initialize (echoing its version) and `echo` with its pid; exits on `crash`. With a marker path as
# argv[1], `crash` leaves the marker and every later process exits at once (a server that cannot come back).
SERVER = r"""
import json, os, sys
marker = sys.argv[1] if len(sys.argv) > 1 else None
if marker and os.path.exists(marker):
    sys.exit(2)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        out = {"protocolVersion": msg["params"]["protocolVersion"]}
    elif msg.get("method") == "tools/call" and msg["params"]["name"] == "crash":
        sys.stderr.write("crashing now\n"); sys.stderr.flush()
        if marker:
            open(marker, "w").close()
        os._exit(1)
    elif msg.get("method") == "tools/call":
        out = {"pid": os.getpid(), "seen": msg.get("method")}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": out}), flush=True)
"""


def child(*args: str, **kw: Any) -> StdioUpstream:
    return StdioUpstream("kid", sys.executable, ["-c", SERVER, *args], {}, None, **kw)


def call(rid: int, name: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s"}}' % (rid, name.encode())


async def initialize(up: StdioUpstream) -> str:
    async with up.post(INIT, session_id=None, protocol_version=None) as reply:
        [answer] = [m async for m in reply.messages]
    assert answer["result"] == {"protocolVersion": "2025-06-18"}
    assert reply.session_id is not None
    async with up.post(INITIALIZED, session_id=reply.session_id, protocol_version=None):
        pass
    return reply.session_id


async def read(up: StdioUpstream, sid: str, body: bytes) -> list[Any]:
    async with up.post(body, session_id=sid, protocol_version=None) as reply:
        return [m async for m in reply.messages]


async def test_a_crash_fails_the_call_in_flight_and_the_next_call_reaches_a_new_process() -> None:
    up = child(restart=FAST)
    try:
        sid = await initialize(up)
        first = up.process_id(sid)
        started = time.monotonic()
        with pytest.raises(UpstreamFailure, match="process exited") as crashed:
            await read(up, sid, call(1, "crash"))
        assert crashed.value.code == UPSTREAM_STREAM_LOST and time.monotonic() - started < 2
        [answer] = await read(up, sid, call(2, "echo"))
        assert answer["id"] == 2 and answer["result"]["pid"] != first
        session = up.session(sid)
        assert session is not None and session.restarts == 1
    finally:
        await up.close()


async def test_bound_restarts_give_up_after_max_attempts_and_the_session_is_gone(tmp_path: Path) -> None:
    up = child(str(tmp_path / "started"), restart=FAST)
    try:
        sid = await initialize(up)
        with pytest.raises(UpstreamFailure):
            await read(up, sid, call(1, "crash"))
        async with asyncio.timeout(10):
            while up.session(sid) is not None:
                await asyncio.sleep(0.02)
        with pytest.raises(UpstreamSessionGone):
            await read(up, sid, call(2, "echo"))
    finally:
        await up.close()


async def test_a_call_waits_for_a_restart_at_most_connect_timeout() -> None:
    slow = RestartPolicy(backoff_base_seconds=30, backoff_max_seconds=30, max_attempts=1)
    up = child(restart=slow, connect_timeout=0.2)
    try:
        sid = await initialize(up)
        with pytest.raises(UpstreamFailure):
            await read(up, sid, call(1, "crash"))
        with pytest.raises(UpstreamFailure, match="is being restarted after it stopped") as waited:
            await read(up, sid, call(2, "echo"))
        assert waited.value.code == UPSTREAM_UNREACHABLE and waited.value.status == 503
        await up.end_session(session_id=sid, protocol_version=None)  # in the middle of the backoff: no hang
        assert up.session_ids == []
    finally:
        await up.close()


async def test_a_sessionless_request_other_than_initialize_gets_a_process_of_its_own_stopped_after() -> None:
    up = child()
    try:
        async with up.post(call(9, "echo"), session_id=None, protocol_version=None) as reply:
            [first, *_] = [m async for m in reply.messages]
            assert first["id"] == 9
        assert up.session_ids == []
    finally:
        await up.close()


def test_backoff_doubles_is_capped_and_jittered() -> None:
    import random

    policy = RestartPolicy(backoff_base_seconds=0.5, backoff_max_seconds=4, max_attempts=5)
    rng = random.Random(7)
    for losses, full in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 4.0), (500, 4.0)]:
        waits = [policy.delay(losses, rng) for _ in range(50)]
        assert all(full / 2 <= w <= full for w in waits)
        assert len(set(waits)) > 1


async def test_backoff_exponent_grows_with_losses_in_a_row_and_starts_over_after_a_long_run() -> None:
    up = child(restart=RestartPolicy(backoff_base_seconds=0.01, backoff_max_seconds=0.3, max_attempts=3))
    try:
        sid = await initialize(up)
        session = up.session(sid)
        assert session is not None
        for rid, expected in [(1, 1), (3, 2)]:  # crashed again right after the restart: one more in a row
            with pytest.raises(UpstreamFailure):
                await read(up, sid, call(rid, "crash"))
            await read(up, sid, call(rid + 1, "echo"))
            assert session.losses == expected
        await asyncio.sleep(0.35)  # ran longer than backoff_max_seconds
        with pytest.raises(UpstreamFailure):
            await read(up, sid, call(5, "crash"))
        await read(up, sid, call(6, "echo"))
        assert session.losses == 1 and session.restarts == 3
    finally:
        await up.close()


# -- through the gateway ---------------------------------------------------------------------------------


async def test_a_session_given_up_ends_the_host_session_with_404(tmp_path: Path) -> None:
    import httpx2
    from gateway_harness import gateway

    script = tmp_path / "server.py"
    script.write_text(SERVER)
    spec = {"command": sys.executable, "args": [str(script), str(tmp_path / "started")],
            "restart": {"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05, "max_attempts": 2}}
    headers = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    with gateway(tmp_path, {"kid": (spec, {"modes": ["form"]})}) as gw:
        url = f"{gw.base}/servers/kid/mcp"
        async with httpx2.AsyncClient(timeout=10) as http:
            first = await http.post(url, json=init, headers=headers)
            headers["Mcp-Session-Id"] = first.headers["Mcp-Session-Id"]
            headers["MCP-Protocol-Version"] = "2025-06-18"
            crash = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "crash"}}
            crashed = await http.post(url, json=crash, headers=headers)
            assert "-32012" in crashed.text
            async with asyncio.timeout(10):
                while "upstream.restart_failed" not in gw.output():
                    await asyncio.sleep(0.05)
            echo = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}}
            gone = await http.post(url, json=echo, headers=headers)
            assert gone.status_code == 404
            again = await http.post(url, json=echo, headers=headers)
            assert again.status_code == 404  # the host session ended with it
    assert gw.logged('"reason":"upstream_session_gone"')
