"""Live reload of servers and policies: on SIGHUP and when the config file or a policy file changes.

A reload loads and validates the whole config again (every policy it names)
before anything changes. Then:
- each server whose policy differs gets a new `ElicitationGate`, swapped into its
  driver in one assignment: a decision under way finishes with the gate it started
  with, the next one uses the new gate. Sessions, streams and rate-limit counters
  are untouched;
- servers added to `servers` are served at once; servers removed answer 404 at once
  (their calls in flight end); a server whose definition changed (url, command,
  headers, transport, ...) is replaced by a new one, and its old sessions are no
  longer found (hosts initialize again): see gateway/http/servers.py.

A file that does not load keeps everything as it was; the log says why
(`config.reload_failed`, with file, key path and problem). What changed is logged
as key paths (`config.reloaded`), never as values (headers may hold credentials).
Anything else (listen, state, sessions, auth, logging, tracing, admin, aggregate)
takes a restart: such changes are logged as `config.restart_required` and not applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.config import LoadedConfig, ServerConfig, load_config
from gateway.elicitation_gate import ElicitationGate
from gateway.errors import ConfigError
from gateway.http.servers import LiveServers
from gateway.logs import get_logger
from gateway.metrics import GatewayMetrics
from gateway.policy.policy_config import ElicitationPolicy, PolicyFile

log = get_logger("gateway.reload")

GateFactory = Callable[[str, ElicitationPolicy], ElicitationGate]
FileSignature = tuple[int, int, int] | None


class PolicyReloader:
    def __init__(
        self, cfg: LoadedConfig, servers: LiveServers, make_gate: GateFactory, metrics: GatewayMetrics | None = None,
    ) -> None:
        self.started = cfg
        """The config the process started with: everything but servers and policies stays as it was."""
        self.current = cfg
        """The config in effect for servers and policies."""
        self.policies: dict[str, PolicyFile] = dict(cfg.policies)
        self.policy_paths: dict[str, Path | None] = dict(cfg.policy_paths)
        self._servers = servers
        self._drivers = servers.drivers
        self._make_gate = make_gate
        self._metrics = metrics
        self._lock = asyncio.Lock()
        self._seen: dict[Path, FileSignature] = {}
        self._task: asyncio.Task[None] | None = None
        self._signal_installed = False
        self._pending: set[asyncio.Task[bool]] = set()
        self.reloads = 0

    # -- what triggers a reload ------------------------------------------------------------------

    def start(self) -> None:
        self._seen = {p: _signature(p) for p in self.watched()}
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
            loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
            self._signal_installed = True
        reload_cfg = self.started.gateway.reload
        if reload_cfg.watch:
            self._task = asyncio.create_task(self._watch(reload_cfg.poll_seconds))

    async def stop(self) -> None:
        if self._signal_installed:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for task in list(self._pending):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _on_sighup(self) -> None:
        task = asyncio.create_task(self.reload("sighup"))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def watched(self) -> list[Path]:
        paths = {self.started.path.resolve()}
        paths.update(p for p in self.policy_paths.values() if p is not None)
        return sorted(paths)

    async def _watch(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            current = {p: _signature(p) for p in self.watched()}
            changed = [p for p, sig in current.items() if self._seen.get(p) != sig]
            if changed:
                await self.reload("file_changed", changed=[str(p) for p in changed])

    # -- the reload itself -----------------------------------------------------------------------

    async def reload(self, trigger: str, changed: list[str] | None = None) -> bool:
        """Validate, then swap. True when the new policies are in effect (or nothing changed)."""
        async with self._lock:
            watched_before = self.watched()
            try:
                new = await asyncio.to_thread(load_config, self.started.path)
            except ConfigError as exc:
                self._seen.update({p: _signature(p) for p in watched_before})
                self._count("failed")
                log.error("config.reload_failed", trigger=trigger, error=str(exc), file=exc.file,
                          key=exc.path or None, problem=exc.problem, kept="previous policies")
                return False
            restart = _restart_keys(self.started, new)
            old_servers, new_servers = self.current.gateway.servers, new.gateway.servers
            removed = sorted(set(old_servers) - set(new_servers))
            added = sorted(set(new_servers) - set(old_servers))
            replaced = sorted(n for n in set(old_servers) & set(new_servers)
                              if _server_raw(old_servers[n]) != _server_raw(new_servers[n]))
            server_changes = {n: _diff(_server_raw(old_servers[n]), _server_raw(new_servers[n]), "")
                              for n in replaced}
            for name in removed + replaced:
                await self._servers.remove(name)
                self.policies.pop(name, None)
                self.policy_paths.pop(name, None)
            for name in replaced + added:
                await self._servers.add(name, new_servers[name], new.policies[name].elicitation)
                self.policies[name] = new.policies[name]
                self.policy_paths[name] = new.policy_paths[name]
            self.current = new
            swapped: dict[str, list[str]] = {}
            gates: dict[str, ElicitationGate] = {}
            for name in self._drivers:
                if name not in new.policies:
                    continue
                policy = new.policies[name]
                if policy != self.policies.get(name):
                    gates[name] = self._make_gate(name, policy.elicitation)
                    swapped[name] = _diff(_dump(self.policies.get(name)), _dump(policy), "")
                    if new.policy_paths.get(name) != self.policy_paths.get(name):
                        swapped[name].insert(0, "(policy file)")
            # All gates were built before any swap: a failure above changes nothing.
            for name, gate in gates.items():
                self._drivers[name].gate = gate
                self.policies[name] = new.policies[name]
            for name in self._drivers:
                if name in new.policy_paths:
                    self.policy_paths[name] = new.policy_paths[name]
            self._seen = {p: _signature(p) for p in self.watched()}
            self.reloads += 1
            if restart:
                log.warning("config.restart_required", trigger=trigger, keys=restart,
                            detail="these changes are not applied until the gateway restarts")
            if removed or added or replaced:
                log.warning("config.servers_changed", trigger=trigger, added=added, removed=removed,
                            replaced={n: c for n, c in sorted(server_changes.items())},
                            detail="sessions of removed and replaced servers end; hosts initialize again")
            if swapped or removed or added or replaced:
                self._count("applied")
                log.info("config.reloaded", trigger=trigger, files=changed,
                         servers=sorted(swapped), changes={n: c for n, c in sorted(swapped.items())})
            else:
                self._count("unchanged")
                log.info("config.reload_unchanged", trigger=trigger, files=changed)
            return True

    def _count(self, result: str) -> None:
        if self._metrics is not None:
            self._metrics.reloads.labels(result).inc()


def _signature(path: Path) -> FileSignature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _dump(policy: PolicyFile | None) -> dict[str, Any]:
    return policy.model_dump(mode="json") if policy is not None else {}


def _diff(old: Any, new: Any, path: str) -> list[str]:
    """Key paths whose values differ; the values themselves are not reported."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            out.extend(_diff(old.get(key), new.get(key), f"{path}.{key}" if path else str(key)))
        return out
    return [] if old == new else [path or "(root)"]


def _server_raw(server: ServerConfig) -> dict[str, Any]:
    return server.model_dump(mode="json", exclude={"policy"})  # policies swap under live sessions


def _restart_keys(started: LoadedConfig, new: LoadedConfig) -> list[str]:
    old_raw = started.gateway.model_dump(mode="json", exclude={"servers"})
    new_raw = new.gateway.model_dump(mode="json", exclude={"servers"})
    return _diff(old_raw, new_raw, "")
