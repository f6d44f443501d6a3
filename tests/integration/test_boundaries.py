"""The HTTP boundary through the real gateway: Host and Origin on every route, header and body
deadlines, JSON depth / duplicate keys / invalid UTF-8, the negotiated protocol revision, slow SSE
consumers, and session ids in logs. Each control: the attack fails, legitimate traffic passes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from gateway_harness import HERE, Proc, free_port, gateway, running, upstream_server
from mcp import Client
from mcp.types import TextContent

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LISTEN = {"allowed_hosts": ["gw.example.com", "*.internal.example"], "body_timeout_seconds": 1.0,
          "header_timeout_seconds": 1.0, "write_timeout_seconds": 1.0, "max_json_depth": 32}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("boundaries")
    port = free_port()
    with running([sys.executable, str(HERE / "hostile_upstream.py"), str(port)], port, tmp / "hostile.log") as bad:
        with upstream_server(tmp) as up:
            servers = {"up": (up.base + "/mcp", {"modes": ["form"]}), "hostile": (bad.base + "/mcp", {"modes": []})}
            # The slow-consumer test needs a server that streams 16 MB of notifications: no notification budget.
            with gateway(tmp, servers, extra={"listen": LISTEN},
                         sessions={"max_notifications_per_second": 1_000_000}) as gw:
                yield gw


def ep(gw: Proc, name: str = "up") -> str:
    return f"{gw.base}/servers/{name}/mcp"


async def session(http: httpx2.AsyncClient, gw: Proc, name: str = "up") -> str:
    init = await http.post(ep(gw, name), json=INIT, headers=ACCEPT)
    assert init.status_code == 200
    sid: str = init.headers["Mcp-Session-Id"]
    return sid


async def test_host_header_is_checked_on_every_route(env: Proc) -> None:
    gw = env
    routes = [("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("POST", "/servers/up/mcp")]
    async with httpx2.AsyncClient() as http:
        for method, path in routes:
            for host in ("evil.example.com", f"attacker.test:{gw.port}", "gw.example.com.evil.test"):
                r = await http.request(method, gw.base + path, headers={**ACCEPT, "Host": host}, json=INIT)
                assert r.status_code == 403, (path, host)
            for host in (f"127.0.0.1:{gw.port}", f"localhost:{gw.port}", "gw.example.com", "a.internal.example",
                         "[::1]", "10.1.2.3:8808"):
                r = await http.request(method, gw.base + path, headers={**ACCEPT, "Host": host}, json=INIT)
                assert r.status_code == 200, (path, host)
    assert gw.logged('"reason":"host_not_allowed"')


async def test_origin_is_checked_on_every_route(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        for path in ("/healthz", "/readyz", "/metrics"):
            assert (await http.get(gw.base + path, headers={"Origin": "https://evil.example"})).status_code == 403
            assert (await http.get(gw.base + path, headers={"Origin": "null"})).status_code == 403
            assert (await http.get(gw.base + path, headers={"Origin": "http://localhost:3000"})).status_code == 200
            assert (await http.get(gw.base + path)).status_code == 200


def raw_request(port: int, data: bytes, wait: float) -> tuple[bytes, float, float]:
    """Send bytes, then read until the gateway closes.

    Returns (what came back, seconds until the first byte came, seconds until closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        started, got, first = time.monotonic(), b"", -1.0
        try:
            while chunk := s.recv(65536):
                first = first if first >= 0 else time.monotonic() - started
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got, first, time.monotonic() - started


async def test_slow_headers_and_slow_bodies_meet_their_deadlines(env: Proc) -> None:
    gw = env
    partial_head = b"POST /servers/up/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"
    got, _, closed = await asyncio.to_thread(raw_request, gw.port, partial_head, 10.0)
    assert closed < 5.0 and b"200" not in got  # closed at the 1 s header deadline, nothing served
    body = json.dumps(INIT).encode()
    head = (f"POST /servers/up/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    got, first, closed = await asyncio.to_thread(raw_request, gw.port, head + body[:10], 10.0)
    assert got.startswith(b"HTTP/1.1 408") and first < 3.0  # the 1 s body deadline
    assert closed < 6.0 and got.count(b"HTTP/1.1") == 1  # then closed; the late body is no next request
    async with httpx2.AsyncClient() as http:  # a normal request is unaffected
        await session(http, gw)


async def test_json_depth_duplicate_keys_and_invalid_utf8_are_refused(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        sid = await session(http, gw)
        headers = {**ACCEPT, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}

        def call(arguments: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "ok", "extra": arguments}}}

        def deep(levels: int) -> Any:
            node: Any = "x"
            for _ in range(levels):
                node = [node]
            return node

        too_deep = await http.post(ep(gw), content=json.dumps(call(deep(40))), headers=headers)
        assert too_deep.status_code == 400 and "deeper than 32" in too_deep.json()["error"]["message"]
        fine = await http.post(ep(gw), content=json.dumps(call(deep(20))), headers=headers)
        assert fine.status_code == 200
        duplicate = b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "method": "tools/call", "params": {}}'
        r = await http.post(ep(gw), content=duplicate, headers=headers)
        assert r.status_code == 400 and "duplicate key" in r.json()["error"]["message"]
        for bad in (b'{"jsonrpc": "2.0", "id": 7, "method": "ping\xff"}',
                    b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "\\ud800"}}'):
            r = await http.post(ep(gw), content=bad, headers=headers)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        ping = await http.post(ep(gw), content=b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}', headers=headers)
        assert ping.status_code == 200 and ping.json()["result"] == {}


