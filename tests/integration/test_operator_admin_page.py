"""/admin in headless Chromium against the real gateway: a decision just made shows, no value ever does.

Needs Debian's `chromium` (/usr/bin/chromium, or $CHROMIUM) and `playwright-core` from
tests/npm; `make test` installs both when it can. Without them the browser test is
skipped with the reason; the credential checks below run with plain HTTP anyway.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import HERE, REPO, Proc, free_port, gateway, upstream_server
from mcp import Client
from mcp.types import ElicitResult, TextContent

from gateway.http.auth import hash_api_key

pytestmark = pytest.mark.anyio

TOKEN = "admin-token-for-tests-7f3a"
SECRET_ANSWER = "Zebra-Answer-9137"
SECRET_MESSAGE = "Quokka-Message-5521"
SECRET_URL = "https://evil.example/Wombat-Link-8841"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PLAYWRIGHT = REPO / "tests/npm/node_modules/playwright-core"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("admin")
    with upstream_server(tmp) as up:
        url = up.base + "/mcp"
        servers = {
            "crm": (url, {"modes": ["form", "url"], "sensitive_fields": "block", "form_urls": "strip"}),
            "other": (url, {"modes": ["form"]}),
            "dead": (f"http://127.0.0.1:{free_port()}/mcp", {}),  # nothing listens there
        }
        admin = {"admin": {"enabled": True, "api_keys": [hash_api_key(TOKEN, n=2**10)]}}
        with gateway(tmp, servers, extra=admin) as g:
            yield g


async def elicit(gw: Proc, server: str, params: dict[str, Any]) -> dict[str, Any]:
    async def host(context: Any, p: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"nickname": SECRET_ANSWER})

    async with Client(f"{gw.base}/servers/{server}/mcp", mode="legacy", elicitation_callback=host) as client:
        result = await client.call_tool("elicit_raw", {"params_json": json.dumps(params)})
    block = result.content[0]
    assert isinstance(block, TextContent)
    out: dict[str, Any] = json.loads(block.text)
    return out


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_admin_needs_the_credential(gw: Proc) -> None:
    status, _, _ = get(f"{gw.base}/admin")
    assert status == 401
    assert get(f"{gw.base}/admin", {"Authorization": "Bearer wrong"})[0] == 401
    assert get(f"{gw.base}/admin", {"Authorization": "Basic " + base64.b64encode(f"a:{TOKEN}".encode()).decode()})[0] == 401
    assert get(f"{gw.base}/admin", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    status, html, headers = get(f"{gw.base}/admin", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "<h1>elicitation-gateway</h1>" in html
    assert "default-src 'none'" in headers["Content-Security-Policy"] and headers["Cache-Control"] == "no-store"


def test_admin_is_off_unless_configured(tmp_path: Path) -> None:
    with upstream_server(tmp_path) as up, gateway(tmp_path, {"x": (up.base + "/mcp", {})}) as g:
        assert get(f"{g.base}/admin", {"Authorization": f"Bearer {TOKEN}"})[0] == 404


async def test_page_in_chromium_shows_the_decision_just_made_and_never_a_value(gw: Proc, tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (make test does this as root)")
    if not PLAYWRIGHT.exists() or shutil.which("node") is None:
        pytest.skip("playwright-core not installed: cd tests/npm && npm ci")
    form = {
        "mode": "form",
        "message": f"{SECRET_MESSAGE}: see {SECRET_URL}",
        "requestedSchema": {"type": "object", "properties": {"nickname": {"type": "string"}}},
    }
    out = await elicit(gw, "crm", form)
    assert out["result"]["content"] == {"nickname": SECRET_ANSWER}  # the host answered with the value
    password = {"mode": "form", "message": SECRET_MESSAGE,
                "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}}
    assert (await elicit(gw, "crm", password))["error"]["code"] == -32050
    await elicit(gw, "other", {"mode": "form", "message": "Name?",
                               "requestedSchema": {"type": "object", "properties": {"nickname": {"type": "string"}}}})

    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    with contextlib.suppress(urllib.error.HTTPError):  # the dead server's failure, for the health column
        urllib.request.urlopen(urllib.request.Request(f"{gw.base}/servers/dead/mcp", data=initialize, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}), timeout=10).close()

    shot = tmp_path / "admin.png"
    keep = os.environ.get("ADMIN_SCREENSHOT")  # set to keep a copy to look at
    proc = subprocess.run(
        ["node", str(HERE / "admin_page.mjs"), gw.base, TOKEN, str(shot)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = json.loads(proc.stdout)
    if keep:
        shutil.copy(shot, keep)
    assert page["withoutCredential"] == 401 and page["status"] == 200
    assert shot.stat().st_size > 10_000 and page["scriptTags"] == 0

    rows = page["rows"]
    assert [r["decision"] for r in rows[:3]] == ["allow", "block", "modify"]  # newest first
    allow, blocked, modified = rows[:3]
    assert allow["server"] == "other"
    assert blocked["server"] == "crm" and "sensitive_fields" in blocked["cells"][4]
    assert "requestedSchema.properties.password" in blocked["cells"][5]  # where, never what
    assert modified["server"] == "crm" and "form_urls" in modified["cells"][4]
    assert "link removed from message" in modified["cells"][5]
    assert "1: nickname" in modified["cells"][6]  # field names and count
    servers = {row[0]: row for row in page["servers"]}
    assert set(servers) == {"crm", "other", "dead"} and servers["crm"][3] == "up"
    assert servers["dead"][3] == "down" and servers["dead"][7] == "1" and "server 'dead'" in servers["dead"][8]
    assert page["chartBars"] >= 2  # allow, modify and block in the current minute

    assert page["filteredUrl"].endswith("/admin?server=&decision=block")
    assert page["blockRows"] and {r["decision"] for r in page["blockRows"]} == {"block"}
    assert page["otherRows"] and {r["server"] for r in page["otherRows"]} == {"other"}
    assert page["otherChartBars"] == 1

    for secret in (SECRET_ANSWER, SECRET_MESSAGE, SECRET_URL, "evil.example", TOKEN):
        assert secret not in page["html"], secret
        assert secret not in json.dumps(page), secret
