"""Bidirectional id remapping for one hop.

The gateway issues its own integer ids on the far side and remembers the
original raw id (with its JSON type) so the answer goes back exactly as sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.core.messages import id_key


@dataclass
class IdMap:
    """Original ids (any JSON type) <-> gateway-issued integer ids."""

    next_id: int = 1
    _by_issued: dict[int, Any] = field(default_factory=dict)
    _by_original: dict[str, int] = field(default_factory=dict)

    def issue(self, original: Any) -> int:
        issued = self.next_id
        self.next_id += 1
        self._by_issued[issued] = original
        self._by_original[id_key(original)] = issued
        return issued

    def original(self, issued: Any) -> tuple[bool, Any]:
        """(found, original id) for an id this map issued; ints only, bools never."""
        if isinstance(issued, bool) or not isinstance(issued, int):
            return False, None
        if issued not in self._by_issued:
            return False, None
        return True, self._by_issued[issued]

    def issued_for(self, original: Any) -> int | None:
        return self._by_original.get(id_key(original))

    def release(self, issued: int) -> None:
        original = self._by_issued.pop(issued, None)
        if original is not None and self._by_original.get(id_key(original)) == issued:
            del self._by_original[id_key(original)]

    def __len__(self) -> int:
        return len(self._by_issued)
