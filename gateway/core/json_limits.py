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
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"([ \t\r\n]*:)?', re.DOTALL)


class JsonLimitExceeded(ValueError):
    """The JSON is valid but breaks a structural limit; the message says which (no content)."""


def check_json(obj: Any, raw: bytes, *, max_depth: int) -> None:
    """Raises JsonLimitExceeded for nesting deeper than `max_depth` or a duplicate object key."""
    keys = 0
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise JsonLimitExceeded(f"JSON nested deeper than {max_depth} levels")
            keys += len(node)
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            if depth > max_depth:
                raise JsonLimitExceeded(f"JSON nested deeper than {max_depth} levels")
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    if keys and sum(1 for colon in _STRING.findall(raw) if colon) != keys:
        raise JsonLimitExceeded("duplicate key in a JSON object")
