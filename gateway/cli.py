"""`elicitation-gateway serve | check | explain | policies schema` (shared contract: CLI).

Every error is one line on stderr and a non-zero exit: 2 for a bad command line,
config or input, 1 when the gateway cannot run (e.g. the port is taken).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import orjson

from gateway.config import LoadedConfig, load_config
from gateway.errors import ConfigError
from gateway.policy import lexicon_cache

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
PROG = "elicitation-gateway"


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, not argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_INVALID)


def _version() -> str:
    from gateway.http.admin import gateway_version

    return gateway_version()


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="MCP gateway that polices elicitation")
    p.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", required=True)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--log-format", choices=["json", "console"],
                       help="log rendering; overrides logging.format in the config")
    serve.add_argument("--no-uvloop", action="store_true",
                       help="serve on asyncio's own event loop; overrides listen.uvloop in the config")
    check = sub.add_parser("check", help="validate the config and every policy it names")
    check.add_argument("--config", required=True)
    check.add_argument("--allow-missing-env", action="store_true",
                       help="report unset environment variables and missing secret files as warnings (exit 0): "
                            "for linting in CI without the secrets")
    explain = sub.add_parser("explain", help="run a server's elicitation policy offline")
    explain.add_argument("--config", required=True)
    explain.add_argument("--server", required=True)
    explain.add_argument("request_json", help="file with elicitation/create params (JSON or JSON Lines), or -")
    hash_key = sub.add_parser(
        "hash-key", help="hash an API key for auth.api_keys or admin.api_keys (a new key when none is given)"
    )
    hash_key.add_argument("--stdin", action="store_true", help="read the key from stdin instead of generating one")
    policies = sub.add_parser("policies", help="policy file tools")
    policies_sub = policies.add_subparsers(dest="policies_command", required=True, parser_class=_Parser)
    policies_sub.add_parser("schema", help="print the JSON Schema of the policy file")
    return p


def hash_key(from_stdin: bool, stdin: TextIO, out: TextIO) -> int:
    """Prints `key: ...` (only for a generated key) and `hash: ...`; the key itself is never stored."""
    from gateway.http.auth import hash_api_key, new_api_key

    if from_stdin:
        key = stdin.readline().strip()
    else:
        key = new_api_key()
        out.write(f"key: {key}\n")
    try:
        out.write(f"hash: {hash_api_key(key)}\n")
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _load(path: str, allow_missing: bool = False) -> LoadedConfig:
    try:
        return load_config(path, allow_missing=allow_missing)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID) from None


def _inputs(stream: TextIO) -> Iterator[tuple[int, Any]]:
    """One JSON object, or JSON Lines; yields (line number, parsed or the error)."""
    text = stream.read()
    try:
        yield 1, orjson.loads(text)
        return
    except orjson.JSONDecodeError:
        pass
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            yield number, ValueError(f"line {number}: not valid JSON ({exc.msg})")


def explain(cfg: LoadedConfig, server: str, stream: TextIO, out: TextIO) -> int:
    from gateway.policy.engine import PolicyEngine

    if server not in cfg.policies:
        print(f"unknown server {server!r}; configured: {', '.join(sorted(cfg.policies))}", file=sys.stderr)
        return EXIT_INVALID
    engine = PolicyEngine(server, cfg.policies[server].elicitation)
    locate = PolicyLocator(cfg.policy_paths.get(server))
    status = EXIT_OK
    for _, params in _inputs(stream):
        if isinstance(params, ValueError) or not isinstance(params, dict):
            reason = str(params) if isinstance(params, ValueError) else "input is not a JSON object"
            out.write(orjson.dumps({"decision": "block", "rules": ["input.invalid"], "reason": reason}).decode() + "\n")
            status = EXIT_INVALID
            continue
        decision = engine.decide(params)
        explained = decision.explain_json()
        explained["fired"] = fired(decision, params, locate)
        out.write(orjson.dumps(explained).decode() + "\n")
    return status


# Where each rule lives in the policy file.
RULE_KEYS: dict[str, tuple[str, ...]] = {
    "mode.not_offered": ("elicitation", "modes"),
    "schema.invalid": ("elicitation", "schema_bounds"),
    "sensitive_fields": ("elicitation", "sensitive_fields"),
    "form_urls": ("elicitation", "form_urls"),
    "url_mode.target": ("elicitation", "url_mode", "allowed_hosts"),
    "rate_limit": ("elicitation", "rate_limit"),
}


class PolicyLocator:
    """Finds a policy key's line and text in the policy file (the default policy has no file)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._root: Any = None
        self._lines: list[str] = []
        if path is not None:
            import yaml

            try:  # the file was valid when loaded; if it has gone since, explain without lines
                text = path.read_text(encoding="utf-8")
                self._root = yaml.compose(text, Loader=yaml.SafeLoader)
                self._lines = text.splitlines()
            except (OSError, yaml.YAMLError):
                self._root = None

    def find(self, keys: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {"key": ".".join(keys)}
        if self.path is not None:
            out["file"] = str(self.path)
        node = self._root
        for key in keys:
            node = next((v for k, v in getattr(node, "value", []) if getattr(k, "value", None) == key), None) \
                if node is not None and node.id == "mapping" else None
        if node is None:
            out["text"] = "(not set in the policy file: the default applies)"
            return out
        line = node.start_mark.line
        out["line"] = line + 1
        out["text"] = self._lines[line].strip() if line < len(self._lines) else ""
        return out


def fired(decision: Any, params: dict[str, Any], locate: PolicyLocator) -> list[dict[str, Any]]:
    """For each rule that fired: the policy key, line and text behind it, and the field path it fired on."""
    out: list[dict[str, Any]] = []
    changed = _changed_paths(params, decision.params) if decision.params is not None else []
    for i, rule in enumerate(decision.rules):
        entry: dict[str, Any] = {"rule": rule}
        keys = RULE_KEYS.get(rule)
        if keys is not None:
            entry["policy"] = locate.find(keys)
        last = i == len(decision.rules) - 1
        if decision.decision == "block" and last and decision.where:
            entry["field"] = decision.where
        elif rule == "form_urls" and changed:
            entry["fields"] = changed
        out.append(entry)
    return out


def _changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    """Paths where the params reaching the host differ from the server's (the origin tag aside)."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            if not path and key == "_meta":
                continue
            sub = f"{path}.{key}" if path else str(key)
            paths.extend(_changed_paths(before.get(key), after.get(key), sub))
        return paths
    if path == "message" and isinstance(before, str) and isinstance(after, str) and after.endswith(before) \
            and after.startswith("["):
        return []
    return [] if before == after else [path]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "hash-key":
        return hash_key(args.stdin, sys.stdin, sys.stdout)
    if args.command == "policies":
        from gateway.policy.schema_export import policy_schema_text

        sys.stdout.write(policy_schema_text())
        return EXIT_OK
    cfg = _load(args.config, args.command == "check" and args.allow_missing_env)
    if args.command != "serve":
        try:
            return _offline(args, cfg)
        finally:  # stdout is the command's output: what the lexicon cache could not do goes to stderr
            for level, event, fields in lexicon_cache.take_notes():
                if level == "warning":
                    print(f"warning: {event}: {fields['reason']} ({fields['path']})", file=sys.stderr)
    from gateway.serve import serve

    try:
        serve(cfg, host=args.host, port=args.port, log_format=args.log_format,
              use_uvloop=False if args.no_uvloop else None)
    except OSError as exc:  # e.g. the port is taken
        print(f"{PROG}: cannot serve: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _offline(args: argparse.Namespace, cfg: LoadedConfig) -> int:
    """`check` and `explain` (only `explain` builds the lexicon)."""
    if args.command == "check":
        for missing in cfg.missing:
            print(f"config warning: {missing}", file=sys.stderr)
        servers = ", ".join(f"{n} ({p.name if p else 'default policy'})" for n, p in cfg.policy_paths.items())
        print(f"ok: {cfg.path}: {len(cfg.gateway.servers)} server(s): {servers}")
        return EXIT_OK
    if args.request_json == "-":
        return explain(cfg, args.server, sys.stdin, sys.stdout)
    try:
        with open(args.request_json, encoding="utf-8") as fh:
            return explain(cfg, args.server, fh, sys.stdout)
    except OSError as exc:
        print(f"cannot read {args.request_json}: {exc.strerror}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    raise SystemExit(main())
