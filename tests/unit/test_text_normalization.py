"""Tests for gateway.policy.text_normalization: evasions folded as classes, not as examples."""

from __future__ import annotations

import json
import re
import unicodedata
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.secret_lexicon import load_builtin_lexicon
from gateway.policy.text_normalization import CAMEL_MARK, camel_marked, decode_escapes, has_encoded_run, normalize_text


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        ("PASSWORD", "password"),
        ("Pаsswоrd", "password"),  # Cyrillic а, о
        ("ραssωοrd", "password"),  # Greek
        ("ＰＡＳＳＷＯＲＤ", "password"),  # fullwidth
        ("pa\u200bss\u200dw\u00adord", "password"),  # zero-width space/joiner, soft hyphen
        ("pass\u200fword\ufeff", "password"),  # RTL mark, BOM
        ("p\u0301a\u0308ssword", "password"),  # combining marks
        ("𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝", "password"),  # mathematical bold
        ("ᴘᴀssᴡᴏʀᴅ", "password"),  # small capitals
        ("ᵖᵃˢˢʷᵒʳᵈ", "password"),  # superscript / modifier letters
        ("ⓟⓐⓢⓢⓦⓞⓡⓓ", "password"),  # circled
        ("\u202edrowssap\u202c", "password"),  # right-to-left override shows the run reversed
        ("Straße", "strasse"),
        ("mật khẩu", "mat khau"),
        ("İstanbul", "istanbul"),
    ],
)
def test_tricks_fold_to_plain_text(raw: str, folded: str) -> None:
    assert normalize_text(raw) == folded


def test_native_scripts_are_not_folded_onto_ascii() -> None:
    for text in ("كلمة المرور", "密码", "비밀번호", "סיסמה", "पासवर्ड", "รหัสผ่าน", "கடவுச்சொல்"):
        assert not normalize_text(text).isascii()


def test_distinct_words_stay_distinct() -> None:
    assert normalize_text("пароль") != normalize_text("паспорт")
    assert normalize_text("pin") != normalize_text("pan")


def test_camel_marked() -> None:
    assert camel_marked("APIKeyValue") == f"API{CAMEL_MARK}Key{CAMEL_MARK}Value"
    assert camel_marked("userPassword") == f"user{CAMEL_MARK}Password"
    assert camel_marked("snake_case") == "snake_case"


# -- class-level properties ---------------------------------------------------------------------

def _latin_confusables() -> list[str]:
    """Every single character the Unicode confusables data links to an ASCII letter."""
    raw = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    out = []
    for char, entries in raw.items():
        if len(char) != 1 or char.isascii():
            continue
        if any(len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalpha() for e in entries):
            name = unicodedata.name(char, "")
            if name.startswith(("LATIN", "CYRILLIC", "GREEK", "MATHEMATICAL", "FULLWIDTH", "ARMENIAN", "CHEROKEE",
                                "LISU", "COPTIC", "MODIFIER", "SMALL", "CIRCLED", "PARENTHESIZED", "SQUARED")):
                out.append(char)
    return out


LATIN_CONFUSABLES = _latin_confusables()
MATH_LETTERS = [chr(c) for c in range(0x1D400, 0x1D6A4) if unicodedata.name(chr(c), "").startswith("MATHEMATICAL")]
# Every small capital and modifier (superscript) form of a single Latin letter, wherever Unicode put it.
SMALL_CAPS = [chr(c) for c in range(0x80, 0x1FFFF) if re.fullmatch(r"LATIN LETTER SMALL CAPITAL [A-Z]",
                                                                   unicodedata.name(chr(c), ""))]
SUPERSCRIPTS = [chr(c) for c in range(0x80, 0x1FFFF) if re.fullmatch(r"MODIFIER LETTER (?:SMALL|CAPITAL) [A-Z]",
                                                                     unicodedata.name(chr(c), ""))]


