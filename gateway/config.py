"""The gateway config file (YAML) as frozen pydantic models, and the loader.

Loading is the only place that reads config files: `${ENV}` expansion, policy
files resolved relative to the config file, and every problem reported as one
`ConfigError` naming file, key path and problem.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gateway.errors import ConfigError
from gateway.policy.policy_config import PolicyFile

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SERVER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ListenConfig(_Frozen):
    host: str = "127.0.0.1"
    port: int = Field(default=8808, ge=0, le=65535)
    allowed_origins: tuple[str, ...] = ()
    """Browser origins allowed besides loopback ones; requests without Origin are always allowed."""
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)


class StateConfig(_Frozen):
    backend: Literal["memory", "redis"] = "memory"
    url: str | None = None
    key_prefix: str = "mcpgw:"

    @model_validator(mode="after")
    def _redis_needs_url(self) -> StateConfig:
        if self.backend == "redis" and not self.url:
            raise ValueError("backend redis needs url (e.g. redis://127.0.0.1:6379/0)")
        return self


class SessionsConfig(_Frozen):
    idle_timeout_seconds: float = Field(default=3600.0, gt=0)
    max_sessions: int = Field(default=10000, ge=1)
    buffer_ttl_seconds: float = Field(default=600.0, gt=0)
    """How long messages wait for a host that has no stream open."""
    elicitation_owner_ttl_seconds: float = Field(default=3600.0, gt=0)
    """How long a pending URL-mode elicitation stays routable to its owner."""
    completion_grace_seconds: float = Field(default=300.0, ge=0)
    """How long a completed elicitationId is remembered, so replays are recognised and dropped."""


class LoggingConfig(_Frozen):
    format: Literal["auto", "json", "console"] = "auto"
    level: Literal["debug", "info", "warning", "error"] = "info"


class ServerConfig(_Frozen):
    url: str | None = None
    headers: dict[str, str] = {}
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    policy: str | None = None
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    request_timeout_seconds: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.url is None) == (self.command is None):
            raise ValueError("give exactly one of url (Streamable HTTP) or command (stdio)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return self


class GatewayConfig(_Frozen):
    listen: ListenConfig = ListenConfig()
    state: StateConfig = StateConfig()
    sessions: SessionsConfig = SessionsConfig()
    logging: LoggingConfig = LoggingConfig()
    servers: dict[str, ServerConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> GatewayConfig:
        for name in self.servers:
            if not re.match(_SERVER_NAME, name):
                raise ValueError(f"server name {name!r} must match {_SERVER_NAME}")
        return self


class LoadedConfig(BaseModel):
    """The config plus every policy it names, resolved and validated."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    path: Path
    gateway: GatewayConfig
    policies: dict[str, PolicyFile]
    policy_paths: dict[str, Path | None]


def _expand_env(node: Any, file: str, path: str) -> Any:
    if isinstance(node, str):
        def replace(match: re.Match[str]) -> str:
            value = os.environ.get(match.group(1))
            if value is None:
                if match.group(2) is not None:
                    return match.group(2)
                raise ConfigError(file, path, f"environment variable {match.group(1)} is not set")
            return value

        return _ENV_REF.sub(replace, node)
    if isinstance(node, dict):
        return {k: _expand_env(v, file, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_env(v, file, f"{path}[{i}]") for i, v in enumerate(node)]
    return node


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(str(path), "", f"invalid YAML: {where}{problem}") from None


def _first_problem(file: str, exc: ValidationError) -> ConfigError:
    err = exc.errors()[0]
    path = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return ConfigError(file, path, msg)


def _validate(model: type[BaseModel], raw: Any, file: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(file, "", "top level must be a mapping")
    try:
        return model.model_validate(_expand_env(raw, file, ""))
    except ValidationError as exc:
        raise _first_problem(file, exc) from None


def load_policy(path: Path) -> PolicyFile:
    policy: PolicyFile = _validate(PolicyFile, _read_yaml(path), str(path))
    return policy


def load_config(path: str | Path) -> LoadedConfig:
    cfg_path = Path(path)
    gateway: GatewayConfig = _validate(GatewayConfig, _read_yaml(cfg_path), str(cfg_path))
    policies: dict[str, PolicyFile] = {}
    policy_paths: dict[str, Path | None] = {}
    cache: dict[Path, PolicyFile] = {}
    for name, server in gateway.servers.items():
        if server.policy is None:
            policies[name], policy_paths[name] = PolicyFile(), None
            continue
        ppath = (cfg_path.parent / server.policy).resolve()
        if ppath not in cache:
            if not ppath.is_file():
                raise ConfigError(str(cfg_path), f"servers.{name}.policy", f"policy file not found: {ppath}")
            cache[ppath] = load_policy(ppath)
        policies[name], policy_paths[name] = cache[ppath], ppath
    return LoadedConfig(path=cfg_path, gateway=gateway, policies=policies, policy_paths=policy_paths)