async def test_protocol_version_header_must_match_the_negotiated_revision(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        sid = await session(http, gw)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        for version, status in (("2025-06-18", 400), ("2025-03-26", 400), ("1999-01-01", 400), ("2025-11-25", 200)):
            r = await http.post(ep(gw), json=ping, headers={**ACCEPT, "Mcp-Session-Id": sid,
                                                             "MCP-Protocol-Version": version})
            assert r.status_code == status, version
        assert (await http.post(ep(gw), json=ping, headers={**ACCEPT, "Mcp-Session-Id": sid})).status_code == 200


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


async def test_a_slow_sse_consumer_is_disconnected_and_memory_stays_bounded(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        sid = await session(http, gw, "hostile")
    before = _rss_kb(gw.process.pid)
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "chatty"}}).encode()
    head = (f"POST /servers/hostile/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", gw.port))
    try:
        s.sendall(head + body)  # ... and never read: 16 MB of notifications are coming
        deadline = time.monotonic() + 20
        while '"event":"host.slow_consumer_disconnected"' not in gw.output():
            assert time.monotonic() < deadline, "slow consumer not disconnected"
            async with Client(ep(gw), mode="legacy") as client:  # others are served meanwhile
                result = await client.call_tool("echo", {"text": "meanwhile"})
                block = result.content[0]
                assert isinstance(block, TextContent) and block.text == "meanwhile"
            await asyncio.sleep(0.3)
    finally:
        s.close()
    grown_mb = (_rss_kb(gw.process.pid) - before) / 1024
    assert grown_mb < 40, grown_mb  # the 16 MB stream was not queued for the host


async def test_unauthenticated_mode_says_so_loudly_and_keeps_metrics_on_loopback(env: Proc) -> None:
    gw = env
    log = gw.output()
    assert "host authentication is OFF" in log and '"event":"auth.disabled"' in log
    assert '"event":"admin.loopback_only"' in log
    async with httpx2.AsyncClient() as http:
        assert (await http.get(f"{gw.base}/metrics")).status_code == 200  # this test runs on loopback


async def test_session_ids_never_appear_raw_in_logs(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        sid = await session(http, gw)
        await http.post(ep(gw), json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "echo", "arguments": {"text": "x"}}},
                        headers={**ACCEPT, "Mcp-Session-Id": sid})
        await http.delete(ep(gw), headers={"Mcp-Session-Id": sid})
    log = gw.output()
    assert sid not in log and sid[:12] not in log
    created = [json.loads(x) for x in log.splitlines() if '"session.created"' in x]
    assert created and all(len(line["session"]) == 12 for line in created)