def test_every_latin_confusable_folds_to_ascii() -> None:
    unfolded = [c for c in LATIN_CONFUSABLES if not (normalize_text(c).isascii() and normalize_text(c).isalnum())]
    assert len(LATIN_CONFUSABLES) > 300
    assert unfolded == []


@pytest.mark.parametrize("chars", [MATH_LETTERS, SMALL_CAPS, SUPERSCRIPTS], ids=["math", "small-caps", "modifier"])
def test_every_styled_latin_letter_folds_to_ascii(chars: list[str]) -> None:
    assert chars
    assert [c for c in chars if not (normalize_text(c).isascii() and normalize_text(c).isalpha())] == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LATIN_CONFUSABLES), min_size=1, max_size=12))
def test_confusable_strings_fold_to_their_ascii_skeleton(chars: list[str]) -> None:
    folded = normalize_text("".join(chars))
    assert folded.isascii()
    assert folded == "".join(normalize_text(c) for c in chars)


_STYLES = {
    "bold": 0x1D41A, "italic": 0x1D44E, "script": 0x1D4B6, "fraktur": 0x1D51E, "double": 0x1D552,
    "sans": 0x1D5BA, "mono": 0x1D68A,
}


def _styled(word: str, base: int) -> str:
    return "".join(chr(base + ord(c) - ord("a")) if c.isalpha() else c for c in word)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["password", "passphrase", "token", "secret"]), st.sampled_from(sorted(_STYLES)),
       st.lists(st.booleans(), min_size=10, max_size=10))
def test_styled_and_case_flipped_terms_still_match(word: str, style: str, flips: list[bool]) -> None:
    lexicon = load_builtin_lexicon()
    flipped = "".join(c.upper() if f else c for c, f in zip(word, flips, strict=False))
    assert lexicon.scan(flipped, False).asked, flipped
    styled = _styled(word, _STYLES[style])
    if all(unicodedata.name(c, "") for c in styled):  # some math code points are reserved (no letter)
        assert lexicon.scan(styled, False).asked, styled


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["password", "api key", "passphrase", "recovery code", "seed phrase"]),
       st.sampled_from([" ", ".", "-", "/", "*", "_", " . ", "**"]))
def test_separators_inside_a_term_still_match(term: str, sep: str) -> None:
    lexicon = load_builtin_lexicon()
    spaced = sep.join(term.replace(" ", ""))
    assert lexicon.scan(spaced, False).asked, spaced


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["password", "passphrase", "mnemonic", "kennwort", "contraseña"]), st.data())
def test_one_typo_still_matches(word: str, data: st.DataObject) -> None:
    lexicon = load_builtin_lexicon()
    i = data.draw(st.integers(min_value=1, max_value=len(word) - 2))
    edit = data.draw(st.sampled_from(["drop", "swap", "double"]))
    if edit == "drop":
        typo = word[:i] + word[i + 1:]
    elif edit == "swap":
        typo = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    else:
        typo = word[:i] + word[i] + word[i:]
    assert lexicon.scan(f"Your {typo}", False).asked, typo


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalize_never_raises_and_returns_str(text: str) -> None:
    assert isinstance(normalize_text(text), str)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Cf", "Nd", "Zs"]) | st.characters(
    min_codepoint=0x300, max_codepoint=0x36F)))
def test_normalize_removes_format_characters_and_latin_accents(text: str) -> None:
    folded = normalize_text(text)
    assert not any(unicodedata.category(ch) == "Cf" or 0x300 <= ord(ch) <= 0x36F for ch in folded)


@pytest.mark.parametrize("text", ["Amount 1234", "Year 2026, order 123456", "Ticket 1234567", "Ref 123456789"])
def test_numbers_are_no_encoded_run(text: str) -> None:
    # Digits alone never decode to readable base64; as hex only in even runs of eight or more.
    assert not has_encoded_run(text)


def test_digits_that_are_hex_for_a_word_still_decode() -> None:
    assert decode_escapes("Enter your 70617373 here") == "Enter your pass here"
