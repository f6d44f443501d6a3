"""Two real gateway processes on the real Redis, behind a round-robin balancer with no affinity.

What is tried: a session whose requests alternate between replicas; an elicitation
answered on the other replica; a URL-mode completion that reaches replica A while the
owner's stream is open on replica B; a replica killed mid-elicitation; Redis stopped
and started again under live traffic.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_harness import (
    AnsweringHost,
    Proc,
    balancer,
    free_port,
    gateway,
    sse_messages,
    upstream_server,
    wait_for_port,
)
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

POLICY = {"modes": ["form", "url"], "url_mode": {"allowed_hosts": ["auth.example.com"]}}
ORIGIN_KEY = "dev.elicitation-gateway/origin"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def redis_state(url: str = "redis://127.0.0.1:6379/15") -> dict[str, Any]:
    return {"backend": "redis", "url": url, "key_prefix": f"mcpgw-test-{uuid.uuid4().hex}:"}


@contextmanager
def cluster(
    tmp: Path, state: dict[str, Any], sessions: dict[str, Any] | None = None, era: str = "both",
    extra: dict[str, Any] | None = None,
) -> Iterator[tuple[Proc, Proc, Proc]]:
    """Upstream SDK server, replicas A and B on one Redis, and the balancer in front of them."""
    with ExitStack() as stack:
        up = stack.enter_context(upstream_server(tmp, era=era))
        servers = {"up": (up.base + "/mcp", POLICY)}
        a = stack.enter_context(gateway(tmp, servers, state, sessions, name="replica-a", extra=extra))
        b = stack.enter_context(gateway(tmp, servers, state, sessions, name="replica-b", extra=extra))
        lb = stack.enter_context(balancer(tmp, [a, b]))
        yield a, b, lb


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_a_session_alternating_between_replicas_completes_a_form_elicitation(tmp_path: Path) -> None:
    answer = AnsweringHost()
    seen = answer.seen

    with cluster(tmp_path, redis_state()) as (a, b, lb):
        async with Client(f"{lb.base}/servers/up/mcp", mode="legacy", elicitation_callback=answer) as client:
            for _ in range(3):  # several rounds: each request lands on the next replica
                assert json.loads(text_of(await client.call_tool("ask_name", {}))) == {"action": "accept", "name": "Ada"}
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
        served = lb.output().split()
        assert "0" in served and "1" in served  # both replicas served this one session
        for replica in (a, b):
            assert replica.logged('"event":"request"')
    assert len(seen) == 3
    assert all(p.meta[ORIGIN_KEY] == {"server": "up"} and p.message.startswith("[up] ") for p in seen)


async def test_url_completion_arriving_at_one_replica_reaches_the_owner_on_the_other(tmp_path: Path) -> None:
    with cluster(tmp_path, redis_state()) as (a, b, _):
        url_a, url_b = f"{a.base}/servers/up/mcp", f"{b.base}/servers/up/mcp"
        async with httpx2.AsyncClient(timeout=15) as http:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
                               "clientInfo": {"name": "raw", "version": "1"}}}
            r = await http.post(url_a, json=init, headers=HEADERS)
            headers = {**HEADERS, "Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
            await http.post(url_b, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "url_later", "arguments": {
                "url": "https://auth.example.com/connect", "elicitation_id": "x-1", "delay": 1.5}}}
            # Replica A relays the call and the URL elicitation; the host answers it on replica B.
            async with http.stream("POST", url_a, json=call, headers=headers) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:") or not line[5:].strip():
                        continue
                    msg = json.loads(line[5:])
                    if msg.get("method") == "elicitation/create":
                        r = await http.post(url_b, json={"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept"}},
                                            headers=headers)
                        assert r.status_code == 202
                    if msg.get("id") == 2:
                        assert msg["result"]["content"][0]["text"] == "accept"
                        break
            # The host's standalone stream is open on B; the server's completion reaches A's upstream stream.
            got: list[Any] = []
            with anyio.move_on_after(8):
                async with http.stream("GET", url_b, headers={**headers, "Accept": "text/event-stream"}) as s:
                    async for line in s.aiter_lines():
                        if line.startswith("data:") and line[5:].strip():
                            got.append(json.loads(line[5:]))
                            break
        assert got == [{"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                        "params": {"elicitationId": "x-1"}}]
        assert a.logged('"event":"elicitation.completed"')
        assert '"event":"elicitation.completed"' not in b.output()


async def test_a_replica_killed_mid_elicitation_gives_the_host_a_clear_error_and_the_session_lives_on(
    tmp_path: Path,
) -> None:
    with cluster(tmp_path, redis_state()) as (a, b, lb):
        killed: list[str] = []

        async def kill_the_relaying_replica(context: Any, params: Any) -> ElicitResult:
            victim = a if '"event":"elicitation.decision"' in a.output() else b
            victim.process.send_signal(signal.SIGKILL)
            killed.append("a" if victim is a else "b")
            await anyio.sleep(0.2)
            return ElicitResult(action="accept", content={"name": "Ada"})

        async with Client(f"{lb.base}/servers/up/mcp", mode="legacy",
                          elicitation_callback=kill_the_relaying_replica) as client:
            started = time.monotonic()
            with anyio.fail_after(45):  # never a hang
                with pytest.raises(MCPError) as info:
                    await client.call_tool("ask_and_wait", {})
            assert info.value.error.code in (-32012, -32000, -32001)
            assert time.monotonic() - started < 45
            # The session is in Redis: the surviving replica serves it.
            assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"
        assert len(killed) == 1


@contextmanager
def private_redis(tmp: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    server = shutil.which("redis-server")
    assert server is not None, "redis-server must be installed (.ci/run relies on it too)"
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, tmp / "none.log")
        yield proc
    finally:
        proc.terminate()
        proc.wait(5)


async def ready(http: httpx2.AsyncClient, proc: Proc) -> int:
    return (await http.get(f"{proc.base}/readyz")).status_code


async def test_redis_stopped_fails_closed_and_the_gateway_recovers_when_it_returns(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "redis").mkdir()
    seen: list[Any] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})

    redis = private_redis(tmp_path / "redis", port)
    redis.__enter__()
    try:
        with cluster(tmp_path, redis_state(f"redis://127.0.0.1:{port}/0")) as (a, b, lb):
            url = f"{lb.base}/servers/up/mcp"
            async with httpx2.AsyncClient(timeout=10) as http:
                assert [await ready(http, a), await ready(http, b)] == [200, 200]
                async with Client(url, mode="legacy", elicitation_callback=answer) as client:
                    await client.call_tool("ask_name", {})
                    assert len(seen) == 1
                    redis.__exit__(None, None, None)  # Redis goes away under a live session
                    with anyio.fail_after(20), pytest.raises(Exception) as info:
                        await client.call_tool("ask_name", {})
                    assert "state unavailable" in repr(info.value)
                assert len(seen) == 1  # nothing reached the host unchecked
                assert [await ready(http, a), await ready(http, b)] == [503, 503]
                redis = private_redis(tmp_path / "redis", port)  # back, empty (no persistence)
                redis.__enter__()
                with anyio.fail_after(20):
                    while [await ready(http, a), await ready(http, b)] != [200, 200]:
                        await anyio.sleep(0.2)
                # A new session works again on both replicas, with no restart of the gateway.
                async with Client(url, mode="legacy", elicitation_callback=answer) as client:
                    for _ in range(2):
                        await client.call_tool("ask_name", {})
                assert len(seen) == 3
            for replica in (a, b):
                assert replica.process.poll() is None
                assert replica.logged("state.unavailable")
    finally:
        redis.__exit__(None, None, None)


def _established_to(port: int, pid: int) -> int:
    """TCP connections of process `pid` to 127.0.0.1:`port` in state ESTABLISHED (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        parts = line.split()
        remote, state, inode = parts[2], parts[3], parts[9]
        if state == "01" and inode in inodes and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


@pytest.mark.parametrize(("mode", "era"), [("2026-07-28", "legacy"), ("legacy", "modern")])
async def test_a_translated_call_completes_when_its_rounds_land_on_different_replicas(
    tmp_path: Path, mode: str, era: str
) -> None:
    """A 2026-07-28 host's retry, or a handshake-era host's answer, reaches the replica that does not
    hold the upstream call; the balancer alternates, so every round changes replica."""
    seen: list[Any] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})

    with cluster(tmp_path, redis_state(), era=era) as (a, b, lb):
        async with Client(f"{lb.base}/servers/up/mcp", mode=mode, elicitation_callback=answer) as client:
            for _ in range(3):
                assert text_of(await client.call_tool("greet", {})).startswith("Hello Ada")
        served = lb.output().split()
        assert "0" in served and "1" in served
        assert all(replica.logged('"method":"tools/call"') for replica in (a, b))
    assert len(seen) == 3 and all(p.message.startswith("[up] ") for p in seen)


