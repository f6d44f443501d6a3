"""The lean HTTP/1.1 client of the upstream request path (gateway/upstream/http1.py), against raw loopback
servers that answer byte for byte as scripted: what a well-behaved server gets, and what a broken or hostile
one gets (a cut body, a malformed status line, a compressed body nobody asked for, bytes after the response,
a connection closed while idle), with the reuse and the bounds each case must keep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from gateway.upstream.http1 import _HIGH_WATER, Http1Pool, Http1Response, ResponseBroken

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[pytest.param(("asyncio", {}), id="asyncio"),
                        pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    """Both loops `serve` may run on: uvloop's transports are not asyncio's classes."""
    return request.param

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A raw TCP server: each connection runs `handler`; records the client ports and the requests' heads."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.ports: list[int] = []
        self.heads: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.ports.append(writer.get_extra_info("peername")[1])
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                await reader.readexactly(int(line.split(b":")[1]))
        return head

    async def answer_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: bytes) -> None:
        """Reads one request and writes `reply`, whatever it holds."""
        await self.read_request(reader)
        writer.write(reply)
        await writer.drain()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp?x=1"


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Server]]]:
    started: list[Server] = []

    async def start(handler: Handler) -> Server:
        srv = Server(handler)
        srv.server = await asyncio.start_server(srv._serve, "127.0.0.1", 0)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        assert srv.server is not None
        srv.server.close()


def answer(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body), extra, body)


async def body_of(resp: Http1Response) -> bytes:
    return b"".join([chunk async for chunk in resp.content.iter_any()])


async def test_keep_alive_answers_share_one_connection_and_the_request_is_well_formed(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await srv.answer_one(reader, writer, answer(b'{"ok":1}', b"Mcp-Session-Id: abc\r\n"))

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        for _ in range(3):
            resp = await pool.request("POST", srv.url, {"Content-Type": "application/json"}, b'{"a":1}')
            assert (resp.status, resp.content_type, resp.headers["mcp-session-id"]) == (200, "application/json", "abc")
            assert await body_of(resp) == b'{"ok":1}' and resp.content.at_eof()
            resp.release()
        assert len(srv.heads) == 3 and len(srv.ports) == 1  # three requests, one connection
        head = srv.heads[0].decode()
        assert head.startswith("POST /mcp?x=1 HTTP/1.1\r\n")
        assert f"Host: 127.0.0.1:{srv.url.split(':')[2].split('/')[0]}\r\n" in head
        assert "Content-Length: 7\r\n" in head and "Accept-Encoding: identity\r\n" in head
    finally:
        pool.close()


async def test_a_body_cut_short_is_an_error_and_the_connection_is_not_reused(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.answer_one(reader, writer, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                             b"Content-Length: 100\r\n\r\n{\"partial")

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        resp = await pool.request("POST", srv.url, {}, b"{}")
        with pytest.raises(ResponseBroken):
            await body_of(resp)
        resp.release()
        assert not pool._idle
    finally:
        pool.close()


@pytest.mark.parametrize("reply", [
    b"garbage that is no status line\r\n\r\n",  # malformed
    b"",  # the server closes without a word
    b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",  # a coding nobody asked for
], ids=["malformed", "closed", "gzip"])
async def test_no_usable_response_raises_before_any_body_is_read(serve, reply: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.answer_one(reader, writer, reply)

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        with pytest.raises(ResponseBroken):
            await pool.request("POST", srv.url, {}, b"{}")
        await asyncio.sleep(0.05)  # connection_lost comes on a later turn of the loop
        assert not pool._idle and not pool._open
    finally:
        pool.close()


async def test_a_body_ended_by_the_connection_is_complete_and_an_interim_response_is_skipped(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Connection: close\r\n\r\ndata: 1\n\n")
        await writer.drain()

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        resp = await pool.request("GET", srv.url, {"Accept": "text/event-stream"}, None)
        assert (resp.status, resp.content_type) == (200, "text/event-stream")
        assert await body_of(resp) == b"data: 1\n\n"
        resp.release()
        assert not pool._idle  # Connection: close
        assert b"Content-Length" not in srv.heads[0]
    finally:
        pool.close()


async def test_header_injection_is_refused_before_anything_is_sent(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.read_request(reader)

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        for headers in ({"Mcp-Session-Id": "a\r\nX-Evil: 1"}, {"Last-Event-ID": "1\n"}, {"X\r\nY": "v"},
                        {"A:B": "v"}, {"N": "nul\0"}):
            with pytest.raises(ValueError):
                await pool.request("POST", srv.url, headers, b"{}")
        assert srv.ports == [] and srv.heads == []
        with pytest.raises(ValueError):
            await pool.request("POST", "http://other.example/mcp", {}, b"{}")
    finally:
        pool.close()


async def test_a_slow_reader_pauses_the_socket_and_still_gets_every_byte(serve) -> None:
    size = 8 * _HIGH_WATER

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % size)
        for _ in range(size // 65536):
            writer.write(b"x" * 65536)
            await writer.drain()

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        resp = await pool.request("GET", srv.url, {}, None)
        await asyncio.sleep(0.3)  # the server writes as fast as it may; nobody reads
        assert resp._paused and resp._buffered < _HIGH_WATER + 1024 * 1024
        got = 0
        async for chunk in resp.content.iter_any():
            got += len(chunk)
            await asyncio.sleep(0)
        assert got == size and resp.content.at_eof()
        resp.release()
        assert len(pool._idle) == 1
    finally:
        pool.close()


async def test_an_idle_connection_the_server_closed_or_kept_too_long_is_not_used(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.answer_one(reader, writer, answer(b"{}"))
        if len(srv.ports) == 1:
            return  # the first connection: closed by the server once idle
        while True:
            await srv.answer_one(reader, writer, answer(b"{}"))

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2, idle_timeout=0.2)
    try:
        for pause in (0.1, 0.0, 0.4, 0.0):
            resp = await pool.request("POST", srv.url, {}, b"{}")
            assert await body_of(resp) == b"{}"
            resp.release()
            await asyncio.sleep(pause)
        # 1st closed by the server while idle; 2nd reused once, then idle past idle_timeout; 3rd for the rest.
        assert len(set(srv.ports)) == 3, srv.ports
    finally:
        pool.close()


async def test_bytes_after_the_response_close_the_connection(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await srv.read_request(reader)
            writer.write(answer(b"{}") + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")  # one answer too many
            await writer.drain()

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        for _ in range(2):
            resp = await pool.request("POST", srv.url, {}, b"{}")
            assert await body_of(resp) == b"{}"
            resp.release()
            await asyncio.sleep(0.05)
        assert len(set(srv.ports)) == 2  # the stray answer was never taken for the second request's
    finally:
        pool.close()


async def test_an_unreachable_server_fails_within_the_connect_deadline() -> None:
    pool = Http1Pool("http://127.0.0.1:9/mcp", connect_timeout=2)
    with pytest.raises(OSError):
        await pool.request("POST", "http://127.0.0.1:9/mcp", {}, b"{}")
    pool.close()


async def test_read_returns_at_most_what_was_asked_and_keeps_the_rest(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.answer_one(reader, writer, answer(b"0123456789"))

    srv = await serve(handler)
    pool = Http1Pool(srv.url, connect_timeout=2)
    try:
        resp = await pool.request("POST", srv.url, {}, b"{}")
        assert [await resp.content.read(4), await resp.content.read(), await resp.content.read()] == [
            b"0123", b"456789", b""]
        assert resp.content.at_eof()
    finally:
        pool.close()


async def test_tls_is_verified_against_the_trust_store(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-signed server is refused; the same server is served once its certificate is trusted (SSL_CERT_FILE,
    read by `ssl.create_default_context()` like the system's store)."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.answer_one(reader, writer, answer(b"{}"))

    srv = Server(handler)
    srv.server = await asyncio.start_server(srv._serve, "127.0.0.1", 0, ssl=context)
    url = f"https://localhost:{srv.server.sockets[0].getsockname()[1]}/mcp"
    try:
        pool = Http1Pool(url, connect_timeout=2)
        with pytest.raises(ssl.SSLCertVerificationError):
            await pool.request("POST", url, {}, b"{}")
        pool.close()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        pool = Http1Pool(url, connect_timeout=2)
        resp = await pool.request("POST", url, {}, b"{}")
        assert (resp.status, await body_of(resp)) == (200, b"{}")
        pool.close()
    finally:
        srv.server.close()
