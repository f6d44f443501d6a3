"""Host authentication (static API keys, JWT bearer tokens), server allow-lists, and the admin credential.

- `Authenticator.identify(request)` -> `Identity`, or raises `AuthFailed` (401).
  Unauthenticated mode (no keys, no JWT configured) gives every request the
  anonymous identity and the session id stays the user.
- `Authenticator.may_use(identity, server)`: the allow-lists (`auth.access`).
- `admin_guard(request)` protects admin endpoints (`/metrics`, and any later
  `/admin` route): `AdminGuard.check(request)` raises 401/403 unless the request
  carries one of `admin.api_keys` as `Authorization: Bearer <key>`; with no admin
  key configured only loopback clients are served.

API keys are stored as `scrypt$<fp>$<n>$<r>$<p>$<salt>$<hash>`, where `<fp>` is
8 hex digits of the key's SHA-256 so that a key nobody configured is refused
without running the KDF (a flood of wrong keys costs no scrypt). A key that
passed scrypt once is remembered (by its SHA-256) for the process's life, so a
host pays the KDF once, not per request. Keys and tokens are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import secrets
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import orjson
from aiohttp import web

from gateway.config import AdminConfig, AuthConfig, JwtConfig
from gateway.identity import Identity
from gateway.logs import get_logger

log = get_logger("gateway.auth")

ANONYMOUS = Identity(user="", method="none")
IDENTITY_KEY = "gateway.identity"
"""Where the app stores the request's `Identity` (request[IDENTITY_KEY])."""

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_KEY_PREFIX = "mgw_"
_VERIFIED_MAX = 4096
_JWKS_MIN_REFRESH_SECONDS = 30.0
_JWKS_MAX_BYTES = 256 * 1024


class AuthFailed(Exception):
    """401/403 with a fixed, non-revealing message; `reason` goes to the log only."""

    def __init__(self, status: int, message: str, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


# -- API keys ------------------------------------------------------------------------------------


def new_api_key() -> str:
    return _KEY_PREFIX + secrets.token_urlsafe(32)


def _fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def hash_api_key(key: str, *, n: int = _SCRYPT_N, r: int = _SCRYPT_R, p: int = _SCRYPT_P) -> str:
    """The config form of a key: scrypt (stdlib) with a random salt."""
    if len(key) < 16:
        raise ValueError("an API key must have at least 16 characters")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(key.encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    b64 = base64.urlsafe_b64encode
    return f"scrypt${_fingerprint(key)}${n}${r}${p}${b64(salt).decode()}${b64(digest).decode()}"


def verify_api_key(key: str, stored: str) -> bool:
    try:
        scheme, fp, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt" or not hmac.compare_digest(fp, _fingerprint(key)):
            return False
        expected = base64.urlsafe_b64decode(digest)
        got = hashlib.scrypt(key.encode(), salt=base64.urlsafe_b64decode(salt), n=int(n), r=int(r), p=int(p),
                             dklen=len(expected), maxmem=256 * 1024 * 1024)
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


def _stored_fingerprint(stored: str) -> str:
    parts = stored.split("$")
    return parts[1] if len(parts) == 7 else ""


class _KeyRing:
    """Hashed keys -> a value, verified with scrypt once per distinct key (off the event loop)."""

    def __init__(self, entries: list[tuple[str, Any]]) -> None:
        self._by_fp: dict[str, list[tuple[str, Any]]] = {}
        for stored, value in entries:
            self._by_fp.setdefault(_stored_fingerprint(stored), []).append((stored, value))
        self._verified: OrderedDict[bytes, Any] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self._by_fp)

    async def lookup(self, key: str) -> Any | None:
        digest = hashlib.sha256(key.encode()).digest()
        if digest in self._verified:
            self._verified.move_to_end(digest)
            return self._verified[digest]
        candidates = self._by_fp.get(_fingerprint(key), [])
        for stored, value in candidates:
            if await asyncio.to_thread(verify_api_key, key, stored):
                self._verified[digest] = value
                while len(self._verified) > _VERIFIED_MAX:
                    self._verified.popitem(last=False)
                return value
        return None


# -- JWT -----------------------------------------------------------------------------------------


class JwksCache:
    """The JWKS from a file (read once) or a URL (fetched, cached, refetched for an unknown kid at most
    every 30 s so forged kids cannot make the gateway hammer the identity provider)."""

    def __init__(self, cfg: JwtConfig, base_dir: Path) -> None:
        self._cfg = cfg
        self._set: jwt.PyJWKSet | None = None
        self._fetched = 0.0
        self._lock = asyncio.Lock()
        if cfg.jwks_file is not None:
            path = (base_dir / cfg.jwks_file).resolve()
            self._set = jwt.PyJWKSet.from_dict(orjson.loads(path.read_bytes()))

    async def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        if self._cfg.jwks_url is not None:
            stale = time.monotonic() - self._fetched > self._cfg.jwks_cache_seconds
            if self._set is None or stale or (self._find(kid) is None and self._may_refresh()):
                await self._refresh()
        return self._find(kid)

    def _may_refresh(self) -> bool:
        return time.monotonic() - self._fetched >= _JWKS_MIN_REFRESH_SECONDS

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if self._set is None:
            return None
        keys = [k for k in self._set.keys if kid is None or k.key_id == kid]
        return keys[0] if keys and (kid is not None or len(keys) == 1) else None

    async def _refresh(self) -> None:
        async with self._lock:
            if self._set is not None and time.monotonic() - self._fetched < 1.0:
                return  # another request just refreshed it
            self._fetched = time.monotonic()
            url = self._cfg.jwks_url
            assert url is not None
            try:
                timeout = aiohttp.ClientTimeout(total=5)
                async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url) as resp:
                    if resp.status != 200:
                        raise ValueError(f"status {resp.status}")
                    body = await resp.content.read(_JWKS_MAX_BYTES + 1)
                    if len(body) > _JWKS_MAX_BYTES:
                        raise ValueError("JWKS too large")
                self._set = jwt.PyJWKSet.from_dict(orjson.loads(body))
                log.info("auth.jwks_fetched", keys=len(self._set.keys))
            except (aiohttp.ClientError, TimeoutError, ValueError, jwt.PyJWKSetError) as exc:
                # Keep the last good set; without one every token is refused (fail closed).
                log.error("auth.jwks_fetch_failed", error_type=type(exc).__name__)


