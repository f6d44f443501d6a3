"""Blind sets 1 and 2 rewritten with one evasion class: how many asks stay blocked, harmless forms pass.

`python tests/corpus/evasion_stress.py [CLASS ...]` rewrites the longest word of every field title of
every sensitive and harmless row (rows that already carry an evasion and link rows are left out) with
one evasion class, for two random seeds, and prints misses (among asks blocked as written) and false
blocks per class. The figures are quoted in docs/policy-accuracy.md; the test suite checks a subset
(tests/unit/test_policy_corpus.py).
"""

from __future__ import annotations

import copy
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import CORPUS, load_corpus

from gateway.policy.sensitive_fields import SensitiveFieldDetector

Evasion = Callable[[str, random.Random], str]


def _cut(word: str, rnd: random.Random, mark: str) -> str:
    if len(word) < 4:
        return word
    k = rnd.randrange(1, len(word) - 1)
    return word[:k] + mark + word[k:]


def _swap(word: str, rnd: random.Random) -> str:
    if len(word) < 5:
        return word
    k = rnd.randrange(1, len(word) - 2)
    return word[:k] + word[k + 1] + word[k] + word[k + 2:]


def _drop(word: str, rnd: random.Random) -> str:
    if len(word) < 5:
        return word
    k = rnd.randrange(1, len(word) - 1)
    return word[:k] + word[k + 1:]


CLASSES: dict[str, Evasion] = {
    "dots": lambda w, r: ".".join(w),
    "spaced": lambda w, r: " ".join(w),
    "middle-dot": lambda w, r: "·".join(w),
    "hyphen": lambda w, r: _cut(w, r, "-"),
    "underscore": lambda w, r: _cut(w, r, "_"),
    "slash": lambda w, r: _cut(w, r, "/"),
    "markdown": lambda w, r: "**" + _cut(w, r, "**"),
    "leet": lambda w, r: w.translate(str.maketrans({"a": "4", "e": "3", "o": "0", "i": "1", "s": "5"})),
    "cyrillic": lambda w, r: w.translate(str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х"})),
    "zero-width": lambda w, r: "\u200b".join(w),
    "rlo": lambda w, r: "\u202e" + w[::-1] + "\u202c",
    "case-flips": lambda w, r: "".join(c.upper() if r.random() < 0.4 else c.lower() for c in w),
    "swap": _swap,
    "drop": _drop,
}


def _rewrite(title: str, evasion: Evasion, rnd: random.Random) -> str:
    words = title.split(" ")
    i = max(range(len(words)), key=lambda k: len(words[k]))
    words[i] = evasion(words[i], rnd)
    return " ".join(words)


def stress(evasion: Evasion, rows: list[dict[str, Any]], detector: SensitiveFieldDetector,
           seeds: int = 2) -> tuple[int, int, int, int]:
    """(misses, asks, false blocks, harmless forms) with `evasion` applied."""
    misses = asks = false_blocks = harmless = 0
    for seed in range(seeds):
        rnd = random.Random(seed)
        for row in rows:
            if row["category"] == "link" or row.get("evasion") or row["expect"] not in ("block", "allow"):
                continue
            params = copy.deepcopy(row["params"])
            changed = False
            for prop in params.get("requestedSchema", {}).get("properties", {}).values():
                if isinstance(prop, dict) and isinstance(prop.get("title"), str) and prop["title"]:
                    prop["title"] = _rewrite(prop["title"], evasion, rnd)
                    changed = True
            if not changed:
                continue
            if row["expect"] == "block" and row.get("expect_rule") == "sensitive_fields":
                if detector.find(row["params"]):
                    asks += 1
                    misses += not detector.find(params)
            elif row["expect"] == "allow":
                harmless += 1
                false_blocks += bool(detector.find(params))
    return misses, asks, false_blocks, harmless


def blind_rows() -> list[dict[str, Any]]:
    return load_corpus(CORPUS / "blind1") + load_corpus(CORPUS / "blind2")


def main() -> None:
    detector = SensitiveFieldDetector()
    rows = blind_rows()
    for name in sys.argv[1:] or list(CLASSES):
        misses, asks, false_blocks, harmless = stress(CLASSES[name], rows, detector)
        print(f"{name}: {misses}/{asks} asks missed, {false_blocks}/{harmless} harmless forms blocked")


if __name__ == "__main__":
    main()
