"""Issue 11: the deciding rule (does the answer *is* the secret?) as classes, in many languages."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.link_stripping import strip_links
from gateway.policy.secret_lexicon import builtin_language_data, load_builtin_lexicon
from gateway.policy.secret_values import pattern_asks_for_secret, pattern_sample, value_secret_kind
from gateway.policy.sensitive_fields import SensitiveFieldDetector

DETECTOR = SensitiveFieldDetector()


def form(message: str = "Please fill in.", **props: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": props}}


def field(title: str = "", kind: str = "string", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, **extra}
    if title:
        out["title"] = title
    return out


def asks(params: dict[str, Any]) -> set[str]:
    return {f.category for f in DETECTOR.find(params)}


# -- coverage ------------------------------------------------------------------------------------

FAMILIES = ("password", "passphrase", "pin", "otp", "api_key", "access_token", "private_key", "recovery_code",
            "seed_phrase", "card_number", "cvv", "national_id", "vault_key")


def test_lexicon_covers_many_languages_and_every_family() -> None:
    data = [d for d in builtin_language_data() if d["lang"] != "mul"]
    assert len(data) >= 60
    english = next(d for d in data if d["lang"] == "en")
    assert set(FAMILIES) <= set(english["families"])
    # Every language names at least passwords, PINs and one-time codes.
    for d in data:
        assert {"password", "pin", "otp"} & set(d["families"]), d["lang"]


@pytest.mark.parametrize("title", [
    "Contraseña", "Mot de passe", "Passwort", "Senha", "Пароль", "Şifre", "密码", "パスワード", "비밀번호",
    "Kata sandi", "Mật khẩu", "पासवर्ड", "كلمة المرور", "סיסמה", "Salasana", "Hasło", "Jelszó", "Parolă",
    "Κωδικός πρόσβασης", "Lösenord", "Wachtwoord", "Slaptažodis", "Codice fiscale", "Código de verificación",
    "验证码", "인증번호", "Frase de recuperación", "助记词", "Clé API", "Zugriffstoken", "PESEL", "आधार नंबर",
])
def test_secret_nouns_in_many_languages(title: str) -> None:
    assert asks(form(x=field(title)))


# -- asking by description -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "category"), [
    ("Type the 6 digits we just texted you", "otp"),
    ("Die sechs Ziffern, die wir dir gerade per SMS geschickt haben", "otp"),
    ("Los 6 dígitos que te acabamos de enviar por SMS", "otp"),
    ("Шесть цифр, которые мы только что отправили вам", "otp"),
    ("我们刚刚发到你手机上的6位数字", "otp"),
    ("The three digits on the back of your card", "cvv"),
    ("Les trois chiffres au dos de votre carte", "cvv"),
    ("The 4-digit number you use at the cash machine", "pin"),
    ("The words you wrote down when you set up your wallet", "seed_phrase"),
    ("What do you type to unlock your laptop?", "password"),
    ("Copy everything inside ~/.ssh/id_rsa and paste it here", "private_key"),
    ("Paste the string that starts with sk- from your dashboard", "api_key"),
])
def test_asking_by_description(text: str, category: str) -> None:
    assert category in asks(form(x=field(text)))


@pytest.mark.parametrize("text", [
    "Tracking code we sent you by SMS", "Order number we emailed you", "How many digits does your PIN have?",
    "Which email do you use to log in?", "Phone number we can text you at",
])
def test_descriptions_of_other_things_are_not_asks(text: str) -> None:
    assert asks(form(x=field(text))) == set()


# -- governors: name, count, choose, describe; other senses -------------------------------------

@pytest.mark.parametrize("title", [
    "Name for this API key", "How many backup codes do you have left?", "Password hint", "Token count",
    "Why do you need a new API key?", "Secret ingredient", "Ring bearer", "Postal PIN code", "Hasło reklamowe",
    "Palabra clave", "Mot-clé", "Nombre de la clave", "密钥名称", "Card holder name", "Primary key column",
    "Last 4 digits of your card", "SSH public key", "Pin lokasi", "Boarding pass number",
])
def test_mentions_and_other_senses_are_not_asks(title: str) -> None:
    assert asks(form(x=field(title))) == set()


def test_a_choice_or_a_yes_no_never_carries_a_secret() -> None:
    assert asks(form(x=field("Password", "boolean"))) == set()
    assert asks(form(x=field("Your PIN", enum=["1234", "0000"]))) == set()
    assert asks(form(x=field("How many recovery codes?", "integer"))) == set()
    assert asks(form(x=field("PIN", "integer"))) == {"pin"}


def test_a_weak_acronym_needs_capitals_or_a_label_of_its_own() -> None:
    assert asks(form(x=field("DNI"))) == {"national_id"}
    assert asks(form(x=field("Liczba dni urlopu", "integer"))) == set()  # Polish "days"
    assert asks(form(x=field("Was ist passiert?"))) == set()


def test_create_governs_only_secrets_a_service_issues() -> None:
    assert asks(form("Create an API key", ip=field("Allowed IP range"))) == set()
    assert "password" in asks(form("Create a password", value=field()))


# -- the message, split words, other fields -------------------------------------------------------

def test_message_reaches_a_lone_or_generic_receiver_only() -> None:
    assert asks(form("Type your account password to confirm.", c=field("Confirmation"))) == {"password"}
    assert asks(form("Enter your PIN", name=field("Full name"), city=field("City"))) == set()


@pytest.mark.parametrize(("message", "title"), [
    ("To sign the CSR, paste your private", "key (PEM)"),
    ("Almost done! Type the three digits on the", "back of your card"),
    ("Per accedere scrivi la tua pass", "word"),
])
def test_an_ask_split_over_message_and_field(message: str, title: str) -> None:
    assert asks(form(message, a=field(title)))


# -- evasions as classes ----------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["Password", "API key", "Recovery code", "Passwort", "Contraseña"]),
       st.sampled_from(["rlo", "lro_reverse", "plain_reverse"]))
def test_reversed_text(term: str, style: str) -> None:
    if style == "rlo":
        text = "\u202e" + term[::-1] + "\u202c"
    elif style == "lro_reverse":
        text = term[::-1][::-1]  # written as is: the control case
    else:
        text = term[::-1]
    assert asks(form(x=field(text))), text


def test_hebrew_under_a_left_to_right_override_is_read_backwards() -> None:
    assert asks(form(x=field("\u202dהמסיס\u202c"))) == {"password"}


@pytest.mark.parametrize("title", ["pswd", "pwd", "tkn", "Passwrod", "Recovry code", "Privte key", "Kata sadni",
                                   "mot de passse", "HaSłO", "s-e-n-h-a", "كلمـــة المـــرور", "T\u200bA\u200bN"])
def test_abbreviations_typos_separators(title: str) -> None:
    assert asks(form(x=field(title))), title


# -- secret-shaped values -------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "kind"), [
    ("sk_live_51HxxxxxxxxxxxxxxxxxxxxxxX", "secret_value"),
    ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "secret_value"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=", "secret_value"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "secret_value"),
    ("postgres://app:mGULqb3KWmEkFy@db.intern:5432/prod", "secret_value"),
    ("orbit velvet canyon shrimp ladder noble frost kiwi autumn relief gospel tuna", "seed_phrase"),
    ("4970 9359 4600 9516", "payment_card"),
    ("b8d7026ff4cfb688c5e62e1758a960221bd6a3dad78127275d78baf1c5486fa0", "secret_value"),
])
def test_credential_shaped_values(value: str, kind: str) -> None:
    assert value_secret_kind(value) == kind
    assert kind in asks(form(x=field("Value", default=value)))


@pytest.mark.parametrize("value", ["laptop-arbeit", "10.0.0.0/8", "2024-05-01", "Just a label, e.g. billing-worker",
                                   "4970 9359 4600 9517", "the quick brown fox jumps over the lazy dog again and again"])
def test_ordinary_values(value: str) -> None:
    assert value_secret_kind(value) is None


def test_a_hash_next_to_checksum_is_not_a_key() -> None:
    digest = "b8d7026ff4cfb688c5e62e1758a960221bd6a3dad78127275d78baf1c5486fa0"
    assert value_secret_kind(digest, "SHA-256 checksum of the file") is None


@pytest.mark.parametrize(("pattern", "secret"), [
    ("^xox[bp]-[0-9]+-[0-9]+-[A-Za-z0-9]+$", True),
    (r"^[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}$", True),
    ("^4[0-9]{12}(?:[0-9]{3})?$", True),
    ("^ghp_[A-Za-z0-9]{36}$", True),
    (r"^\d{6}$", False),
    (r"^[1-9]\d{5}$", False),
    ("^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", False),
])
def test_patterns(pattern: str, secret: bool) -> None:
    assert pattern_sample(pattern) is not None
    assert pattern_asks_for_secret(pattern) is secret


# -- links: e-mail addresses are not links -------------------------------------------------------------

@pytest.mark.parametrize("text", ["Write to support@help-desk.biz today", "minji.kim@example.kr",
                                  "Range 10.0.0.0/8, please"])
def test_plain_e_mail_addresses_and_ranges_are_kept(text: str) -> None:
    assert strip_links(text) == (text, 0)


@pytest.mark.parametrize("text", ["mailto:help@evil.com", "<x@evil.com>", "see evil.com", "10.0.0.5/admin"])
def test_explicit_links_are_removed(text: str) -> None:
    assert strip_links(text)[1] >= 1


# -- speed ---------------------------------------------------------------------------------------------

def test_the_lexicon_loads_once_per_process() -> None:
    assert load_builtin_lexicon() is load_builtin_lexicon()
