"""Text normalization shared by the sensitive-field detector.

`normalize_text` folds away, character class by character class, the spellings
used to slip a word past a matcher:

- compatibility forms (NFKC): fullwidth letters, ligatures, math alphanumerics,
  circled and superscript letters;
- format characters (Unicode category Cf: zero-width space/joiner, soft hyphen,
  bidi controls, tag characters), variation selectors and the combining marks
  of Latin, Greek, Cyrillic and Hebrew/Arabic pointing;
- case (full case folding);
- look-alike letters of other scripts (Cyrillic "а", Greek "ο", Cherokee,
  Armenian, ...), mapped to their ASCII skeleton with the Unicode confusables
  data shipped by `confusable-homoglyphs`;
- Latin letters that only differ by style: small capitals, turned, reversed and
  script letters, derived from each character's Unicode name;
- unassigned code points inside the math alphanumerics block (where a letter
  lives among the letterlike symbols instead), read as the letter of their place;
- text under a right-to-left override (U+202E) is displayed reversed, so it is
  read reversed;
- marks that writers often leave out: Thai and Lao tone marks, the voicing marks
  of kana (dakuten, handakuten), the nukta of Indic scripts ("फ़ोन", "आ़धा़र");
- letter variants of one script: Persian keheh and yeh written for Arabic kaf and
  yeh (and back), alef maksura for yeh; Georgian Mtavruli capitals onto Mkhedruli;

`ascii_capitals` gives a second reading for the matcher: a capital look-alike inside
a Latin word read as the capital it imitates (Greek "Ν" in "PΙΝ" is "N", though the
fold, shared by both cases, reads "ν" as "v").

Before any of that, `decode_escapes` undoes the encodings a form text can hide a
word in: HTML character references (numeric `&#112;`, `&#x50;` and named
`&ntilde;`, `&shy;`, `&amp;`; the stdlib `html.unescape`) and URL
percent-encoding (`%70assword`, `%D0%BF...`; `urllib.parse.unquote`, only runs
that decode to UTF-8), which a user agent renders as the word; and, as a reader
told "this is base64" would, backslash escapes (`\\u0050`), base64 and hex runs
that decode to readable words. It is applied once to every text the detector reads, not inside
`normalize_text`, because decoding twice is not the same as decoding once.

The fold works one character at a time through a translation table that is
filled on first sight of each character, so every character of these classes
is folded, not only the ones seen in tests. Scripts of languages matched
natively (Arabic, Hebrew, Indic, Thai, CJK, ...) keep their letters: folding
them onto ASCII would only merge distinct words. The result is idempotent.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
import unicodedata
from importlib import resources
from typing import Final
from urllib.parse import unquote

__all__ = ["CAMEL_MARK", "ascii_capitals", "camel_marked", "decode_escapes", "normalize_text"]

# Scripts matched natively: their letters are never folded onto ASCII.
_NATIVE_SCRIPT_PREFIXES: Final = (
    "CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC", "ARABIC", "HEBREW", "SYRIAC", "THAANA",
    "DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA", "MALAYALAM",
    "SINHALA", "THAI", "LAO", "TIBETAN", "MYANMAR", "KHMER", "ETHIOPIC", "GEORGIAN", "JAVANESE", "BALINESE",
    "SUNDANESE", "TAGALOG", "OL CHIKI", "MEETEI", "LIMBU", "NKO", "HALFWIDTH HANGUL",
)
# Combining marks dropped wherever they stand: accents of Latin, Greek and Cyrillic
# letters, Hebrew points and Arabic vowel signs (optional in writing). Vowel signs
# of Indic and South-East Asian scripts are letters of the word and are kept.
_DROPPED_MARK_RANGES: Final = (
    (0x0300, 0x036F), (0x0483, 0x0489), (0x0591, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F),
    (0x0670, 0x0670), (0x06D6, 0x06ED), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
    (0xFE00, 0xFE0F), (0xFE20, 0xFE2F), (0xE0100, 0xE01EF),
)
_MAX_HOPS: Final = 3
# Look-alikes the confusables data only links to other non-ASCII letters.
_MANUAL_SKELETON: Final = {"ω": "w", "ѡ": "w", "ԝ": "w", "ш": "w", "т": "t", "τ": "t", "м": "m", "п": "n",
                           "η": "n", "κ": "k", "ν": "v", "υ": "u", "χ": "x", "ѕ": "s", "ј": "j", "ԁ": "d",
                           "ɡ": "g", "в": "b", "ь": "b", "ι": "i", "і": "i", "ı": "i"}
# Letters of two scripts drawn the same that have no ASCII skeleton: Cyrillic schwa in an Azerbaijani word
# ("Şifrә") is the Latin one (Kazakh, which writes the Cyrillic one, folds the same way on both sides).
_TWIN_LETTERS: Final = {"\u04d9": "\u0259"}
_STYLED_LATIN: Final = re.compile(
    r"(?:LATIN|REGIONAL INDICATOR SYMBOL)\b.*?\b(?:LETTER|CAPITAL|SMALL) "
    r"(?:(?:SMALL CAPITAL|CAPITAL|SMALL|TURNED|REVERSED|INVERTED|SCRIPT|DOTLESS|OPEN|CLOSED|LONG|BARRED|"
    r"SIDEWAYS|STRETCHED|FLATTENED|BROKEN|TAILLESS|RAMS HORN) )*([A-Z])(?: WITH .*)?$"
)
# Letters that only stretch or pad a word: Arabic tatweel (kashida), Hangul and braille fillers.
_INVISIBLE_FILLERS: Final = frozenset({0x0640, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E})
# Marks often left out in writing: Thai and Lao tone marks ("รหัสผาน" for "รหัสผ่าน"), kana voicing marks.
_OPTIONAL_NATIVE_MARKS: Final = frozenset(
    {*range(0x0E48, 0x0E4C), *range(0x0EC8, 0x0ECC), 0x3099, 0x309A, 0x309B, 0x309C, 0xFF9E, 0xFF9F})
_KANA_VOICING: Final = frozenset({0x3099, 0x309A})
# The nukta of Devanagari, Bengali, Gurmukhi, Gujarati, Oriya and Kannada: often left out or added.
_NUKTAS: Final = frozenset({0x093C, 0x09BC, 0x0A3C, 0x0ABC, 0x0B3C, 0x0CBC})
# Arabic-script letters written in two forms across Arabic, Persian and Urdu keyboards.
_ARABIC_VARIANTS: Final = str.maketrans({"ک": "ك", "ی": "ي", "ى": "ي"})
CAMEL_MARK: Final = "\x01"
"""Inserted at camelCase boundaries by `camel_marked`; folds to itself."""


def _drop_mark(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in _DROPPED_MARK_RANGES)


def _load_confusables() -> dict[str, list[str]]:
    data_file = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    raw: dict[str, list[dict[str, str]]] = json.loads(data_file.read_text(encoding="utf-8"))
    return {char: [entry["c"] for entry in entries] for char, entries in raw.items()}


def _is_native(char: str) -> bool:
    return unicodedata.name(char, "").startswith(_NATIVE_SCRIPT_PREFIXES)


def _ascii_letter(candidate: str) -> str | None:
    """The single ASCII letter/digit `candidate` stands for, if any."""
    folded = "".join(
        ch for ch in unicodedata.normalize("NFKD", candidate) if not unicodedata.combining(ch)
    ).casefold()
    if len(folded) == 1 and folded.isascii() and folded.isalnum():
        return folded
    return None


def _build_skeleton() -> dict[str, str]:
    """Each look-alike character of the confusables data to one ASCII letter (letters beat digits)."""
    graph = _load_confusables()
    table: dict[str, str] = {}
    for char in graph:
        if len(char) != 1 or char.isascii() or _is_native(char):
            continue
        # Breadth-first over the look-alike graph, a few hops deep: "к" only reaches "k" through "ĸ".
        frontier, seen, found = [char], {char}, []
        for _ in range(_MAX_HOPS):
            following: list[str] = []
            for node in frontier:
                for neighbour in graph.get(node, ()):
                    if neighbour in seen:
                        continue
                    seen.add(neighbour)
                    target = _ascii_letter(neighbour)
                    if target is not None:
                        found.append(target)
                    following.append(neighbour)
            if found:
                break
            frontier = following
        letters = sorted(t for t in found if t.isalpha())
        choice = letters[0] if letters else (sorted(found)[0] if found else None)
        if choice is not None:
            table.setdefault(char, choice)
    table.update(_MANUAL_SKELETON)
    return table


_SKELETON: Final = _build_skeleton()


# Mathematical alphanumeric letters: 13 alphabets of 52 letters (A-Z, a-z) each, from U+1D400.
_MATH_LETTERS_START: Final = 0x1D400
_MATH_LETTERS_END: Final = 0x1D6A3


# Pictographs, dingbats, arrows and geometric shapes: drawn between letters they separate nothing a reader
# sees as a word break ("П🔸И🔸Н", "R 🔑 E 🔑 C 🔑 O ..."), so they fold away like invisible characters.
_PICTOGRAPHS: Final = ((0x2190, 0x21FF), (0x2300, 0x23FF), (0x25A0, 0x27BF), (0x2B00, 0x2BFF), (0x1F000, 0x1FAFF))
PICTOGRAPH: Final = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _PICTOGRAPHS) + "]")
"""One of those characters (what a reader's eye skips in a text as written: "B🔹L🔹I🔹K" shows BLIK)."""


def _fold_char(char: str) -> str:
    """The fold of one character (before the fixed-point pass in `_FoldTable`)."""
    code = ord(char)
    if code in _INVISIBLE_FILLERS:
        return ""
    category = unicodedata.category(char)
    if category in ("So", "Sm") and PICTOGRAPH.fullmatch(char):
        return ""
    if category == "Cf" or _drop_mark(code) or (category in ("Cc", "Cs") and char not in "\t\n\r\x01"):
        return "" if category != "Cc" else " "
    if code in _OPTIONAL_NATIVE_MARKS or code in _NUKTAS:
        return ""
    if _MATH_LETTERS_START <= code <= _MATH_LETTERS_END and category == "Cn":
        # A hole of the math alphanumerics (its letter lives among the letterlike symbols: script "e" is
        # U+212F, not U+1D4BA): renderers that draw it anyway show the letter its place stands for.
        index = (code - _MATH_LETTERS_START) % 52
        return chr(ord("a") + index % 26)
    if _is_native(char):
        if category == "Nd":
            return str(unicodedata.digit(char))
        # Precomposed nukta letters ("क़") decompose under NFKC; Georgian capitals have small forms.
        compat = "".join(c for c in unicodedata.normalize("NFKC", char) if ord(c) not in _NUKTAS)
        compat = compat.lower().translate(_ARABIC_VARIANTS)
        if "KANA" in unicodedata.name(char, ""):
            # Voiced and semi-voiced kana fold onto the plain kana: a lost dakuten ("パスワート") is a typo.
            compat = "".join(c for c in unicodedata.normalize("NFD", compat) if ord(c) not in _KANA_VOICING)
        return compat
    out = []
    compat = unicodedata.normalize("NFKC", char)
    if not char.isspace():
        compat = compat.strip() or compat
    for piece in unicodedata.normalize("NFKD", compat.casefold()):
        if _drop_mark(ord(piece)) or unicodedata.category(piece) == "Cf":
            continue
        if piece.isascii():
            out.append(piece.lower())
            continue
        if unicodedata.category(piece) == "Nd":
            out.append(str(unicodedata.digit(piece)))
            continue
        # Both cases of a letter share one skeleton ("Н" looks like "H", so "н" folds there too).
        target = (_SKELETON.get(piece) or _SKELETON.get(piece.upper()) or _SKELETON.get(piece.lower())
                  or _SKELETON.get(compat) or _SKELETON.get(compat.upper()))
        if target is None:
            styled = _STYLED_LATIN.search(unicodedata.name(piece, ""))
            target = styled.group(1).lower() if styled else None
        if target is None:
            target = _TWIN_LETTERS.get(piece)
        out.append(target if target is not None else unicodedata.normalize("NFC", piece))
    return unicodedata.normalize("NFC", "".join(out))


class _FoldTable(dict[int, str]):
    """`str.translate` table filled lazily: each character is folded the first time it is seen."""

    def __missing__(self, code: int) -> str:
        try:
            value = _fold_char(chr(code))
            # Iterate to a fixed point so that folding is idempotent.
            for _ in range(4):
                again = "".join(_fold_char(ch) for ch in value)
                if again == value:
                    break
                value = again
        except (ValueError, TypeError):  # pragma: no cover - lone surrogates and the like
            value = ""
        self[code] = value
        return value


_TABLE: Final = _FoldTable()
_OVERRIDES: Final = ("\u202e", "\u202d")
_OVERRIDE_SPAN: Final = re.compile("([\u202d\u202e])([^\u202a-\u202e\u2066-\u2069]*)")
_RTL_LETTER: Final = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def _as_displayed(match: re.Match[str]) -> str:
    run = match.group(2)
    # A right-to-left override shows a left-to-right run reversed; a left-to-right override shows
    # a Hebrew or Arabic run reversed. Either way the user reads the run backwards.
    if match.group(1) == "\u202e" or _RTL_LETTER.search(run):
        return run[::-1]
    return run


def undo_overrides(text: str) -> str:
    """`text` with bidi override runs put in the order the user reads them."""
    if "\u202e" in text or "\u202d" in text:
        return _OVERRIDE_SPAN.sub(_as_displayed, text)
    return text


_PERCENT_RUN: Final = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_MAX_DECODED: Final = 65536  # longer texts are read as written: decoding is bounded work


def _unquoted(match: re.Match[str]) -> str:
    run = match.group(0)
    try:
        return unquote(run, errors="strict")
    except UnicodeDecodeError:
        return run  # not UTF-8 percent-encoding ("100%AB" in prose): left as written


# A base64 run (with a digit, a sign, padding or case flipping inside it: plain words are no base64) or a 0x
# hex run.
_ENCODED_RUN: Final = re.compile(r"(?<![\w+/=])(?:0x[0-9A-Fa-f]{6,}"
                                 r"|(?=[A-Za-z0-9+/]*[0-9+/=]|[A-Za-z0-9+/]*[a-z][A-Z])[A-Za-z0-9+/]{4,}={0,2})"
                                 r"(?![\w+/=])")


_HEX_RUN: Final = re.compile(r"[0-9A-Fa-f]{8,}")
# Backslash escapes as JSON, JavaScript and C write them ("\\u0050\\u0049\\u004E" for "PIN"), shown as typed.
_BACKSLASH_ESCAPE: Final = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})|\\x([0-9A-Fa-f]{2})")


