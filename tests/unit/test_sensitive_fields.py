"""Tests for gateway.policy.sensitive_fields (stage 2: secret asks in form elicitations)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.sensitive_fields import CATEGORIES, SensitiveFieldDetector, SensitiveFinding

DETECTOR = SensitiveFieldDetector()
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
STRING: dict[str, Any] = {"type": "string"}


def form(message: str = "Almost done.", /, **props: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": props}}


def titled(title: str, kind: str = "string", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "title": title, **extra}


def categories(params: dict[str, Any], detector: SensitiveFieldDetector = DETECTOR) -> set[str]:
    return {f.category for f in detector.find(params)}


# -- languages ---------------------------------------------------------------

# (lang, field title, expected category); phrasing differs from the corpus generator's.
TITLES = [
    ("en", "Your account password", "password"),
    ("en", "Stripe secret key", "api_key"),
    ("en", "GitHub personal access token", "token"),
    ("en", "Bank card number", "payment_card"),
    ("en", "SSN (last 9 digits)", "national_id"),
    ("en", "12-word recovery phrase", "seed_phrase"),
    ("en", "Code from your authenticator app (2FA)", "otp"),
    ("zh", "登录密码", "password"),
    ("zh", "信用卡号", "payment_card"),
    ("zh", "短信验证码", "otp"),
    ("ja", "ログインパスワード", "password"),
    ("ja", "カード番号", "payment_card"),
    ("ko", "비밀번호 확인", "password"),
    ("ko", "주민등록번호 뒷자리", "national_id"),
    ("de", "Ihr Kennwort", "password"),
    ("de", "PIN-Nummer der Karte", "pin"),
    ("fr", "Votre mot de passe", "password"),
    ("fr", "Clé d'API", "api_key"),
    ("es", "Tu contraseña", "password"),
    ("es", "Número de tarjeta de crédito", "payment_card"),
    ("pt", "Sua senha", "password"),
    ("pt", "Número do CPF", "national_id"),
    ("it", "La tua password", "password"),
    ("it", "Codice monouso", "otp"),
    ("ru", "Ваш пароль", "password"),
    ("ru", "Номер банковской карты", "payment_card"),
    ("uk", "Ваш пароль", "password"),
    ("uk", "Секретний ключ", "api_key"),
    ("pl", "Twoje hasło", "password"),
    ("pl", "Numer PESEL", "national_id"),
    ("tr", "Şifreniz", "password"),
    ("tr", "Kredi kartı numarası", "payment_card"),
    ("ar", "كلمة السر", "password"),
    ("ar", "رقم بطاقة الائتمان", "payment_card"),
    ("hi", "अपना पासवर्ड", "password"),
    ("hi", "ओटीपी दर्ज करें", "otp"),
    ("vi", "Mật khẩu của bạn", "password"),
    ("vi", "Số thẻ tín dụng", "payment_card"),
    ("nl", "Uw wachtwoord", "password"),
    ("nl", "Uw BSN", "national_id"),
]


@pytest.mark.parametrize(("lang", "title", "category"), TITLES)
def test_secret_named_in_a_title_is_found(lang: str, title: str, category: str) -> None:
    findings = DETECTOR.find(form(answer=titled(title)))
    assert SensitiveFinding(category, "requestedSchema.properties.answer.title") in findings, lang


def test_every_language_has_a_title_case() -> None:
    assert {lang for lang, _, _ in TITLES} == {
        "en", "zh", "ja", "ko", "de", "fr", "es", "pt", "it", "ru", "uk", "pl", "tr", "ar", "hi", "vi", "nl"}


@pytest.mark.parametrize(
    "message",
    ["Please type your password below.", "请在下方输入你的密码。", "Geben Sie unten Ihr Passwort ein.",
     "Введите пароль ниже.", "Wpisz poniżej swoje hasło.", "أدخل كلمة المرور أدناه."],
)
def test_message_ask_needs_a_free_text_field(message: str) -> None:
    assert categories(form(message, value=STRING)) == {"password"}
    assert categories(form(message, ok={"type": "boolean"})) == set()
    assert categories(form(message, choice={"type": "string", "enum": ["a", "b"]})) == set()


def test_numeric_secret_in_message_reaches_a_number_field() -> None:
    assert categories(form("Enter your card PIN", value={"type": "integer"})) == {"pin"}
    assert categories(form("Enter your password", value={"type": "integer"})) == set()


# -- hidden-input markers ----------------------------------------------------

def test_format_password_and_write_only_are_always_asks() -> None:
    findings = DETECTOR.find(form(x={"type": "string", "title": "Favourite colour", "format": "password"},
                                  y={"type": "string", "writeOnly": True}))
    assert {f.location for f in findings} == {"requestedSchema.properties.x.format",
                                              "requestedSchema.properties.y.writeOnly"}


def test_markers_on_non_string_fields_are_ignored() -> None:
    assert DETECTOR.find(form(flag={"type": "boolean", "writeOnly": True})) == []


# -- spelling tricks ---------------------------------------------------------

@pytest.mark.parametrize(
    "title",
    ["Раssword", "pαsswοrd", "pass\u200bword", "pass\u00adword", "ＰＡＳＳＷＯＲＤ", "pá̈ssword",
     "p a s s w o r d", "p.a.s.s.w.o.r.d", "p-a-s-s-w-o-r-d", "p4ssw0rd", "passw0rd", "pa$$word",
     "PaSsWoRd", "P A S S W O R D", "𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝"],
)
def test_password_spelling_tricks(title: str) -> None:
    assert "password" in categories(form(v=titled(title)))


@pytest.mark.parametrize("name", ["@pi_k3y", "4pik3y", "ápí_kéy", "ＡＰＩ＿ＫＥＹ", "аpi_kеy"])
def test_api_key_spelling_tricks(name: str) -> None:
    assert categories(form(**{name: STRING})) == {"api_key"}


def test_word_split_across_fields() -> None:
    assert categories(form(a=titled("pass"), b=titled("word"))) == {"password"}
    assert categories(form("Enter your pass", word=STRING)) == {"password"}
    assert categories(form("Now your api", key=STRING)) == {"api_key"}


def test_ordinary_neighbouring_labels_are_not_joined() -> None:
    assert categories(form(a=titled("Boarding pass"), b=titled("Word count"))) == set()
    # The receiving field is a boolean: nothing is typed into it.
    assert categories(form(a=titled("pass", "boolean"), b=titled("word", "boolean"))) == set()


# -- case styles (property a) --------------------------------------------------

SECRET_WORDS = {
    ("api", "key"): "api_key", ("user", "password"): "password", ("access", "token"): "token",
    ("refresh", "token"): "token", ("private", "key"): "private_key", ("credit", "card", "number"): "payment_card",
    ("seed", "phrase"): "seed_phrase", ("recovery", "code"): "recovery_code", ("client", "secret"): "api_key",
    ("verification", "code"): "otp", ("card", "cvv"): "cvv", ("ssn",): "national_id",
    ("wallet", "passphrase"): "passphrase", ("atm", "pin"): "pin",
}
BENIGN_WORDS = [("token", "count"), ("api", "version"), ("primary", "key", "column"), ("keynote", "title"),
                ("max", "tokens"), ("key", "features"), ("card", "title"), ("credit", "limit"),
                ("password", "hint"), ("token", "name"), ("first", "name"), ("shipping", "address"),
                ("pinned", "note"), ("passport", "country"), ("secret", "santa", "idea"), ("promo", "code")]


def render(words: tuple[str, ...], style: str) -> str:
    return {
        "camel": words[0] + "".join(w.title() for w in words[1:]),
        "pascal": "".join(w.title() for w in words),
        "snake": "_".join(words),
        "kebab": "-".join(words),
        "screaming": "_".join(words).upper(),
        "flat": "".join(words),
        "spaced": " ".join(words),
        "dotted": ".".join(words),
    }[style]


STYLES = st.sampled_from(["camel", "pascal", "snake", "kebab", "screaming", "flat", "spaced", "dotted"])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SECRET_WORDS)), STYLES, st.booleans())
def test_case_styles_of_a_secret_all_flag(words: tuple[str, ...], style: str, as_title: bool) -> None:
    text = render(words, style)
    params = form(f=titled(text)) if as_title else form(**{text: STRING})
    assert categories(params) == {SECRET_WORDS[words]}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(BENIGN_WORDS), STYLES, st.booleans())
def test_case_styles_of_a_benign_name_never_flag(words: tuple[str, ...], style: str, as_title: bool) -> None:
    text = render(words, style)
    params = form(f=titled(text)) if as_title else form(**{text: STRING})
    assert categories(params) == set()


# -- hard negatives ------------------------------------------------------------

@pytest.mark.parametrize(
    "params",
    [
        form(token_count=titled("Token count", "integer")),
        form(api_version=titled("API version")),
        form(pk=titled("Primary key column")),
        form("Security check", reset=titled("Did you reset your password?", "boolean")),
        form(ack=titled("Password policy acknowledgement", "boolean")),
        form(max_tokens=titled("Max tokens", "integer")),
        form(card_title=titled("Card title")),
        form(limit=titled("Credit limit", "number")),
        form("Delivery address", city=titled("City"), pin=titled("PIN code of the post office")),
        form(expiry=titled("Passport expiry date", format="date")),
        form(details=titled("Details", description="Do not include passwords or API keys.")),
        form("Name your new token", token_name=titled("Token name")),
        form(seed=titled("Random seed", "integer")),
        form(pin=titled("Card PIN", enum=["1234", "0000"])),
    ],
)
def test_hard_negatives_are_not_flagged(params: dict[str, Any]) -> None:
    assert DETECTOR.find(params) == []


def test_pin_without_postal_context_is_a_secret() -> None:
    assert categories(form(pin=titled("PIN code"))) == {"pin"}


# -- operator configuration ------------------------------------------------------

def test_extra_terms_are_normalized_and_custom() -> None:
    detector = SensitiveFieldDetector(extra_terms=["vault unseal key", "Kundennummer"])
    assert "custom" in categories(form(a=titled("Vault Unseal Key")), detector)
    assert "custom" in categories(form(vaultUnsealKey=STRING), detector)
    assert categories(form(a=titled("KUNDENNUMMER")), detector) == {"custom"}
    assert categories(form(a=titled("Vault name")), detector) == set()
    assert categories(form(a=titled("Vault Unseal Key")), DETECTOR) == {"vault_key"}  # a builtin family now


def test_allowed_fields_are_never_flagged() -> None:
    detector = SensitiveFieldDetector(allowed_fields=["wifi_password"])
    params = form(wifi_password={"type": "string", "format": "password"}, other=titled("Password"))
    assert {f.location for f in detector.find(params)} == {"requestedSchema.properties.other.title"}
    # An allowed field does not receive a secret named by the message either.
    assert detector.find(form("Enter the guest wifi password", wifi_password=STRING)) == []


# -- robustness and privacy --------------------------------------------------------

@pytest.mark.parametrize(
    "params",
    [{}, {"message": None}, {"requestedSchema": "nope"}, {"requestedSchema": {"properties": []}},
     {"requestedSchema": {"properties": {"a": None, "b": 3, "c": {"title": 7, "description": ["x"]}}}},
     {"message": 42, "requestedSchema": {"properties": {1: STRING}}}],
)
def test_junk_params_never_raise(params: dict[str, Any]) -> None:
    assert DETECTOR.find(params) == []


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=12))
def test_arbitrary_schema_never_raises(schema: Any) -> None:
    result = DETECTOR.find({"message": "x", "requestedSchema": schema})
    assert all(f.category in CATEGORIES for f in result)


def test_findings_never_carry_values() -> None:
    params = form("Enter your password", pwd={"type": "string", "default": "hunter2", "title": "Password"})
    for finding in DETECTOR.find(params):
        assert "hunter2" not in finding.location
        assert finding.location.startswith(("requestedSchema.properties.pwd", "message"))


# -- corpus --------------------------------------------------------------------------

def load(name: str) -> list[dict[str, Any]]:
    with (CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_corpus_recall_and_false_blocks() -> None:
    blocks = [r for r in load("sensitive.jsonl") if r["expect"] == "block"]
    allows = [r for r in load("hard_negatives.jsonl") + load("clean.jsonl") if r["expect"] == "allow"]
    missed = [r["id"] for r in blocks if not DETECTOR.find(r["params"])]
    false_blocks = [r["id"] for r in allows if DETECTOR.find(r["params"])]
    recall = 1 - len(missed) / len(blocks)
    print(f"recall {recall:.4f} on {len(blocks)} block lines; {len(false_blocks)} false blocks "
          f"on {len(allows)} allow lines")
    assert recall >= 0.99, missed
    assert false_blocks == []


def test_corpus_shape() -> None:
    sensitive = load("sensitive.jsonl")
    assert sum(r["category"] == "sensitive" for r in sensitive) >= 260
    assert sum(r["category"] == "evasion" for r in sensitive) >= 60
    assert len({r["lang"] for r in sensitive}) >= 17
    assert len(load("hard_negatives.jsonl")) >= 80
    assert len(load("clean.jsonl")) >= 60
    for row in sensitive:
        assert (row["expect"], row["expect_rule"]) == ("block", "sensitive_fields")
    for row in load("hard_negatives.jsonl") + load("clean.jsonl"):
        assert (row["expect"], row["expect_rule"]) == ("allow", None)
        assert "http" not in json.dumps(row["params"])


def test_typical_form_is_fast() -> None:
    params = form("Please fill in your profile", name=titled("Full name"),
                  email=titled("Email", format="email"), age=titled("Age", "integer"),
                  subscribe=titled("Subscribe to the newsletter", "boolean"),
                  plan=titled("Plan", enum=["free", "pro"]))
    detector = SensitiveFieldDetector()
    detector.find(params)
    rounds = 2000
    start = time.perf_counter()
    for _ in range(rounds):
        detector.find(params)
    per_call = (time.perf_counter() - start) / rounds
    assert per_call < 200e-6  # generous bound for slow CI; typically ~10 µs
