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


class JsonLimitExceeded(ValueError):
    """The JSON is valid but breaks a structural limit; the message says which (no content)."""


def check_json(obj: Any, raw: bytes, *, max_depth: int) -> None:
    """Raises JsonLimitExceeded for nesting deeper than `max_depth` or a duplicate object key."""
    keys = 0
    # Level by level: every container of one depth, then their children (no recursion: upstream
    # messages may nest 1000 deep).
    level = [obj] if isinstance(obj, dict | list) else []
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
            for value in values:
                if isinstance(value, dict | list):
                    below.append(value)
        level = below
        depth += 1
    if keys and sum(1 for colon in _STRING.findall(raw) if colon) != keys:
        raise JsonLimitExceeded("duplicate key in a JSON object")