def _unescaped(match: re.Match[str]) -> str:
    code = int(match.group(1) or match.group(2) or match.group(3), 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return match.group(0)  # half a surrogate pair, or no character at all: left as written
    return chr(code)


def _readable(raw: bytes) -> str | None:
    """`raw` as text when it is UTF-8 that reads as words: mostly letters and spaces, no control codes."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # (Vowel signs and viramas of Indic scripts are marks, not letters: "निजी कुंजी" is half marks.)
    letters = sum(c.isalpha() or c in " -_" or unicodedata.category(c).startswith("M") for c in text)
    if not text or letters < 0.7 * len(text) or not any(c.isalpha() for c in text) or not text.isprintable():
        return None
    return text


def _unencoded(match: re.Match[str]) -> str:
    run = match.group(0)
    if run.isdigit() and (len(run) < 8 or len(run) % 2):
        # Digits alone never decode to readable base64 (every byte would be 0xD0 or above); as hex they
        # need eight or more, an even count ("70617373": "pass"). Amounts, years and ids skip the decoding.
        return run
    if len(run) % 2 == 0 and _HEX_RUN.fullmatch(run):
        # Hex without its 0x ("70617373776f7264"): read as hex when that spells words, else as base64.
        text = _readable(bytes.fromhex(run))
        if text is not None:
            return text
    try:
        if run.startswith("0x"):
            raw = bytes.fromhex(run[2:]) if len(run) % 2 == 0 else b""
        elif len(run) % 4 == 0:
            raw = base64.b64decode(run, validate=True)
        else:
            return run
    except (binascii.Error, ValueError):
        return run
    text = _readable(raw)
    if text is not None and len(run) < 8 and not (text.isascii() and text.isalpha() and text.isupper()):
        return run  # four characters decode to letters by chance ("c0d3": leet): only an acronym ("Q1ZW": CVV) counts
    return run if text is None else text


# Hex bytes written apart ("70 72 69 76 c3 a9 ...", "70:61:73:73"): four bytes or more, read as UTF-8 when that
# spells words (a MAC address or a colour list does not).
_SPACED_HEX: Final = re.compile(r"(?:[0-9A-Fa-f]{2}[ :]){3,}[0-9A-Fa-f]{2}")


def _unspaced_hex(match: re.Match[str]) -> str:
    run = match.group(0)
    start, end = match.span()
    whole = match.string
    # Part of a longer token ("a1 b2 c3 d4e5"): tested here rather than by lookarounds in the pattern, which
    # every form pays (`has_encoded_run`) and which a lookbehind tried at every position makes twice as slow.
    if (start and (whole[start - 1].isalnum() or whole[start - 1] == ":")) or (
            end < len(whole) and (whole[end].isalnum() or whole[end] == ":")):
        return run
    text = _readable(bytes.fromhex(run.replace(" ", "").replace(":", "")))
    return run if text is None else text


def has_encoded_run(text: str) -> bool:
    """Whether `text` holds a base64 or hex run that decodes to readable words (see `decode_escapes`)."""
    if len(text) > _MAX_DECODED:
        return False
    # Word by word: splitting and the length and letter tests run in C, the pattern only on the rare word
    # of eight characters or more that is not all letters (every form pays this, so it stays cheap).
    return any(_unencoded(m) != m.group(0) for word in text.split()
               if len(word) >= 4 and (not word.isalpha() or not (word.islower() or word.isupper() or word.istitle()))
               for m in _ENCODED_RUN.finditer(word)) or any(
        _unspaced_hex(m) != m.group(0) for m in _SPACED_HEX.finditer(text))


def decode_escapes(text: str) -> str:
    """`text` with HTML character references, URL percent-escapes, backslash escapes (`\\u0050`), and
    base64 or hex runs (hex bytes also apart) that spell readable words ("UGFzc3dvcmQ=" for "Password")
    decoded, once each.

    HTML references first, so a percent sign written as `&#37;` joins the percent pass.
    """
    if len(text) > _MAX_DECODED:
        return text
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = _PERCENT_RUN.sub(_unquoted, text)
    if "\\" in text:
        text = _BACKSLASH_ESCAPE.sub(_unescaped, text)
    text = _SPACED_HEX.sub(_unspaced_hex, text)
    return _ENCODED_RUN.sub(_unencoded, text)


# A word with a Latin letter, one mixing Greek and Cyrillic ("РІΝ": nobody writes both in one word), or one of
# Greek or Cyrillic capitals only ("ΡΙΝ"; it is read as Latin only if every letter has a Latin capital twin).
_MIXED_WORD: Final = re.compile(r"[^\W\d_]*[A-Za-z][^\W\d_]*"
                                r"|[^\W\d_]*(?:[\u0370-\u03ff][^\W\d_]*[\u0400-\u04ff]|[\u0400-\u04ff][^\W\d_]*[\u0370-\u03ff])"
                                r"[^\W\d_]*"
                                r"|(?<![^\W\d_])[\u0391-\u03a9\u0400-\u042f]{2,}(?![^\W\d_])")


def _capital_skeleton(char: str) -> str:
    target = _SKELETON.get(char)
    if target is None or not target.isalpha() or char == char.lower():
        return char
    # The confusables data writes the capital I shape as "l"; a capital stands for the capital.
    return "I" if target == "l" else target.upper()


def _latin_capitals(match: re.Match[str]) -> str:
    word = match.group(0)
    if word.isascii():
        return word
    latin = "".join(_capital_skeleton(c) for c in word)
    if _CAPITALS_ONLY.fullmatch(word) and not latin.isascii():
        return word  # a Greek or Cyrillic word ("ΚΩΔΙΚΟΣ", "ПИН"): some letter has no Latin twin
    return latin


_CAPITALS_ONLY: Final = re.compile("[\u0391-\u03a9\u0400-\u042f]+")


def ascii_capitals(text: str) -> str:
    """`text` with capital look-alikes of other scripts inside Latin words, or words mixing Greek and
    Cyrillic, written as the ASCII capital ("PΙΝ", "РІΝ" -> "PIN"); words of one other script ("ΚΩΔΙΚΟΣ")
    are left as they are."""
    if text.isascii():
        return text
    return _MIXED_WORD.sub(_latin_capitals, text)


# A Greek or Cyrillic word with Latin capitals in it ("KΩΔIKOΣ", "ПАPОЛЬ"): the capitals read in its script.
_LATIN_IN_NATIVE: Final = re.compile(r"(?<![^\W\d_])(?=[^\W\d_]*[A-Z])(?=[^\W\d_]*[\u0370-\u03ff\u0400-\u04ff])"
                                     r"[^\W\d_]+")
_AS_GREEK: Final = str.maketrans("ABEZHIKMNOPTYX", "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_AS_CYRILLIC: Final = str.maketrans("ABCEHIKMOPTXY", "АВСЕНІКМОРТХУ")


def _native(match: re.Match[str]) -> str:
    word = match.group(0)
    greek = next(c for c in word if "\u0370" <= c <= "\u04ff") <= "\u03ff"
    return word.translate(_AS_GREEK if greek else _AS_CYRILLIC)


def native_capitals(text: str) -> str:
    """`text` with Latin capitals inside Greek or Cyrillic words written in that script ("KΩΔIKOΣ" -> "ΚΩΔΙΚΟΣ",
    "Kωδικός" -> "Κωδικός"): the other direction of `ascii_capitals`."""
    if text.isascii():
        return text
    return _LATIN_IN_NATIVE.sub(_native, text)


# The Myanmar digit zero and the letter wa look the same: between or beside letters it is the letter.
_MYANMAR_ZERO: Final = re.compile("(?<=[\u1000-\u103f])\u1040|\u1040(?=[\u1000-\u103f])")
_JAMO: Final = re.compile("[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]")
# Letters drawn with slashes and bars ("CV\/", "|\|", "|\/|"), read as the letter they draw.
_DRAWN_LETTERS: Final = re.compile(r"\|\\/\||\\/\\/|\|\\\||\\/")
_DRAWN: Final = {"|\\/|": "m", "\\/\\/": "w", "|\\|": "n", "\\/": "v"}


_NUMBER_SIGN: Final = re.compile(r"(?<=[^\W\d_])\s?#(?!\w)")


def normalize_text(text: str) -> str:
    """Fold `text` to the form the matchers compare; idempotent, never raises."""
    if "\\" in text:
        text = _DRAWN_LETTERS.sub(lambda m: _DRAWN[m.group(0)], text)
    if text.isascii():
        # NFKC, marks and the skeleton are no-ops on ASCII; control characters become spaces.
        folded = text.lower()
    else:
        if "\u1040" in text:
            text = _MYANMAR_ZERO.sub("\u101d", text)
        if _JAMO.search(text):
            text = unicodedata.normalize("NFC", text)  # Hangul written as conjoining jamo: the syllables they make
        folded = undo_overrides(text).translate(_TABLE)
    if "#" in folded:
        folded = _number_sign(folded)
    if "begin" in folded:
        # A PEM block's first line ("-----BEGIN", "the BEGIN/END lines") reads as a word of its own,
        # "armorline": folding would make it the bare word "begin" (and German "Beginn", a start).
        folded = _PEM_MARKER.sub(" armorline ", folded)
    return folded


_PEM_MARKER: Final = re.compile(r"-{3,} ?begin\b|\bbegin ?/ ?end\b")


def _number_sign(folded: str) -> str:
    """"card #", "cc#" read "card no", "cc no" (matching drops the sign); "#123" and "#tag" stay as they are (the
    common case, told apart without the pattern)."""
    index = folded.find("#")
    while index != -1:
        after = folded[index + 1:index + 2]
        if not (after.isalnum() or after == "_"):
            while (read := _NUMBER_SIGN.sub(" no", folded)) != folded:  # ("a##", "a# #": until none is left)
                folded = read
            return folded
        index = folded.find("#", index + 1)
    return folded


_UPPER: Final = "A-ZÀ-ÖØ-ÞА-ЯЁІЇЄҐΑ-Ω"
_LOWER: Final = "a-zß-öø-ÿа-яёіїєґα-ω"
_CAMEL_BOUNDARY: Final = re.compile(rf"(?<=[{_LOWER}])(?=[{_UPPER}])|(?<=[{_UPPER}])(?=[{_UPPER}][{_LOWER}])")


_CASED_RUN: Final = re.compile(rf"[{_UPPER}{_LOWER}]+")
_CAMEL_PART: Final = re.compile(rf"[{_UPPER}]?[{_LOWER}]+|[{_UPPER}]+")


def _mark_run(match: re.Match[str]) -> str:
    run = match.group(0)
    parts = _CAMEL_BOUNDARY.split(run)
    if len(parts) == 1:
        return run
    # camelCase / PascalCase: every part is a word ("Key", "value") or an acronym ("API"). Random case
    # flips ("heMMeliGE", "lAPskAuseN") are not word boundaries: the run stays one word.
    # Short parts only at the end of a short identifier ("wifiPw", "apiKeyId").
    # Nor is a single letter at either end ("pIn", "TuS": case flipped to hide a word).
    if all(_CAMEL_PART.fullmatch(part) for part in parts) and all(len(part) >= 3 for part in parts[1:-1]) and (
            len(parts[-1]) >= 3 or len(parts) <= 3) and len(parts[0]) >= 2 and len(parts[-1]) >= 2:
        return CAMEL_MARK.join(parts)
    return run


def camel_marked(text: str) -> str:
    """Mark camelCase / PascalCase boundaries with `CAMEL_MARK` ("apiKey" -> "api\\x01Key")."""
    # Every boundary sits before an upper-case letter at index >= 1.
    if text.isascii():
        rest = text[1:]
        if rest == rest.lower():
            return text
    return _CASED_RUN.sub(_mark_run, text)
