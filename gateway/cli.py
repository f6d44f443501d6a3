"""`elicitation-gateway serve | check | explain` (shared contract: CLI)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import orjson

from gateway.config import LoadedConfig, load_config
from gateway.errors import ConfigError

EXIT_OK = 0
EXIT_INVALID = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="elicitation-gateway", description="MCP gateway that polices elicitation")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", required=True)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    check = sub.add_parser("check", help="validate the config and every policy it names")
    check.add_argument("--config", required=True)
    explain = sub.add_parser("explain", help="run a server's elicitation policy offline")
    explain.add_argument("--config", required=True)
    explain.add_argument("--server", required=True)
    explain.add_argument("request_json", help="file with elicitation/create params (JSON or JSON Lines), or -")
    return p


def _load(path: str) -> LoadedConfig:
    try:
        return load_config(path)
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
    status = EXIT_OK
    for _, params in _inputs(stream):
        if isinstance(params, ValueError) or not isinstance(params, dict):
            reason = str(params) if isinstance(params, ValueError) else "input is not a JSON object"
            out.write(orjson.dumps({"decision": "block", "rules": ["input.invalid"], "reason": reason}).decode() + "\n")
            status = EXIT_INVALID
            continue
        out.write(orjson.dumps(engine.decide(params).explain_json()).decode() + "\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = _load(args.config)
    if args.command == "check":
        servers = ", ".join(f"{n} ({p.name if p else 'default policy'})" for n, p in cfg.policy_paths.items())
        print(f"ok: {cfg.path}: {len(cfg.gateway.servers)} server(s): {servers}")
        return EXIT_OK
    if args.command == "explain":
        if args.request_json == "-":
            return explain(cfg, args.server, sys.stdin, sys.stdout)
        try:
            with open(args.request_json, encoding="utf-8") as fh:
                return explain(cfg, args.server, fh, sys.stdout)
        except OSError as exc:
            print(f"cannot read {args.request_json}: {exc.strerror}", file=sys.stderr)
            return EXIT_INVALID
    from gateway.serve import serve

    serve(cfg, host=args.host, port=args.port)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
