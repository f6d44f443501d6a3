"""Host authentication through the real gateway: API keys, JWTs against a JWKS, session binding,
server allow-lists, sessions per user, the admin credential, and what the logs keep.

Every control: the attack fails, and legitimate traffic with the real SDK client passes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from gateway_harness import Proc, gateway, upstream_server
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

from gateway.http.auth import hash_api_key

pytestmark = pytest.mark.anyio

ALICE_KEY = "mgw_alice-0123456789abcdefghijklmnop"
BOB_KEY = "mgw_bob-0123456789abcdefghijklmnopqrs"
ADMIN_KEY = "mgw_admin-0123456789abcdefghijklmnopq"
ISSUER, AUDIENCE = "https://idp.test/", "mcp-gateway"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
    "clientInfo": {"name": "raw", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Keys:
    def __init__(self) -> None:
        self.signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.signing.public_key()))
        return {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}

    def token(self, sub: str = "carol", *, key: Any = None, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 300, **claims}
        return jwt.encode(body, key or self.signing, algorithm="RS256", headers={"kid": kid})


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[Proc]:
    tmp = tmp_path_factory.mktemp("auth")
    (tmp / "jwks.json").write_text(json.dumps(keys.jwks()))
    cheap = {"n": 2**10}  # scrypt cost as configured per hash: cheap here to keep tests fast
    extra = {
        "auth": {
            "api_keys": [
                {"user": "alice", "groups": ["eng"], "hash": hash_api_key(ALICE_KEY, **cheap)},
                {"user": "bob", "hash": hash_api_key(BOB_KEY, **cheap)},
            ],
            "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "jwks.json", "leeway_seconds": 10},
            "access": {"default": ["up", "limited"], "groups": {"eng": ["secret"]}, "users": {"carol": ["secret"]}},
        },
        "admin": {"api_keys": [hash_api_key(ADMIN_KEY, **cheap)]},
    }
    with upstream_server(tmp) as up:
        url = up.base + "/mcp"
        both = {"modes": ["form", "url"]}
        per_user = {"modes": ["form"], "rate_limit_per_user": "2/minute"}
        with gateway(tmp, {"up": (url, both), "secret": (url, both), "limited": (url, per_user)}, extra=extra,
                     sessions={"max_sessions_per_user": 3}) as gw:
            yield gw


def ep(gw: Proc, name: str = "up") -> str:
    return f"{gw.base}/servers/{name}/mcp"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sdk_client(gw: Proc, token: str, server: str = "up", **kw: Any) -> Client:
    http = create_mcp_http_client(headers=bearer(token))
    return Client(streamable_http_client(ep(gw, server), http_client=http), mode="legacy", **kw)


async def initialize(http: httpx2.AsyncClient, gw: Proc, token: str, server: str = "up") -> httpx2.Response:
    return await http.post(ep(gw, server), json=INIT, headers={**ACCEPT, **bearer(token)})


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_no_or_wrong_credentials_are_refused_and_a_valid_key_works(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        missing = await http.post(ep(gw), json=INIT, headers=ACCEPT)
        assert missing.status_code == 401 and "Bearer" in missing.headers["WWW-Authenticate"]
        for wrong in ("mgw_not-a-configured-key-000000000", ALICE_KEY[:-1] + "X", "garbage"):
            assert (await initialize(http, gw, wrong)).status_code == 401
        basic = await http.post(ep(gw), json=INIT, headers={**ACCEPT, "Authorization": "Basic YWxpY2U6eA=="})
        assert basic.status_code == 401
    seen: list[Any] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with sdk_client(gw, ALICE_KEY, elicitation_callback=answer) as client:
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert json.loads(text(await client.call_tool("ask_name", {}))) == {"action": "accept", "name": "Ada"}
    assert len(seen) == 1
    log = gw.output()
    for secret in (ALICE_KEY, BOB_KEY, "mgw_not-a-configured-key"):
        assert secret not in log
    decision = next(json.loads(x) for x in log.splitlines() if '"elicitation.decision"' in x)
    assert decision["user"] == "alice"


async def test_the_host_credential_never_reaches_the_upstream(env: Proc) -> None:
    async with sdk_client(env, ALICE_KEY) as client:
        headers = json.loads(text(await client.call_tool("request_headers", {})))
    assert "authorization" not in headers and ALICE_KEY not in json.dumps(headers)


async def test_jwt_checks_signature_issuer_audience_expiry_and_skew(env: Proc, keys: Keys) -> None:
    gw = env
    now = int(time.time())
    bad = {
        "expired": keys.token(exp=now - 60),
        "wrong_issuer": keys.token(iss="https://evil.test/"),
        "wrong_audience": keys.token(aud="other"),
        "foreign_key": keys.token(key=keys.stranger),
        "unknown_kid": keys.token(kid="k9"),
        "no_exp": jwt.encode({"sub": "carol", "iss": ISSUER, "aud": AUDIENCE}, keys.signing, "RS256",
                             headers={"kid": "k1"}),
        "alg_none": jwt.encode({"sub": "carol", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 300}, None, "none"),
        "hs256_with_public_key_bytes": jwt.encode(
            {"sub": "carol", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 300}, "x" * 32, "HS256",
            headers={"kid": "k1"}),
        "not_yet_valid": keys.token(nbf=now + 120),
    }
    async with httpx2.AsyncClient() as http:
        for name, token in bad.items():
            assert (await initialize(http, gw, token)).status_code == 401, name
        within_skew = keys.token(exp=now - 3)  # leeway_seconds: 10
        assert (await initialize(http, gw, within_skew)).status_code == 200
    async with sdk_client(gw, keys.token("carol")) as client:
        assert text(await client.call_tool("echo", {"text": "jwt"})) == "jwt"
    log = gw.output()
    assert all(token not in log for token in bad.values())
    assert '"reason":"jwt.expired"' in log and '"reason":"jwt.unknown_key"' in log


async def test_another_users_session_is_not_found_like_an_unknown_one(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        init = await initialize(http, gw, ALICE_KEY)
        sid = init.headers["Mcp-Session-Id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        answer = {"jsonrpc": "2.0", "id": 1, "result": {"action": "decline"}}
        for body in (ping, answer):
            as_bob = await http.post(ep(gw), json=body, headers={**ACCEPT, **bearer(BOB_KEY), "Mcp-Session-Id": sid})
            unknown = await http.post(ep(gw), json=body, headers={
                **ACCEPT, **bearer(BOB_KEY), "Mcp-Session-Id": "0" * 32})
            assert as_bob.status_code == unknown.status_code == 404
            assert as_bob.json()["error"]["message"] == unknown.json()["error"]["message"]
        get = await http.get(ep(gw), headers={"Accept": "text/event-stream", **bearer(BOB_KEY), "Mcp-Session-Id": sid})
        assert get.status_code == 404
        delete = await http.delete(ep(gw), headers={**bearer(BOB_KEY), "Mcp-Session-Id": sid})
        assert delete.status_code == 404
        own = await http.post(ep(gw), json=ping, headers={**ACCEPT, **bearer(ALICE_KEY), "Mcp-Session-Id": sid})
        assert own.status_code == 200 and own.json()["result"] == {}
        await http.delete(ep(gw), headers={**bearer(ALICE_KEY), "Mcp-Session-Id": sid})
    assert sid not in gw.output()  # session ids appear hashed in logs
    assert gw.logged('"event":"session.foreign"')


async def test_server_allow_lists_by_user_and_group(env: Proc, keys: Keys) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        denied = await initialize(http, gw, BOB_KEY, "secret")
        assert denied.status_code == 403
        assert (await initialize(http, gw, keys.token("dave"), "secret")).status_code == 403
        for token in (ALICE_KEY, keys.token("carol"), keys.token("erin", groups=["eng"])):
            ok = await initialize(http, gw, token, "secret")
            assert ok.status_code == 200
            await http.delete(ep(gw, "secret"), headers={**bearer(token), "Mcp-Session-Id": ok.headers["Mcp-Session-Id"]})
    async with sdk_client(gw, keys.token("erin", groups=["eng"]), "secret") as client:
        assert text(await client.call_tool("echo", {"text": "group"})) == "group"


async def test_sessions_per_user_are_bounded_and_other_users_unaffected(env: Proc) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        sids = [(await initialize(http, gw, BOB_KEY)).headers["Mcp-Session-Id"] for _ in range(3)]
        over = await initialize(http, gw, BOB_KEY)
        assert over.status_code == 429
        other = await initialize(http, gw, ALICE_KEY)
        assert other.status_code == 200
        await http.delete(ep(gw), headers={**bearer(ALICE_KEY), "Mcp-Session-Id": other.headers["Mcp-Session-Id"]})
        await http.delete(ep(gw), headers={**bearer(BOB_KEY), "Mcp-Session-Id": sids.pop()})
        again = await initialize(http, gw, BOB_KEY)
        assert again.status_code == 200
        for sid in [*sids, again.headers["Mcp-Session-Id"]]:
            await http.delete(ep(gw), headers={**bearer(BOB_KEY), "Mcp-Session-Id": sid})


async def test_per_user_rate_limits_count_the_user_across_sessions(env: Proc) -> None:
    gw = env

    async def answer(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def ask(token: str) -> dict[str, Any]:
        try:
            async with sdk_client(gw, token, "limited", elicitation_callback=answer) as client:
                result = await client.call_tool("ask_name", {})
        except Exception as exc:  # the SDK server turns the refusal into an error (in a group)
            return {"error": repr(exc) + " ".join(repr(e) for e in getattr(exc, "exceptions", ()))}
        if result.is_error:
            return {"error": text(result)}
        out: dict[str, Any] = json.loads(text(result))
        return out

    assert (await ask(ALICE_KEY))["action"] == "accept"
    assert (await ask(ALICE_KEY))["action"] == "accept"  # a new session: the user is the same
    third = await ask(ALICE_KEY)
    assert "rate limit" in json.dumps(third).lower()
    assert (await ask(BOB_KEY))["action"] == "accept"  # another user has a budget of their own


async def test_metrics_need_the_admin_credential_not_a_host_one(env: Proc, keys: Keys) -> None:
    gw = env
    async with httpx2.AsyncClient() as http:
        assert (await http.get(f"{gw.base}/metrics")).status_code == 401
        for token in (ALICE_KEY, keys.token("carol"), ADMIN_KEY[:-1] + "Z"):
            assert (await http.get(f"{gw.base}/metrics", headers=bearer(token))).status_code == 401
        ok = await http.get(f"{gw.base}/metrics", headers=bearer(ADMIN_KEY))
        assert ok.status_code == 200 and "mcpgw_" in ok.text
        assert (await http.get(f"{gw.base}/healthz")).status_code == 200  # probes stay open
    assert ADMIN_KEY not in gw.output()


def test_hash_key_cli_prints_a_key_and_a_hash_that_verifies(tmp_path: Path) -> None:
    import subprocess
    import sys

    from gateway.http.auth import verify_api_key

    out = subprocess.run([sys.executable, "-m", "gateway", "hash-key"], capture_output=True, text=True, check=True)
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines())
    assert lines["key"].startswith("mgw_") and verify_api_key(lines["key"], lines["hash"])
    assert not verify_api_key(lines["key"] + "x", lines["hash"])
    piped = subprocess.run([sys.executable, "-m", "gateway", "hash-key", "--stdin"], input="short\n",
                           capture_output=True, text=True)
    assert piped.returncode == 2 and "at least 16" in piped.stderr


async def test_the_aggregated_endpoint_lists_only_allowed_servers_and_never_forwards_the_credential(
    env: Proc, keys: Keys
) -> None:
    async def tool_names(token: str) -> set[str]:
        http = create_mcp_http_client(headers=bearer(token))
        async with Client(streamable_http_client(f"{env.base}/mcp", http_client=http), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            if "up__request_headers" in names:
                headers = json.loads(text(await client.call_tool("up__request_headers", {})))
                assert "authorization" not in headers and token not in json.dumps(headers)
            with pytest.raises(MCPError):  # a server outside the allow-list is not routable either
                await client.call_tool("nope__echo", {"text": "x"}) if "secret__echo" in names else \
                    await client.call_tool("secret__echo", {"text": "x"})
            return {n.partition("__")[0] for n in names}

    assert await tool_names(BOB_KEY) == {"up", "limited"}
    assert await tool_names(ALICE_KEY) == {"up", "limited", "secret"}  # group eng
    async with httpx2.AsyncClient() as http:
        assert (await http.post(f"{env.base}/mcp", json=INIT, headers=ACCEPT)).status_code == 401
