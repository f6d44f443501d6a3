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
    # Every boundary sits before an upper-case letter at index >= 1; in ASCII text
    # without one ("Full name", "Please confirm ...") there is nothing to split.
    if text.isascii():
        rest = text[1:]
        if rest == rest.lower():
            return text
    return _CAMEL_BOUNDARY.sub(" ", text)


# Three or more single letters separated by punctuation or spaces: "p a s s",
# "p.a.s.s", "p-a-s-s".
# Separators are spelled out: a generic \W would also eat the vowel signs of
# Devanagari and similar scripts, which Python does not count as word characters.
_SEP_CLASS = r"[\s._\-·•,/\\|:;'\"`*+~]"
_SPACED_LETTERS = re.compile(rf"(?<![^\W_])(?:[^\W_]{_SEP_CLASS}+){{2,}}[^\W_](?![^\W_])")
_SEPARATORS = re.compile(rf"{_SEP_CLASS}+")


# ASCII characters classed as letter/digit ("a"), separator ("s") or other ("o"), for
# the fast path below; taken from the regex classes themselves so they cannot drift.
_ASCII_CLASSES = bytes(
    ord("a") if re.fullmatch(r"[^\W_]", chr(code)) else ord("s") if re.fullmatch(_SEP_CLASS, chr(code)) else ord("o")
    for code in range(256)
)


def collapse_spaced_letters(text: str) -> str:
    """Join runs of single letters ("p a s s w o r d" -> "password")."""
    # A run has a single letter between two separators; in ASCII text that shows as
    # "sas" in the class string, and most texts have none.
    if text.isascii() and b"sas" not in text.encode("ascii").translate(_ASCII_CLASSES):
        return text
    return _SPACED_LETTERS.sub(lambda m: _SEPARATORS.sub("", m.group(0)), text)


_LEET_I = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                         "@": "a", "$": "s", "!": "i", "|": "l"})
_LEET_CHARS = re.compile(r"[0134578@$!|]")
# A leet word: a maximal run of [\w@$!|] holding both a letter and a leet character.
# The lookbehind pins each try to the start of a run and the lazy lookaheads stop at
# its end, so the search stays linear; only these runs are rewritten.
_LEET_WORD = re.compile(r"(?<![\w@$!|])(?=[\w@$!|]*?[^\W\d_])(?=[\w@$!|]*?[0134578@$!|])[\w@$!|]+")
_LEET_IL = {**_LEET_I, ord("1"): "l"}  # the second reading of "1"
# ASCII classed as letter "L", leet character "D" or separator " " (taken from the
# regexes above); other word characters ("2", "_") are deleted, see `_has_leet_word`.
_LEET_CLASSES = bytes(
    ord("L") if re.fullmatch(r"[^\W\d_]", chr(code)) else ord("D") if _LEET_CHARS.fullmatch(chr(code))
    else ord("w") if re.fullmatch(r"\w", chr(code)) else ord(" ")
    for code in range(256)
)
_LEET_NEUTRAL = bytes(code for code in range(128) if _LEET_CLASSES[code] == ord("w"))


def _has_leet_word(text: str) -> bool:
    if not text.isascii():
        return _LEET_CHARS.search(text) is not None and _LEET_WORD.search(text) is not None
    # Without the neutral word characters, a word holding a letter and a leet
    # character has the two side by side ("p4ss", "a2_1" -> "LD"); words stay
    # apart since separators are kept. Exact, and far cheaper than the regex.
    classes = text.encode("ascii").translate(_LEET_CLASSES, _LEET_NEUTRAL)
    return b"LD" in classes or b"DL" in classes


def leet_variants(text: str) -> list[str]:
    """Readings of `text` with leetspeak undone in words that mix letters and digits/symbols.

    Returns [] when nothing changes; "1" is read both as "i" and as "l".
    """
    # Most texts have no leet word at all ("Guests 12"): a cheap check, no callbacks.
    if not _has_leet_word(text):
        return []
    variants = [_LEET_WORD.sub(lambda m: m.group(0).translate(_LEET_I), text)]
    if "1" in text:
        variants.append(_LEET_WORD.sub(lambda m: m.group(0).translate(_LEET_IL), text))
    return [v for v in dict.fromkeys(variants) if v != text]
