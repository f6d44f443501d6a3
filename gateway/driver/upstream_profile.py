"""Which revisions an upstream server speaks, learned once per process, and what it says about itself.

`protocol: legacy` or `2026-07-28` in the config fixes the answer. `auto` asks the server:
`server/discover` (2026-07-28) and `initialize` (then DELETE). A server that speaks both is
spoken to in the host's own era, so nothing needs translating; a server that speaks one
is spoken to in that one, and the gateway translates.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from gateway.core import eras
from gateway.core.messages import LATEST_VERSION, version_at_most
from gateway.core.raw_json import encode
from gateway.errors import UPSTREAM_FAILED, UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.logs import get_logger
from gateway.upstream.connector import Upstream

log = get_logger("gateway.profile")

GATEWAY_INFO = {"name": "mcp-elicitation-gateway", "version": "0.1.0"}


@dataclass(frozen=True)
class ServerDescription:
    capabilities: dict[str, Any]
    server_info: Any
    instructions: Any


_UNKNOWN = object()


class ProfileCache:
    """What is known of one server's revisions, each family asked about only when a host needs it."""

    def __init__(self, upstream: Upstream, protocol: Literal["auto", "legacy", "2026-07-28"]) -> None:
        self.upstream = upstream
        self.protocol = protocol
        self._modern: Any = _UNKNOWN  # the discover result, or None: not spoken
        self._legacy: Any = _UNKNOWN  # the initialize result, or None: not spoken
        self._lock = asyncio.Lock()

    async def modern(self) -> dict[str, Any] | None:
        """The server's `server/discover` result, or None if it does not speak 2026-07-28."""
        return await self._learn("_modern", self._discover, self.protocol != "legacy")

    async def legacy(self) -> dict[str, Any] | None:
        """The server's `initialize` result, or None if it does not speak the handshake era."""
        return await self._learn("_legacy", self._initialize, self.protocol != "2026-07-28")

    async def _learn(self, attr: str, probe: Any, allowed: bool) -> dict[str, Any] | None:
        if getattr(self, attr) is _UNKNOWN:
            async with self._lock:
                if getattr(self, attr) is _UNKNOWN:
                    setattr(self, attr, await probe() if allowed else None)
                    log.info("upstream.profile", server=self.upstream.name, family=attr.strip("_"),
                             spoken=getattr(self, attr) is not None)
        known: dict[str, Any] | None = getattr(self, attr)
        return known

    async def version_for(self, host_version: str) -> str:
        """The revision spoken upstream for a host speaking `host_version`: its own family if the
        server speaks it, else the other one (translated)."""
        if eras.is_modern(host_version):
            if await self.modern() is not None:
                return eras.MODERN_VERSION
            if await self.legacy() is not None:
                return LATEST_VERSION
        else:
            if await self.legacy() is not None:
                return version_at_most(host_version)
            if await self.modern() is not None:
                return eras.MODERN_VERSION
        raise UpstreamFailure(UPSTREAM_FAILED, f"server {self.upstream.name!r} answered neither "
                              "server/discover nor initialize")

    async def describe(self) -> ServerDescription:
        """Capabilities and identity, from whichever answer the gateway already has."""
        discovered = self._modern if isinstance(self._modern, dict) else None
        source = discovered or (self._legacy if isinstance(self._legacy, dict) else None) or {}
        server_info = (source.get("_meta") or {}).get(eras.META_SERVER_INFO) if discovered else source.get("serverInfo")
        capabilities = source.get("capabilities")
        return ServerDescription(capabilities if isinstance(capabilities, dict) else {}, server_info,
                                 source.get("instructions"))

    async def _discover(self) -> dict[str, Any] | None:
        msg = eras.with_envelope(
            {"jsonrpc": "2.0", "id": "gateway-discover", "method": "server/discover", "params": {}}, {}, GATEWAY_INFO)
        for _ in range(2):  # as the SDK client does: a -32022 naming 2026-07-28 as supported is tried once more
            result, error = await self._ask(msg, eras.routing_headers(msg), None)
            versions = result.get("supportedVersions") if result else None
            if isinstance(versions, list) and eras.MODERN_VERSION in versions:
                return result
            data = error.get("data") if error else None
            supported = data.get("supported") if isinstance(data, dict) else None
            if not (error and error.get("code") == eras.UNSUPPORTED_VERSION and isinstance(supported, list)
                    and eras.MODERN_VERSION in supported):
                return None
        return None

    async def _initialize(self) -> dict[str, Any] | None:
        msg = {"jsonrpc": "2.0", "id": "gateway-probe", "method": "initialize", "params": {
            "protocolVersion": LATEST_VERSION, "capabilities": {}, "clientInfo": GATEWAY_INFO}}
        session: list[str | None] = [None]
        result, _ = await self._ask(msg, None, session)
        if session[0] is not None:
            try:
                await self.upstream.end_session(session_id=session[0], protocol_version=LATEST_VERSION)
            except UpstreamFailure:
                pass
        return result

    async def _ask(
        self, msg: dict[str, Any], headers: dict[str, str] | None, session: list[str | None] | None
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(result, error) of one request without a session; both None if the server answered neither."""
        version = eras.MODERN_VERSION if headers else None
        try:
            async with self.upstream.post(encode(msg), session_id=None, protocol_version=version,
                                          headers=headers) as reply:
                if session is not None:
                    session[0] = reply.session_id
                async for answer in reply.messages:
                    if isinstance(answer, dict) and answer.get("id") == msg["id"]:
                        result, error = answer.get("result"), answer.get("error")
                        return (result if isinstance(result, dict) else None,
                                error if isinstance(error, dict) else None)
        except UpstreamFailure as exc:
            if exc.code == UPSTREAM_UNREACHABLE:
                raise
            log.info("upstream.probe_refused", server=self.upstream.name, method=msg["method"], reason=exc.message)
        return None, None
