"""Upstream credentials through the real gateway: each server gets its own (from the environment or
from secret files), and the host's credential (its Authorization header, its cookies, the gateway's
API-key header) never reaches any upstream, whichever protocol era either side speaks.

The upstream is the real SDK server; its `request_headers` tool answers with the HTTP headers it
received for the call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_harness import Proc, gateway, text_of, upstream_server
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from gateway.http.auth import hash_api_key

pytestmark = pytest.mark.anyio

HOST_KEY = "mgw_host-0123456789abcdefghijklmnopq"
FILE_TOKEN = "upstream-token-from-a-mounted-file"
FILE_KEY = "upstream-api-key-from-a-file"
ENV_KEY = "upstream-key-from-the-environment"
MODERN = "2026-07-28"
POLICY = {"modes": ["form"]}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("creds")
    (tmp / "secrets").mkdir()
    (tmp / "secrets" / "token").write_text(FILE_TOKEN + "\n")
    (tmp / "secrets" / "api-key").write_text(FILE_KEY + "\n")
    credentialed = {"bearer_token_file": "secrets/token", "headers_from_files": {"X-Upstream-Key": "secrets/api-key"},
                    "headers": {"X-Env-Key": "${GW_TEST_UPSTREAM_KEY}"}}
    extra = {"auth": {"api_keys": [{"user": "ada", "hash": hash_api_key(HOST_KEY, n=2**10)}]},
             "admin": {"enabled": True}}  # no admin keys: loopback only, as the test is
    with upstream_server(tmp) as up:
        url = up.base + "/mcp"
        servers = {
            "plain-legacy": ({"url": url, "protocol": "legacy"}, POLICY),
            "plain-modern": ({"url": url, "protocol": MODERN}, POLICY),
            "keyed-legacy": ({"url": url, "protocol": "legacy", **credentialed}, POLICY),
            "keyed-modern": ({"url": url, "protocol": MODERN, **credentialed}, POLICY),
        }
        with gateway(tmp, servers, extra=extra, env={"GW_TEST_UPSTREAM_KEY": ENV_KEY}) as p:
            yield p


HOST_CREDENTIALS = {
    "authorization": {"Authorization": f"Bearer {HOST_KEY}", "Cookie": "host-session=host-cookie-value"},
    "api-key-header": {"X-API-Key": HOST_KEY, "Cookie": "host-session=host-cookie-value"},
}


async def headers_seen(gw: Proc, server: str, host_mode: str, host_headers: dict[str, str]) -> dict[str, Any]:
    http = create_mcp_http_client(headers=host_headers)
    transport = streamable_http_client(f"{gw.base}/servers/{server}/mcp", http_client=http)
    async with Client(transport, mode=host_mode) as client:
        seen: dict[str, Any] = json.loads(text_of(await client.call_tool("request_headers", {})))
    return seen


@pytest.mark.parametrize("host_mode", ["legacy", MODERN])
@pytest.mark.parametrize("server", ["plain-legacy", "plain-modern", "keyed-legacy", "keyed-modern"])
@pytest.mark.parametrize("credential", sorted(HOST_CREDENTIALS))
async def test_the_host_credential_never_reaches_an_upstream(
    gw: Proc, server: str, host_mode: str, credential: str
) -> None:
    seen = await headers_seen(gw, server, host_mode, HOST_CREDENTIALS[credential])
    text = json.dumps(seen)
    assert HOST_KEY not in text and "host-cookie-value" not in text
    assert "cookie" not in seen and "x-api-key" not in seen
    if server.startswith("keyed"):
        assert seen["authorization"] == f"Bearer {FILE_TOKEN}"
        assert seen["x-upstream-key"] == FILE_KEY
        assert seen["x-env-key"] == ENV_KEY
    else:
        assert "authorization" not in seen and "x-upstream-key" not in seen


async def test_upstream_credentials_never_appear_in_the_log_admin_or_metrics(gw: Proc) -> None:
    import httpx2

    await headers_seen(gw, "keyed-legacy", "legacy", HOST_CREDENTIALS["authorization"])
    async with httpx2.AsyncClient(timeout=10) as http:
        admin = await http.get(f"{gw.base}/admin")
        metrics = await http.get(f"{gw.base}/metrics")
    assert admin.status_code == 200 and "keyed-legacy" in admin.text
    assert metrics.status_code == 200
    for secret in (FILE_TOKEN, FILE_KEY, ENV_KEY, HOST_KEY):
        assert secret not in gw.output() and secret not in admin.text and secret not in metrics.text
