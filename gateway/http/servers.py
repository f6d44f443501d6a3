"""The live set of upstream servers: built at start, changed in place by a live reload.

`drivers` and `endpoints` are the dicts every route, the aggregated endpoint, the sweep
and the metrics read, so a server added by a reload is served at once and a removed one
answers 404 at once. A server whose definition changed (url, command, headers, ...) is
replaced: a new driver with a new upstream; the sessions of the old one are no longer
found (their records carry the old config's generation), so hosts initialize again.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable

import orjson

from gateway.config import ServerConfig
from gateway.driver.session_driver import SessionDriver
from gateway.http.endpoint import ServerEndpoint
from gateway.logs import get_logger
from gateway.policy.policy_config import ElicitationPolicy

log = get_logger("gateway.servers")

DriverFactory = Callable[[str, ServerConfig, ElicitationPolicy, str], SessionDriver]


def generation(server: ServerConfig) -> str:
    """A short hash of what the upstream is. Not of its policy (policies swap under live sessions), nor
    of header or env values: a rotated credential keeps the sessions, and no secret is hashed into
    records."""
    raw = server.model_dump(mode="json", exclude={"policy"})
    raw["headers"], raw["env"] = sorted(raw["headers"]), sorted(raw["env"])
    return hashlib.sha256(orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


class LiveServers:
    def __init__(self, build: DriverFactory) -> None:
        self._build = build
        self.drivers: dict[str, SessionDriver] = {}
        self.endpoints: dict[str, ServerEndpoint] = {}
        self.started = False

    def put(self, name: str, server: ServerConfig, policy: ElicitationPolicy) -> SessionDriver:
        driver = self._build(name, server, policy, generation(server))
        self.drivers[name] = driver
        self.endpoints[name] = ServerEndpoint(driver)
        return driver

    async def add(self, name: str, server: ServerConfig, policy: ElicitationPolicy) -> None:
        driver = self.put(name, server, policy)
        if self.started:
            try:
                await driver.upstream.start()
            except Exception as exc:  # shown as down in /readyz and /admin; the rest goes on
                log.error("server.start_failed", server=name, error_type=type(exc).__name__)

    async def remove(self, name: str) -> None:
        driver = self.drivers.pop(name)
        self.endpoints.pop(name, None)
        await driver.close()
        with contextlib.suppress(Exception):  # a stdio child that is already gone, a closed pool
            await driver.upstream.close()

    async def start(self) -> None:
        self.started = True
        for driver in list(self.drivers.values()):
            await driver.upstream.start()

    async def close(self) -> None:
        for driver in list(self.drivers.values()):
            await driver.close()
