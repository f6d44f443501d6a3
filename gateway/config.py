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

from gateway.core.namespacing import SEP as NAME_SEPARATOR
from gateway.errors import ConfigError
from gateway.policy.policy_config import PolicyFile

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SERVER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}"
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def header_value_ok(value: str) -> bool:
    """An HTTP field value without line breaks or control characters (no header injection)."""
    return _HEADER_VALUE.fullmatch(value) is not None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ListenConfig(_Frozen):
    """Where hosts connect (`serve --host/--port` override these)."""

    host: str = "127.0.0.1"
    """Address to listen on; 0.0.0.0 for every interface (in a container)."""
    port: int = Field(default=8808, ge=0, le=65535)
    """TCP port; 0 picks a free one."""
    allowed_origins: tuple[str, ...] = ()
    """Browser origins allowed besides loopback ones; requests without Origin are always allowed."""
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest host request body accepted (413 above)."""
    allowed_hosts: tuple[str, ...] = ()
    """`Host` header names accepted besides IP literals and localhost (DNS-rebinding guard); a leading
    `*.` matches subdomains. Put the names hosts use to reach the gateway here (e.g. the load balancer's)."""
    max_json_depth: int = Field(default=64, ge=4, le=512)
    """Nesting depth of a host's JSON body; deeper bodies are refused (400)."""
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    """Deadline for reading a request body; a host that sends it slower gets 408."""
    header_timeout_seconds: float = Field(default=15.0, gt=0)
    """Deadline for a connection to deliver a complete request head (slow-loris guard)."""
    write_timeout_seconds: float = Field(default=30.0, gt=0)
    """A host stream whose socket accepts nothing for this long (its send buffer full) is disconnected,
    so a slow consumer holds at most one transport buffer of memory."""
    uvloop: bool = True
    """Serve on uvloop's event loop (measured faster than asyncio's: docs/performance.md); false, or
    `serve --no-uvloop`, for asyncio's own. Without uvloop installed, asyncio's, with a warning."""


class StateConfig(_Frozen):
    """Sessions, pending requests, URL-mode owners and rate limits (docs/state.md)."""

    backend: Literal["memory", "redis"] = "memory"
    """memory: one process; redis: shared by replicas, any replica serves any request."""
    url: str | None = None
    """Redis URL (redis:// or rediss://), required with backend redis."""
    key_prefix: str = "mcpgw:"
    """Prefix of every Redis key, so several gateways can share one Redis."""

    @model_validator(mode="after")
    def _redis_needs_url(self) -> StateConfig:
        if self.backend == "redis" and not self.url:
            raise ValueError("backend redis needs url (e.g. redis://127.0.0.1:6379/0)")
        return self


class SessionsConfig(_Frozen):
    """Host sessions: lifetimes and bounds."""

    idle_timeout_seconds: float = Field(default=3600.0, gt=0)
    """A session unused this long (on every replica) is ended, upstream too."""
    max_sessions: int = Field(default=10000, ge=1)
    """Live host sessions at most (all servers, all replicas); initialize beyond it gets 503."""
    buffer_ttl_seconds: float = Field(default=600.0, gt=0)
    """How long messages wait for a host that has no stream open."""
    elicitation_owner_ttl_seconds: float = Field(default=3600.0, gt=0)
    """How long a pending URL-mode elicitation stays routable to its owner."""
    completion_grace_seconds: float = Field(default=300.0, ge=0)
    """How long a completed elicitationId is remembered, so replays are recognised and dropped."""
    max_sessions_per_user: int = Field(default=100, ge=1)
    """Sessions one authenticated user may hold at once (all servers); more initializes get 429.
    Not applied in unauthenticated mode, where every session is its own user."""
    max_notifications_per_second: float = Field(default=200.0, gt=0)
    """Notifications a server may send one host session per second (and in a burst); the excess is
    dropped and logged (`upstream.notification_flood`), so a flooding server cannot swamp a host."""
    max_pending_server_requests: int = Field(default=64, ge=1)
    """Server requests (elicitations included) awaiting one host session's answer; more are refused."""
    resume_grace_seconds: float = Field(default=10.0, ge=0)
    """After a host's request stream drops, how long the call goes on into the store so the host can
    resume it (GET + Last-Event-ID, any replica); then the server gets notifications/cancelled."""
    elicitation_timeout_seconds: float = Field(default=600.0, gt=0)
    """How long a call waits for the host to answer one of its elicitations (or sampling, roots
    requests; for a 2026-07-28 host, its retry) before the call ends with -32014 and is cancelled upstream."""
    keepalive_seconds: float = Field(default=15.0, gt=0)
    """Keepalive comments on idle host streams; also how often a GET stream re-checks its session."""


class LoggingConfig(_Frozen):
    """Logs on stdout (docs/logs-and-metrics.md)."""

    format: Literal["auto", "json", "console"] = "auto"
    """json: one object per line (for a SIEM); console: for people; auto: console on a terminal, else json.
    `serve --log-format` overrides it."""
    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level written."""
    session_salt: str | None = None
    """Key of the session-id hash in log lines; set the same value on every replica so lines of one
    session agree across replicas. Unset: a random key per process."""
    request_lines: float = Field(default=1.0, ge=0.0, le=1.0)
    """Share of the `request` lines (one per host request) written for requests whose outcome is `ok`,
    spread evenly (0.1: every tenth). Any other outcome is always written; elicitation decisions and
    every other event are never thinned."""


class PoolConfig(_Frozen):
    """Connections to one URL server. Requests (POST, DELETE, and the GETs that resume a POST's reply)
    and standalone GET streams use two separate pools, so a request never waits behind idle streams.
    With `transport: sse` the requests are the POSTs of messages and the streams each session's
    event stream."""

    max_connections: int = Field(default=100, ge=1)
    """Requests in flight at once (each holds one connection until its reply is read or dropped)."""
    max_streams: int = Field(default=1000, ge=1)
    """Standalone GET streams open at once."""
    acquire_timeout_seconds: float = Field(default=5.0, gt=0)
    """How long a request or stream waits for a free slot before it fails (JSON-RPC -32010)."""


class ResumeConfig(_Frozen):
    """Resuming a POST's SSE reply that ends before its answer (SSE polling, Last-Event-ID)."""

    max_attempts: int = Field(default=3, ge=0)
    """Failed reopen attempts in a row before giving up; 0 turns resumption off."""
    max_resumes: int = Field(default=1000, ge=1)
    """Reopens for one reply in total, successful or not."""
    default_retry_seconds: float = Field(default=1.0, ge=0)
    """Wait before reopening when the server gave no `retry`."""
    max_retry_seconds: float = Field(default=30.0, ge=0)
    """Upper bound on the server's `retry`."""


class RestartConfig(_Frozen):
    """Supervision of a stdio server's process, and reconnecting a legacy SSE server's event stream
    (docs/upstream.md). A lost channel of an initialized session is brought back after
    `backoff_base_seconds`, doubled for each loss or failed attempt in a row, capped at
    `backoff_max_seconds`, with jitter (a random wait between half and all of it); the session's
    `initialize` is replayed. Calls in flight at the loss fail at once (-32012)."""

    backoff_base_seconds: float = Field(default=0.5, gt=0)
    """Wait before the first restart after a loss."""
    backoff_max_seconds: float = Field(default=30.0, gt=0)
    """Cap on the wait; a process or stream that ran at least this long starts again from the base."""
    max_attempts: int = Field(default=5, ge=1)
    """Failed restarts in a row (could not start, or did not answer `initialize` alike) before the
    session is given up: the host's next request gets 404 and it initializes again."""

    @model_validator(mode="after")
    def _base_below_cap(self) -> RestartConfig:
        if self.backoff_base_seconds > self.backoff_max_seconds:
            raise ValueError("backoff_base_seconds must not exceed backoff_max_seconds")
        return self


class StderrConfig(_Frozen):
    """What becomes of a stdio server's stderr: `upstream.stderr` log lines (docs/logs-and-metrics.md)."""

    log: bool = True
    """Log each line (with the server name and process id); false reads and discards it. The gateway cannot
    tell what a server writes there: turn this off for a server that writes secrets to stderr."""
    max_line_bytes: int = Field(default=2048, ge=64, le=1024 * 1024)
    """Longer lines are cut here (`truncated: true`); the rest of the line is skipped."""
    max_lines_per_second: float = Field(default=20.0, gt=0)
    """Lines logged per second (and in a burst) for all processes of this server together; the excess is
    counted in one `upstream.stderr_dropped` line a second at most."""


class ServerConfig(_Frozen):
    """One upstream MCP server: `url` (Streamable HTTP, or legacy HTTP+SSE with `transport: sse`) or
    `command` (stdio), and its policy."""

    url: str | None = None
    """Endpoint of the server (http:// or https://): the Streamable HTTP endpoint, or with `transport: sse`
    the SSE URL (GET) of a legacy HTTP+SSE server."""
    transport: Literal["streamable-http", "sse"] | None = None
    """URL servers only: `streamable-http` (unset means this) or `sse`, the legacy HTTP+SSE transport of
    revision 2024-11-05 (GET the SSE URL, POST to the endpoint it names, same origin only)."""
    headers: dict[str, str] = {}
    """Headers sent to this server only, e.g. its credential via ${ENV}; never logged, never shown."""
    bearer_token_file: str | None = None
    """File holding this server's bearer token (relative to the config file; one trailing newline is
    dropped): sent as `Authorization: Bearer <token>`. Re-read when the file changes (a rotated
    Kubernetes secret), so no restart is needed."""
    headers_from_files: dict[str, str] = {}
    """Header name -> file holding its value (relative to the config file; one trailing newline is
    dropped), e.g. `{X-Api-Key: /var/run/secrets/crm/api-key}`. Re-read when the file changes."""
    command: str | None = None
    """stdio server: the program to run, one process per host session."""
    args: tuple[str, ...] = ()
    """stdio server: its arguments."""
    env: dict[str, str] = {}
    """stdio server: extra environment variables."""
    cwd: str | None = None
    """stdio server: working directory."""
    policy: str | None = None
    """Policy file, relative to the config file; none means every policy default."""
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    """How long connecting to the server (or starting it) may take."""
    request_timeout_seconds: float | None = Field(default=None, gt=0)
    """The server's time to answer one host request, not counting time the host takes to answer the
    call's elicitations (the clock pauses; `sessions.elicitation_timeout_seconds` bounds that wait).
    Past it the host gets -32013 and the server `notifications/cancelled`. None: no bound."""
    pool: PoolConfig = PoolConfig()
    """URL servers only (Streamable HTTP and `transport: sse`)."""
    resume: ResumeConfig = ResumeConfig()
    """Streamable HTTP only."""
    restart: RestartConfig = RestartConfig()
    """stdio (the process) and `transport: sse` (the event stream) only."""
    stderr: StderrConfig = StderrConfig()
    """stdio only."""
    protocol: Literal["auto", "legacy", "2026-07-28"] = "auto"
    """The revision family spoken to this server: `legacy` (initialize, sessions: 2025-03-26 to
    2025-11-25), `2026-07-28` (no sessions, input_required results), or `auto`: ask it with
    `server/discover` once and remember the answer."""

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.url is None) == (self.command is None):
            raise ValueError("give exactly one of url (Streamable HTTP) or command (stdio)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.command is not None and self.transport is not None:
            raise ValueError("transport applies to url servers only (a command server speaks stdio)")
        from_files = [*self.headers_from_files, *(["Authorization"] if self.bearer_token_file is not None else [])]
        if from_files and self.url is None:
            raise ValueError("bearer_token_file and headers_from_files are for url servers (stdio has no headers)")
        names = [h.lower() for h in (*self.headers, *from_files)]
        twice = sorted({h for h in names if names.count(h) > 1})
        if twice:
            raise ValueError(f"header {twice[0]!r} is given twice (headers, headers_from_files, bearer_token_file)")
        for name in (*self.headers, *self.headers_from_files):
            if not re.fullmatch(_HEADER_NAME, name):
                raise ValueError(f"header name {name[:60]!r} is not a valid HTTP header name")
        for name, value in self.headers.items():
            if not header_value_ok(value):  # the value itself is never put in a message: it may be a secret
                raise ValueError(f"header {name!r}: value holds a line break or another control character")
        return self


class ApiKeyConfig(_Frozen):
    """One static API key, stored hashed (`elicitation-gateway hash-key` prints the hash)."""

    user: str = Field(min_length=1, max_length=200)
    groups: tuple[str, ...] = ()
    hash: str = Field(pattern=r"^scrypt\$")


class JwtConfig(_Frozen):
    """Bearer JWTs checked against a JWKS (a file, or a URL fetched with a cache)."""

    issuer: str
    audience: str
    jwks_file: str | None = None
    """Relative to the config file."""
    jwks_url: str | None = None
    jwks_cache_seconds: float = Field(default=300.0, gt=0)
    algorithms: tuple[Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
                              "EdDSA"], ...] = ("RS256", "ES256")
    leeway_seconds: float = Field(default=30.0, ge=0, le=600)
    """Clock skew allowed on exp, nbf and iat."""
    user_claim: str = "sub"
    groups_claim: str = "groups"

    @model_validator(mode="after")
    def _one_source(self) -> JwtConfig:
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("give exactly one of jwks_file or jwks_url")
        if self.jwks_url is not None and not self.jwks_url.startswith("https://") and not _loopback_url(self.jwks_url):
            raise ValueError("jwks_url must be https:// (http:// only on loopback)")
        return self


class AccessConfig(_Frozen):
    """Which servers an authenticated user may use: default, plus their user entry, plus their groups'."""

    default: tuple[str, ...] = ("*",)
    """Servers every authenticated user may use; "*" is every server; [] makes the lists below the only grants."""
    users: dict[str, tuple[str, ...]] = {}
    groups: dict[str, tuple[str, ...]] = {}


class AuthConfig(_Frozen):
    """Host authentication. Neither api_keys nor jwt: unauthenticated local mode (loud warning at start-up)."""

    api_keys: tuple[ApiKeyConfig, ...] = ()
    jwt: JwtConfig | None = None
    access: AccessConfig = AccessConfig()

    @property
    def enabled(self) -> bool:
        return bool(self.api_keys) or self.jwt is not None


class AdminConfig(_Frozen):
    """The admin endpoints (`/metrics`, `/admin`): their own credential (API keys, hashed), and the decisions page."""

    api_keys: tuple[str, ...] = ()
    """Hashes from `elicitation-gateway hash-key`. None configured: admin endpoints answer loopback clients only."""
    enabled: bool = False
    """Serve the decisions page at /admin (behind the admin credential)."""
    recent_decisions: int = Field(default=500, ge=10, le=100000)
    """Decisions kept for the page: in the state store for the whole fleet, and in each replica (its fallback)."""

    @model_validator(mode="after")
    def _hashes(self) -> AdminConfig:
        for h in self.api_keys:
            if not h.startswith("scrypt$"):
                raise ValueError("admin api_keys are hashes from `elicitation-gateway hash-key` (scrypt$...)")
        return self


def _loopback_url(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        return url.startswith("http://") and urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")
    except ValueError:
        return False


class TracingConfig(_Frozen):
    """OpenTelemetry traces. Off unless `otlp_endpoint` is set: then no exporter runs and spans cost nothing."""

    otlp_endpoint: str | None = None
    """OTLP/HTTP traces endpoint, e.g. http://otel-collector:4318/v1/traces."""
    headers: dict[str, str] = {}
    """Extra headers for the collector (e.g. an API key via ${ENV})."""
    service_name: str = "elicitation-gateway"
    """`service.name` of the spans."""
    sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """Share of new traces recorded; a host's sampled `traceparent` is always followed."""

    @model_validator(mode="after")
    def _endpoint_is_http(self) -> TracingConfig:
        if self.otlp_endpoint is not None and not self.otlp_endpoint.startswith(("http://", "https://")):
            raise ValueError("otlp_endpoint must start with http:// or https://")
        return self


class ReloadConfig(_Frozen):
    """Live reload of policies: on SIGHUP always, and when a watched file changes."""

    watch: bool = True
    """Poll the config file and every policy file it names for changes."""
    poll_seconds: float = Field(default=2.0, gt=0)


class AggregateConfig(_Frozen):
    """The aggregated endpoint /mcp: every server the host may use, behind one URL."""

    enabled: bool = True
    list_timeout_seconds: float = Field(default=5.0, gt=0)
    """How long a list (tools, prompts, resources) waits for each server; a server that is slower
    or down is left out of that answer and logged, and the others are served."""
    discover_seconds: float = Field(default=2.0, gt=0)
    """How often an open GET stream on /mcp looks for servers whose sessions opened since."""


class GatewayConfig(_Frozen):
    """The gateway config file."""

    listen: ListenConfig = ListenConfig()
    auth: AuthConfig = AuthConfig()
    admin: AdminConfig = AdminConfig()
    state: StateConfig = StateConfig()
    sessions: SessionsConfig = SessionsConfig()
    logging: LoggingConfig = LoggingConfig()
    tracing: TracingConfig = TracingConfig()
    reload: ReloadConfig = ReloadConfig()
    servers: dict[str, ServerConfig] = Field(min_length=1)
    """Upstream servers by name (letters, digits, `_.-`, never `__`); hosts connect to /servers/<name>/mcp,
    or to all of them at once at /mcp (where `__` separates the server from its tools' names)."""
    aggregate: AggregateConfig = AggregateConfig()

    @model_validator(mode="after")
    def _names(self) -> GatewayConfig:
        for name in self.servers:
            if not re.match(_SERVER_NAME, name):
                raise ValueError(f"server name {name!r} must match {_SERVER_NAME}")
            if NAME_SEPARATOR in name:
                raise ValueError(
                    f"server name {name!r} must not contain {NAME_SEPARATOR!r} (it separates names on /mcp)")
        access = self.auth.access
        for grants in (access.default, *access.users.values(), *access.groups.values()):
            for name in grants:
                if name != "*" and name not in self.servers:
                    raise ValueError(f"auth.access names server {name!r}, which is not configured")
        return self


class LoadedConfig(BaseModel):
    """The config plus every policy it names, resolved and validated."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    path: Path
    gateway: GatewayConfig
    policies: dict[str, PolicyFile]
    policy_paths: dict[str, Path | None]
    missing: tuple[ConfigError, ...] = ()
    """Environment variables and secret files that are missing, when loaded with `allow_missing`
    (`check --allow-missing-env`); empty otherwise (a missing one is an error)."""


def _expand_env(node: Any, file: str, path: str, missing: list[ConfigError]) -> Any:
    """`${NAME}` and `${NAME:-default}` in string values; each unset NAME without a default is
    added to `missing` (its reference is left as written)."""
    if isinstance(node, str):
        def replace(match: re.Match[str]) -> str:
            value = os.environ.get(match.group(1))
            if value is None:
                if match.group(2) is not None:
                    return match.group(2)
                missing.append(ConfigError(file, path, f"environment variable {match.group(1)} is not set"))
                return match.group(0)
            return value

        return _ENV_REF.sub(replace, node)
    if isinstance(node, dict):
        return {k: _expand_env(v, file, f"{path}.{k}" if path else str(k), missing) for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_env(v, file, f"{path}[{i}]", missing) for i, v in enumerate(node)]
    return node


def _raise_missing(missing: list[ConfigError]) -> None:
    if missing:
        first = missing[0]
        more = [m.problem.split()[2] if m.problem.startswith("environment") else m.path for m in missing[1:]]
        suffix = f" (and {len(more)} more: {', '.join(more)})" if more else ""
        raise ConfigError(first.file, first.path, first.problem + suffix)


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


def _validate(model: type[BaseModel], raw: Any, file: str, missing: list[ConfigError] | None = None) -> Any:
    """The validated model. Unset environment variables go to `missing` when given (the caller
    reports them), else they are the error."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(file, "", "top level must be a mapping")
    unset: list[ConfigError] = []
    expanded = _expand_env(raw, file, "", unset)
    if missing is None:
        _raise_missing(unset)
    else:
        missing.extend(unset)
    try:
        return model.model_validate(expanded)
    except ValidationError as exc:
        raise _first_problem(file, exc) from None


def load_policy(path: Path, missing: list[ConfigError] | None = None) -> PolicyFile:
    policy: PolicyFile = _validate(PolicyFile, _read_yaml(path), str(path), missing)
    return policy


def load_config(path: str | Path, *, allow_missing: bool = False) -> LoadedConfig:
    """The config and its policies, every file checked. A missing environment variable or secret
    file is an error naming it; with `allow_missing` (linting without secrets) they are listed in
    `LoadedConfig.missing` instead."""
    cfg_path = Path(path)
    missing: list[ConfigError] = []
    gateway: GatewayConfig = _validate(GatewayConfig, _read_yaml(cfg_path), str(cfg_path), missing)
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
            cache[ppath] = load_policy(ppath, missing)
        policies[name], policy_paths[name] = cache[ppath], ppath
    jwt_cfg = gateway.auth.jwt
    if jwt_cfg is not None and jwt_cfg.jwks_file is not None:
        _check_jwks_file(cfg_path, (cfg_path.parent / jwt_cfg.jwks_file).resolve())
    missing.extend(_check_secret_files(cfg_path, gateway))
    if not allow_missing:
        _raise_missing(missing)
    return LoadedConfig(path=cfg_path, gateway=gateway, policies=policies, policy_paths=policy_paths,
                        missing=tuple(missing))


def _check_secret_files(cfg_path: Path, gateway: GatewayConfig) -> list[ConfigError]:
    """Every secret file readable and usable as a header value; missing ones are returned (the caller
    decides), any other problem is the error. Values are read here only to be checked."""
    from gateway.upstream.credentials import SecretFileError, read_secret

    missing: list[ConfigError] = []
    for name, server in gateway.servers.items():
        files = [(f"servers.{name}.headers_from_files.{h}", p) for h, p in server.headers_from_files.items()]
        if server.bearer_token_file is not None:
            files.append((f"servers.{name}.bearer_token_file", server.bearer_token_file))
        for key, file in files:
            try:
                read_secret(cfg_path.parent / file)
            except SecretFileError as exc:
                if not exc.missing:
                    raise ConfigError(str(cfg_path), key, exc.problem) from None
                missing.append(ConfigError(str(cfg_path), key, exc.problem))
    return missing


def _check_jwks_file(cfg_path: Path, path: Path) -> None:
    import jwt

    try:
        jwks = jwt.PyJWKSet.from_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(cfg_path), "auth.jwt.jwks_file", f"cannot read {path}: {exc.strerror or exc}") from None
    except (jwt.PyJWKSetError, ValueError) as exc:
        raise ConfigError(str(cfg_path), "auth.jwt.jwks_file", f"not a usable JWKS: {exc}") from None
    if not jwks.keys:
        raise ConfigError(str(cfg_path), "auth.jwt.jwks_file", "the JWKS holds no usable key")