class JwtVerifier:
    def __init__(self, cfg: JwtConfig, base_dir: Path) -> None:
        self.cfg = cfg
        self.jwks = JwksCache(cfg, base_dir)

    async def identify(self, token: str) -> Identity:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthFailed(401, "invalid credentials", "jwt.malformed") from None
        if header.get("alg") not in self.cfg.algorithms:
            raise AuthFailed(401, "invalid credentials", "jwt.algorithm_not_allowed")
        kid = header.get("kid")
        key = await self.jwks.key_for(kid if isinstance(kid, str) else None)
        if key is None:
            raise AuthFailed(401, "invalid credentials", "jwt.unknown_key")
        try:
            claims = jwt.decode(
                token, key=key, algorithms=list(self.cfg.algorithms), audience=self.cfg.audience,
                issuer=self.cfg.issuer, leeway=self.cfg.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthFailed(401, "invalid credentials", "jwt.expired") from None
        except jwt.PyJWTError as exc:
            raise AuthFailed(401, "invalid credentials", f"jwt.{type(exc).__name__}") from None
        user = claims.get(self.cfg.user_claim)
        if not isinstance(user, str) or not user or len(user) > 200:
            raise AuthFailed(401, "invalid credentials", "jwt.no_user_claim")
        raw_groups = claims.get(self.cfg.groups_claim, [])
        groups = frozenset(g for g in raw_groups if isinstance(g, str)) if isinstance(raw_groups, list) else frozenset()
        return Identity(user=user, groups=groups, method="jwt")


# -- host authentication -------------------------------------------------------------------------


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthFailed(401, "invalid credentials", "authorization.not_bearer")
    return value.strip()


class Authenticator:
    def __init__(self, cfg: AuthConfig, base_dir: Path) -> None:
        self.cfg = cfg
        self.enabled = cfg.enabled
        self._keys = _KeyRing([
            (k.hash, Identity(user=k.user, groups=frozenset(k.groups), method="api_key")) for k in cfg.api_keys
        ])
        self._jwt = JwtVerifier(cfg.jwt, base_dir) if cfg.jwt is not None else None

    async def identify(self, request: web.Request) -> Identity:
        if not self.enabled:
            return ANONYMOUS
        token = _bearer(request)
        if token is None:
            token = request.headers.get("X-API-Key")
        if not token:
            raise AuthFailed(401, "authentication required", "credentials.missing")
        if self._jwt is not None and token.count(".") == 2:  # a JWS compact token
            return await self._jwt.identify(token)
        found = await self._keys.lookup(token) if self._keys else None
        if isinstance(found, Identity):
            return found
        raise AuthFailed(401, "invalid credentials", "api_key.unknown")

    def may_use(self, identity: Identity, server: str) -> bool:
        if not identity.authenticated:
            return True
        access = self.cfg.access
        grants = set(access.default) | set(access.users.get(identity.user, ()))
        for group in identity.groups:
            grants |= set(access.groups.get(group, ()))
        return "*" in grants or server in grants


# -- the admin credential ------------------------------------------------------------------------


def _loopback_peer(request: web.Request) -> bool:
    peer = request.remote
    if not peer:
        return False
    try:
        return ipaddress.ip_address(peer.split("%")[0]).is_loopback
    except ValueError:
        return False


class AdminGuard:
    """The credential of admin endpoints, separate from hosts' credentials (a host key never opens them)."""

    def __init__(self, cfg: AdminConfig) -> None:
        self._keys = _KeyRing([(h, True) for h in cfg.api_keys])

    @property
    def configured(self) -> bool:
        return bool(self._keys)

    async def check(self, request: web.Request) -> None:
        """Raises AuthFailed unless the request may use an admin endpoint."""
        if not self._keys:
            if _loopback_peer(request):
                return
            raise AuthFailed(403, "admin endpoints answer loopback clients only until admin.api_keys is set",
                             "admin.not_loopback")
        token = _bearer(request)
        if token is None:
            raise AuthFailed(401, "admin credential required", "admin.credentials_missing")
        if await self._keys.lookup(token) is None:
            raise AuthFailed(401, "invalid credentials", "admin.invalid")


ADMIN_GUARD_KEY = web.AppKey("admin_guard", AdminGuard)


async def admin_guard(request: web.Request) -> None:
    """Call first in every admin handler (`/metrics`, `/admin/...`): raises AuthFailed (401/403) when the
    request lacks the admin credential. The app's error boundary turns AuthFailed into the answer."""
    await request.app[ADMIN_GUARD_KEY].check(request)
