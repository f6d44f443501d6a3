"""check_json against a reference built on the standard library's parser, on generated JSON texts
with escapes, whitespace around colons, strings that look like keys, duplicates and deep nesting."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core.json_limits import JsonLimitExceeded, check_json

# Characters that stress the string scanner: quotes, backslashes, colons, braces, non-ASCII.
TEXT = st.text(alphabet=st.sampled_from(['a', '"', '\\', ':', '{', '}', ',', ' ', 'é', '\n', '/']), max_size=6)
SPACE = st.sampled_from(["", " ", "\n\t "])


# Compact JSON with no backslash: the quick key count decides these (json_limits._quick_key_count).
PLAIN = st.text(alphabet=st.sampled_from(['a', 'b', ':', '{', '}', ',', 'é', '/', '[']), max_size=4)


def json_texts(text: st.SearchStrategy[str] = TEXT, space: st.SearchStrategy[str] = SPACE) -> st.SearchStrategy[str]:
    scalars = st.one_of(text.map(json.dumps), st.integers().map(str), st.sampled_from(["true", "null", "1.5"]))

    def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        pairs = st.lists(st.tuples(text.map(json.dumps), space, children), max_size=4)
        obj = pairs.map(lambda ps: "{" + ",".join(f"{k}{sp}:{sp}{v}" for k, sp, v in ps) + "}")
        arr = st.lists(children, max_size=4).map(lambda vs: "[" + ",".join(vs) + "]")
        return st.one_of(obj, arr)

    return st.recursive(scalars, containers, max_leaves=20)


def reference(text: str, max_depth: int) -> str | None:
    """What check_json must say: 'duplicate', 'deep' (either may be reported when both hold), or None."""
    duplicate = False

    def pairs(ps: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicate
        duplicate |= len({k for k, _ in ps}) != len(ps)
        return dict(ps)

    obj = json.loads(text, object_pairs_hook=pairs)

    def depth(node: Any) -> int:
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        return 0 if children is None else 1 + max((depth(c) for c in children), default=0)

    deep = depth(obj) > max_depth
    return "deep" if deep and not duplicate else "duplicate" if duplicate and not deep else (
        "either" if deep else None)


@settings(max_examples=400, deadline=None)
@given(st.one_of(json_texts(), json_texts(PLAIN, st.just(""))), st.integers(min_value=1, max_value=4))
def test_check_json_agrees_with_the_reference(text: str, max_depth: int) -> None:
    raw = text.encode()
    expected = reference(text, max_depth)
    try:
        check_json(orjson.loads(raw), raw, max_depth=max_depth)
        got = None
    except JsonLimitExceeded as exc:
        got = "deep" if "deeper" in str(exc) else "duplicate"
    assert got == expected or (expected == "either" and got is not None), (text, got, expected)


@pytest.mark.parametrize("raw", [
    b'{"a":1,"a":2}', b'{"a" :1, "b":{"c":1,"c" \n: 2}}', b'[{"k\\"":1},{"x":"\\"k\\":","k\\"":2,"k\\"":3}]',
])
def test_duplicate_keys_are_found_behind_escapes_and_whitespace(raw: bytes) -> None:
    with pytest.raises(JsonLimitExceeded, match="duplicate"):
        check_json(orjson.loads(raw), raw, max_depth=64)


@pytest.mark.parametrize(("raw", "duplicate"), [
    (b'{"a":":x"}', False),  # a value that starts with ":" counts twice in the quick count: the exact scan decides
    (b'{"a:":1,"b":[":",":"]}', False),
    (b'{"a:":1,"a:":2}', True),
    (b'{"a":":","a":1}', True),
    (b'{"m":"notifications/message","m":"elicitation/create"}', True),
])
def test_compact_json_without_escapes_is_judged_as_the_exact_scan_judges_it(raw: bytes, duplicate: bool) -> None:
    if duplicate:
        with pytest.raises(JsonLimitExceeded, match="duplicate"):
            check_json(orjson.loads(raw), raw, max_depth=64)
    else:
        check_json(orjson.loads(raw), raw, max_depth=64)


def test_depth_is_counted_in_containers_and_deep_nesting_needs_no_recursion() -> None:
    raw = b"[" * 3 + b"]" * 3
    check_json(orjson.loads(raw), raw, max_depth=3)
    with pytest.raises(JsonLimitExceeded, match="deeper than 2"):
        check_json(orjson.loads(raw), raw, max_depth=2)
    deep = b'{"a":' * 1000 + b"1" + b"}" * 1000
    check_json(orjson.loads(deep), deep, max_depth=1000)
    with pytest.raises(JsonLimitExceeded, match="deeper than 999"):
        check_json(orjson.loads(deep), deep, max_depth=999)
