"""Structural limits on parsed JSON: nesting depth and duplicate object keys.

orjson already refuses invalid UTF-8 and lone surrogates; it keeps the *last* of
duplicate keys silently. A gateway that forwards the original bytes must not let
the policy see one value while a peer whose parser keeps the *first* sees another,
so a message with a duplicate key is refused.

Duplicates are found without a second parser: in valid JSON, a string token followed
by optional whitespace and `:` is an object key, so counting those in the bytes
and comparing with the keys of the parsed objects finds any duplicate.
"""

from __future__ import annotations

import re
from typing import Any

# Every string token, with the `:` that makes it a key. Each match starts at a string's opening
# quote (the search resumes after the previous string), so quotes inside strings never misalign.
# Written as an unrolled loop (runs of plain characters, then one escape): the per-character
# alternation it replaces cost ten times as much on long strings.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"([ \t\r\n]*:)?', re.DOTALL)
_QUOTE_THEN_SPACE = re.compile(rb'"[ \t\r\n]')
_CONTAINERS = (dict, list)


class JsonLimitExceeded(ValueError):
    """The JSON is valid but breaks a structural limit; the message says which (no content)."""


def check_json(obj: Any, raw: bytes, *, max_depth: int) -> None:
    """Raises JsonLimitExceeded for nesting deeper than `max_depth` or a duplicate object key."""
    keys = 0
    # Level by level: every container of one depth, then their children (no recursion: upstream
    # messages may nest 1000 deep).
    # A tuple, not `dict | list`: isinstance with a union type costs twice as much (every message pays it).
    level = [obj] if isinstance(obj, _CONTAINERS) else []
    depth = 1
    while level:
        if depth > max_depth:
            raise JsonLimitExceeded(f"JSON nested deeper than {max_depth} levels")
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                keys += len(node)
                values: Any = node.values()
            else:
                values = node
            below += [value for value in values if isinstance(value, _CONTAINERS)]
        level = below
        depth += 1
    if keys and _quick_key_count(raw) != keys and sum(1 for colon in _STRING.findall(raw) if colon) != keys:
        raise JsonLimitExceeded("duplicate key in a JSON object")


def _quick_key_count(raw: bytes) -> int:
    """An upper bound on the keys written in `raw`, found by counting `":` (a C loop, ten times cheaper
    than the token scan). Exact in compact JSON with no backslash and no quote before whitespace: every `"`
    then delimits a string, so each key adds one `":`; a string that starts with `:` adds one more. So a
    count equal to the parsed objects' keys proves there is no duplicate; any other count is settled by
    the exact scan. -1 where the bound does not hold."""
    if b"\\" in raw or _QUOTE_THEN_SPACE.search(raw) is not None:
        return -1
    return raw.count(b'":')
