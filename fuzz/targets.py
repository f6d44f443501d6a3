"""Fuzz targets: each takes bytes and must never raise anything but the errors it documents.

- `jsonrpc`: raw JSON parsing (orjson + depth and duplicate-key checks) agrees with a
  reference parser (the stdlib's, with a duplicate-key hook) on which inputs are refused.
- `sse`: the incremental SSE parser, any chunking, stays within its bounds.
- `core`: the core's event handling, upstream and host side, on any JSON value.
- `policy`: the policy engine, the text normalizers and the detectors on any params/text.

`run.py` drives them with atheris (coverage-guided) where it is installed;
tests/fuzz runs them with hypothesis for a bounded time in CI.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from gateway.core import host_side, upstream_gate
from gateway.core.json_limits import JsonLimitExceeded, check_json
from gateway.core.raw_json import encode, parse
from gateway.core.session_record import SessionRecord
from gateway.core.upstream_gate import StreamContext
from gateway.policy.engine import PolicyEngine
from gateway.policy.link_stripping import strip_links
from gateway.policy.policy_config import ElicitationPolicy
from gateway.policy.secret_lexicon import split_words, squash
from gateway.policy.text_normalization import camel_marked, normalize_text, undo_overrides
from gateway.policy.url_target import UrlTargetRules, check_url_target
from gateway.sse import SseParser

_SURROGATE = re.compile("[\ud800-\udfff]")
REC = SessionRecord("s1", "srv", "alice", "2025-11-25", "2025-11-25", frozenset({"form", "url"}), "up-1")
ENGINE = PolicyEngine("srv", ElicitationPolicy.model_validate({"modes": ["form", "url"]}))
URL_RULES = UrlTargetRules(allowed_hosts=("auth.example.com", "*.example.org"))


def _reference(data: bytes) -> tuple[bool, Any]:
    """(accepted, value) by the stdlib parser, refusing duplicate keys and lone surrogates."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate")
        return dict(items)

    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False, None
    if _SURROGATE.search(json.dumps(value, ensure_ascii=False)):
        return False, None  # lone surrogates from \uD800 escapes: orjson refuses them, so must we
    return True, value


def jsonrpc(data: bytes) -> None:
    try:
        msg = parse(data)
    except orjson.JSONDecodeError:
        msg = None
        ok = False
    else:
        ok = True
    ref_ok, ref = _reference(data)
    if ok and not ref_ok:
        raise AssertionError(f"accepted what the reference refuses: {data[:200]!r}")
    if ok:
        if msg != ref and not _lossy(ref):
            raise AssertionError(f"parsed differently from the reference: {data[:200]!r}")
        try:
            check_json(msg, data, max_depth=64)
        except JsonLimitExceeded:
            pass
        if isinstance(msg, dict):
            encode(msg)


def _lossy(value: Any) -> bool:
    """Where orjson and the stdlib legitimately differ: integers past 64 bits (orjson reads a float;
    found by fuzzing, kept in fuzz/regressions) and NaN, which is never equal to itself."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and not -(2**63) <= node < 2**64:
            return True
        if isinstance(node, float) and node != node:
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def sse(data: bytes) -> None:
    if not data:
        return
    split = data[0] % 7 + 1
    body = data[1:]
    parser = SseParser(4096, max_field_bytes=512)
    total = 0
    try:
        for i in range(0, len(body), split):
            for event in parser.feed(body[i:i + split]):
                total += len(event.data.encode())
                if len(event.data.encode()) > 4096:
                    raise AssertionError("event over its bound")
    except ValueError:
        return  # a stream over its bounds is refused (the caller ends it)


def core(data: bytes) -> None:
    try:
        msg = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    for ctx in (upstream_gate.STANDALONE, StreamContext(awaiting=1, progress_tokens=frozenset({"t"}))):
        upstream_gate.from_upstream(REC, "srv", msg, ctx)
    host_side.from_host(REC, msg)
    if isinstance(msg, dict) and "id" in msg and "method" not in msg:
        host_side.host_answer(REC, msg, {"id": 7, "schema": {"type": "object", "properties": {}}})


def policy(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    folded = normalize_text(text)
    camel_marked(text)
    undo_overrides(text)
    split_words(folded)
    squash(folded)
    strip_links(text)
    check_url_target(text, URL_RULES)
    try:
        params = orjson.loads(data)
    except orjson.JSONDecodeError:
        params = {"mode": "form", "message": text,
                  "requestedSchema": {"type": "object", "properties": {text[:40] or "f": {"type": "string"}}}}
    if isinstance(params, dict):
        decision = ENGINE.decide(params)
        if decision.decision not in ("allow", "modify", "block"):
            raise AssertionError(decision.decision)


TARGETS = {"jsonrpc": jsonrpc, "sse": sse, "core": core, "policy": policy}
