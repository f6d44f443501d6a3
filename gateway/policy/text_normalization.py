"""Text normalization shared by the policy detectors.

`normalize_text` folds away the spelling tricks used to slip a word past a
matcher: compatibility forms (fullwidth, ligatures, math alphabets), Unicode
format characters (zero-width joiners, soft hyphens, bidi marks), case,
combining marks, and look-alike letters from other scripts (Cyrillic "а",
Greek "ο", ...) which are mapped to their ASCII skeleton using the data of the
`confusable-homoglyphs` package.  Lexicon terms are normalized with the same
function, so a Russian term and a Russian text still meet after folding.
"""

from __future__ import annotations

import json
import re
import unicodedata
from importlib import resources

__all__ = [
    "camel_split",
    "collapse_spaced_letters",
    "leet_variants",
    "normalize_text",
]

# Scripts of languages we match natively: folding them onto ASCII would only
# merge distinct letters of real words (e.g. Arabic digits onto "o").
_NATIVE_SCRIPT_PREFIXES = (
    "CJK",
    "HIRAGANA",
    "KATAKANA",
    "HANGUL",
    "ARABIC",
    "DEVANAGARI",
    "IDEOGRAPHIC",
    "HALFWIDTH",
    "FULLWIDTH",
)
_MARK_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
_MAX_HOPS = 3
# Look-alikes the data set only links to other non-ASCII letters.
_MANUAL_SKELETON = {"ω": "w", "ѡ": "w", "ԝ": "w", "ш": "w", "т": "t", "τ": "t", "м": "m", "п": "n",
                    "η": "n", "κ": "k", "ν": "v", "υ": "u", "χ": "x", "ѕ": "s", "ј": "j", "ԁ": "d",
                    "ɡ": "g", "в": "b", "ь": "b", "ι": "i", "і": "i"}


def _strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if unicodedata.category(ch) not in _MARK_CATEGORIES)


def _ascii_target(candidate: str) -> str | None:
    """The single ASCII letter/digit `candidate` stands for, if any."""
    folded = _strip_marks(candidate).casefold()
    if len(folded) == 1 and folded.isascii() and folded.isalnum():
        return folded
    return None


def _load_confusables() -> dict[str, list[str]]:
    data_file = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    raw: dict[str, list[dict[str, str]]] = json.loads(data_file.read_text(encoding="utf-8"))
    return {char: [entry["c"] for entry in entries] for char, entries in raw.items()}


def _build_skeleton_table() -> dict[int, str]:
    """Map each look-alike character to one ASCII letter (letters beat digits)."""
    graph = _load_confusables()
    table: dict[int, str] = {}
    for char in graph:
        if len(char) != 1 or char.isascii():
            continue
        name = unicodedata.name(char, "")
        if name.startswith(_NATIVE_SCRIPT_PREFIXES):
            continue
        # Breadth-first over the look-alike graph, a few hops deep: "к" only
        # reaches "k" through "ĸ".
        frontier, seen, found = [char], {char}, []
        for _ in range(_MAX_HOPS):
            following: list[str] = []
            for node in frontier:
                for neighbour in graph.get(node, ()):
                    if neighbour in seen:
                        continue
                    seen.add(neighbour)
                    target = _ascii_target(neighbour)
                    if target is not None:
                        found.append(target)
                    following.append(neighbour)
            if found:
                break
            frontier = following
        letters = sorted(t for t in found if t.isalpha())
        choice = letters[0] if letters else (sorted(found)[0] if found else None)
        if choice is not None:
            # Keys are stored case-folded: the table runs after casefold().
            for key in {char, _strip_marks(char).casefold()}:
                if len(key) == 1 and not key.isascii():
                    table.setdefault(ord(key), choice)
    table.update({ord(char): target for char, target in _MANUAL_SKELETON.items()})
    return table


_SKELETON = _build_skeleton_table()


def _fold_once(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _strip_marks(text).translate(_SKELETON)
    return unicodedata.normalize("NFC", text)


def normalize_text(text: str) -> str:
    """Fold `text` to the form the matchers compare; idempotent, never raises."""
    if text.isascii():
        # NFKC, marks and the skeleton are no-ops on ASCII.
        return text.lower()
    try:
        folded = _fold_once(text)
        # A fold can expose new foldable characters (casefold of "İ" yields a
        # combining dot); repeat until stable so the result is idempotent.
        for _ in range(4):
            again = _fold_once(folded)
            if again == folded:
                break
            folded = again
        return folded
    except (ValueError, TypeError):  # pragma: no cover - defensive: lone surrogates etc.
        return text.encode("utf-8", "replace").decode("utf-8").lower()


_UPPER = "A-ZÀ-ÖØ-ÞА-ЯЁІЇЄҐΑ-Ω"
_LOWER = "a-zß-öø-ÿа-яёіїєґα-ω"
_CAMEL_BOUNDARY = re.compile(rf"(?<=[{_LOWER}])(?=[{_UPPER}])|(?<=[{_UPPER}])(?=[{_UPPER}][{_LOWER}])")


def camel_split(text: str) -> str:
    """Insert spaces at camelCase / PascalCase boundaries ("APIKeyValue" -> "API Key Value")."""
    return _CAMEL_BOUNDARY.sub(" ", text)


# Three or more single letters separated by punctuation or spaces: "p a s s",
# "p.a.s.s", "p-a-s-s".
# Separators are spelled out: a generic \W would also eat the vowel signs of
# Devanagari and similar scripts, which Python does not count as word characters.
_SEP_CLASS = r"[\s._\-·•,/\\|:;'\"`*+~]"
_SPACED_LETTERS = re.compile(rf"(?<![^\W_])(?:[^\W_]{_SEP_CLASS}+){{2,}}[^\W_](?![^\W_])")
_SEPARATORS = re.compile(rf"{_SEP_CLASS}+")


def collapse_spaced_letters(text: str) -> str:
    """Join runs of single letters ("p a s s w o r d" -> "password")."""
    return _SPACED_LETTERS.sub(lambda m: _SEPARATORS.sub("", m.group(0)), text)


_LEET_I = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                         "@": "a", "$": "s", "!": "i", "|": "l"})
_LEET_L = str.maketrans({"1": "l"})
_LEET_CHARS = re.compile(r"[0134578@$!|]")
_LEET_CHUNK = re.compile(r"[\w@$!|]+")
_HAS_LETTER = re.compile(r"[^\W\d_]")


def leet_variants(text: str) -> list[str]:
    """Readings of `text` with leetspeak undone in words that mix letters and digits/symbols.

    Returns [] when nothing changes; "1" is read both as "i" and as "l".
    """
    if _LEET_CHARS.search(text) is None:
        return []

    def decode(table: dict[int, str]) -> str:
        def one(chunk: re.Match[str]) -> str:
            word = chunk.group(0)
            if _HAS_LETTER.search(word) is None or _LEET_CHARS.search(word) is None:
                return word
            return word.translate(table)

        return _LEET_CHUNK.sub(one, text)

    variants = [decode(_LEET_I)]
    if "1" in text:
        variants.append(decode({**_LEET_I, **_LEET_L}))
    return [v for v in dict.fromkeys(variants) if v != text]
