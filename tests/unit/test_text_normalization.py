"""Tests for gateway.policy.text_normalization."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.text_normalization import (
    camel_split,
    collapse_spaced_letters,
    leet_variants,
    normalize_text,
)


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
        ("Straße", "strasse"),
        ("mật khẩu", "mat khau"),
        ("İstanbul", "istanbul"),
    ],
)
def test_tricks_fold_to_plain_text(raw: str, folded: str) -> None:
    assert normalize_text(raw) == folded


def test_native_scripts_are_not_folded_onto_ascii() -> None:
    # Arabic, CJK and Hangul keep their letters: folding them would merge words.
    for text in ("كلمة المرور", "密码", "비밀번호"):
        assert not normalize_text(text).isascii()


def test_distinct_words_stay_distinct() -> None:
    assert normalize_text("пароль") != normalize_text("паспорт")
    assert normalize_text("pin") != normalize_text("pan")


def test_camel_split() -> None:
    assert camel_split("APIKeyValue") == "API Key Value"
    assert camel_split("userPassword") == "user Password"
    assert camel_split("snake_case") == "snake_case"


def test_collapse_spaced_letters() -> None:
    assert collapse_spaced_letters("enter p a s s w o r d now") == "enter password now"
    assert collapse_spaced_letters("p.a.s.s.w.o.r.d") == "password"
    assert collapse_spaced_letters("a cat") == "a cat"  # two letters are not a run


def test_leet_variants() -> None:
    assert "password" in leet_variants("p4ssw0rd")
    assert "api_key" in leet_variants("@pi_k3y")
    assert leet_variants("plain words") == []
    assert leet_variants("2024") == []  # numbers alone are not leetspeak
    assert {"pin", "pln"} <= set(leet_variants("p1n"))


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
@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Mn", "Cf", "Nd", "Zs"])))
def test_normalize_removes_format_and_combining_characters(text: str) -> None:
    import unicodedata

    assert not any(unicodedata.category(ch) in {"Cf", "Mn", "Me"} for ch in normalize_text(text))
