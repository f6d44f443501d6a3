"""Pieces of host authentication and the HTTP boundary, without a gateway process:
key hashing, the JWKS cache over a URL, allow-lists, Host/Origin rules, JSON limits, log hashing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec

from gateway.config import AccessConfig, AdminConfig, ApiKeyConfig, AuthConfig, JwtConfig
from gateway.core.json_limits import JsonLimitExceeded, check_json
from gateway.http.auth import Authenticator, AuthFailed, JwtVerifier, hash_api_key, verify_api_key
from gateway.http.guards import host_allowed, origin_allowed
from gateway.identity import Identity, hash_session_ids, session_ref, set_session_salt

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_key_hashes_verify_only_their_key_and_refuse_short_keys() -> None:
    stored = hash_api_key("mgw_0123456789abcdef", n=2**10)
    assert verify_api_key("mgw_0123456789abcdef", stored)
    assert not verify_api_key("mgw_0123456789abcdeX", stored)
    assert not verify_api_key("mgw_0123456789abcdef", stored.replace("scrypt$", "bcrypt$"))
    assert not verify_api_key("mgw_0123456789abcdef", "scrypt$broken")
    with pytest.raises(ValueError):
        hash_api_key("short")
    with pytest.raises(ValueError):
        ApiKeyConfig(user="u", hash="plaintext-key")
    with pytest.raises(ValueError):
        AdminConfig(api_keys=("plaintext",))


def test_access_lists_grant_default_user_and_group_servers() -> None:
    cfg = AuthConfig(api_keys=(ApiKeyConfig(user="u", hash=hash_api_key("mgw_0123456789abcdef", n=2**10)),),
                     access=AccessConfig(default=(), users={"ann": ("a",)}, groups={"ops": ("b",)}))
    auth = Authenticator(cfg, Path("."))
    assert auth.may_use(Identity("ann", method="api_key"), "a")
    assert not auth.may_use(Identity("ann", method="api_key"), "b")
    assert auth.may_use(Identity("x", frozenset({"ops"}), method="jwt"), "b")
    assert not auth.may_use(Identity("x", method="jwt"), "c")
    assert auth.may_use(Identity("", method="none"), "c")  # unauthenticated mode: no lists


@pytest.mark.parametrize(("host", "ok"), [
    (None, True), ("127.0.0.1:8808", True), ("localhost", True), ("[::1]:1", True), ("10.0.0.7", True),
    ("gw.example.com", True), ("x.internal.example", True), ("internal.example", False),
    ("evil.example", False), ("gw.example.com.evil.example", False), ("", False), ("[bad", False),
])
def test_host_rules(host: str | None, ok: bool) -> None:
    assert host_allowed(host, ("gw.example.com", "*.internal.example")) is ok


@pytest.mark.parametrize(("origin", "ok"), [
    (None, True), ("http://localhost:3000", True), ("http://127.0.0.1", True), ("https://app.example", True),
    ("https://evil.example", False), ("null", False), ("file://x", False), ("http://[::1]:9", True),
])
def test_origin_rules(origin: str | None, ok: bool) -> None:
    assert origin_allowed(origin, ("https://app.example",)) is ok


def test_json_limits() -> None:
    deep: Any = 1
    for _ in range(10):
        deep = {"a": deep}
    raw = json.dumps(deep).encode()
    check_json(deep, raw, max_depth=10)
    with pytest.raises(JsonLimitExceeded):
        check_json(deep, raw, max_depth=9)
    with pytest.raises(JsonLimitExceeded):
        check_json([[[1]]], b"[[[1]]]", max_depth=2)
    with pytest.raises(JsonLimitExceeded):
        check_json({"a": 1}, b'{"a": 0, "a": 1}', max_depth=5)


def test_log_processor_hashes_session_ids_and_anonymous_users() -> None:
    set_session_salt("fixed")
    ref = session_ref("abc")
    assert ref == session_ref("abc") and len(ref) == 12 and ref != session_ref("abd")
    event = hash_session_ids(None, "info", {"session": "abc", "user": "abc", "host_session": "abc"})
    assert event == {"session": ref, "user": ref, "host_session": ref}
    assert hash_session_ids(None, "info", {"session": "abc", "user": "alice"})["user"] == "alice"
    set_session_salt(None)
    assert session_ref("abc") != ref


def test_check_refuses_a_missing_or_empty_jwks_file(tmp_path: Path) -> None:
    from gateway.config import load_config
    from gateway.errors import ConfigError

    cfg = tmp_path / "gw.yaml"
    cfg.write_text("servers: {a: {url: 'http://127.0.0.1:1/mcp'}}\n"
                   "auth: {jwt: {issuer: i, audience: a, jwks_file: jwks.json}}\n")
    with pytest.raises(ConfigError, match=r"auth\.jwt\.jwks_file"):
        load_config(cfg)
    (tmp_path / "jwks.json").write_text('{"keys": []}')
    with pytest.raises(ConfigError, match=r"auth\.jwt\.jwks_file"):
        load_config(cfg)
    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [json.loads(jwt.algorithms.ECAlgorithm.to_jwk(
        key.public_key()))]}))
    assert load_config(cfg).gateway.auth.enabled


def test_jwt_config_needs_one_jwks_source_and_https() -> None:
    with pytest.raises(ValueError):
        JwtConfig(issuer="i", audience="a")
    with pytest.raises(ValueError):
        JwtConfig(issuer="i", audience="a", jwks_url="http://idp.example/jwks")
    JwtConfig(issuer="i", audience="a", jwks_url="http://127.0.0.1:1/jwks")


async def test_jwks_from_a_url_is_cached_and_refetched_for_a_new_key_at_most_every_30s(
    aiohttp_jwks: tuple[str, dict[str, Any]],
) -> None:
    url, served = aiohttp_jwks
    key1 = ec.generate_private_key(ec.SECP256R1())
    key2 = ec.generate_private_key(ec.SECP256R1())

    def jwk(key: Any, kid: str) -> dict[str, Any]:
        return {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key())), "kid": kid}

    def token(key: Any, kid: str) -> str:
        now = int(time.time())
        return jwt.encode({"sub": "u", "iss": "i", "aud": "a", "exp": now + 60, "groups": ["g", 3]}, key, "ES256",
                          headers={"kid": kid})

    served["body"] = {"keys": [jwk(key1, "k1")]}
    verifier = JwtVerifier(JwtConfig(issuer="i", audience="a", jwks_url=url, algorithms=("ES256",)), Path("."))
    who = await verifier.identify(token(key1, "k1"))
    assert who == Identity("u", frozenset({"g"}), "jwt")
    await verifier.identify(token(key1, "k1"))
    assert served["hits"] == 1  # cached
    served["body"] = {"keys": [jwk(key1, "k1"), jwk(key2, "k2")]}
    with pytest.raises(AuthFailed):  # k2 is new, but the set was fetched less than 30 s ago
        await verifier.identify(token(key2, "k2"))
    assert served["hits"] == 1
    verifier.jwks._fetched -= 31
    assert (await verifier.identify(token(key2, "k2"))).user == "u"
    assert served["hits"] == 2
    served["status"] = 500
    verifier.jwks._fetched -= 400  # stale, and the identity provider fails: the last good set is kept
    assert (await verifier.identify(token(key1, "k1"))).user == "u"
    with pytest.raises(AuthFailed):
        await verifier.identify("not.a.jwt")
    with pytest.raises(AuthFailed):
        await verifier.identify(jwt.encode({"sub": "u"}, "k" * 32, "HS256"))


@pytest.fixture
async def aiohttp_jwks() -> Any:
    served: dict[str, Any] = {"hits": 0, "status": 200, "body": {"keys": []}}

    async def handler(_: web.Request) -> web.Response:
        served["hits"] += 1
        return web.json_response(served["body"], status=served["status"])

    app = web.Application()
    app.router.add_get("/jwks", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/jwks", served
    await runner.cleanup()