async def test_sse_payload_helper_skips_priming_events() -> None:
    assert sse_messages('id: r.x.0\ndata: \n\nid: r.x.1\ndata: {"a":1}\n\n') == [{"a": 1}]


__all__ = ["_established_to"]


async def test_the_aggregated_endpoint_works_across_replicas(tmp_path: Path) -> None:
    """/mcp and /servers/up/mcp behind the balancer: the per-server session behind /mcp is found by
    either replica, and an elicitation's answer reaching the other replica is routed by its id."""
    answer = AnsweringHost()
    seen = answer.seen

    with cluster(tmp_path, redis_state()) as (a, b, lb):
        async with Client(f"{lb.base}/mcp", mode="legacy", elicitation_callback=answer) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "up__ask_name" in names
            for _ in range(3):
                result = await client.call_tool("up__ask_name", {})
                assert json.loads(text_of(result)) == {"action": "accept", "name": "Ada"}
            assert text_of(await client.call_tool("up__echo", {"text": "x"})) == "x"
        async with Client(f"{lb.base}/servers/up/mcp", mode="legacy") as direct:
            assert text_of(await direct.call_tool("echo", {"text": "direct"})) == "direct"
        for replica in (a, b):
            assert replica.logged('"event":"request"')
    assert len(seen) == 3 and all(p.message.startswith("[up] ") for p in seen)


async def test_the_admin_page_of_either_replica_shows_the_decisions_of_both(tmp_path: Path) -> None:
    async def host(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    with cluster(tmp_path, redis_state(), extra={"admin": {"enabled": True}}) as (a, b, _):
        for replica in (a, b):  # one password form blocked on each replica
            async with Client(f"{replica.base}/servers/up/mcp", mode="legacy", elicitation_callback=host) as client:
                with pytest.raises(MCPError):
                    await client.call_tool("sign_in", {})
        await anyio.sleep(0.5)  # published in the background
        async with httpx2.AsyncClient(timeout=10) as http:
            pages = [(await http.get(f"{replica.base}/admin")).text for replica in (a, b)]
    for page in pages:  # each replica made one decision; each page lists both
        assert page.count('<tr class=decision data-decision="block"') == 2 and "every replica" in page
