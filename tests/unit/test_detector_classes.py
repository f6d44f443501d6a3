"""The detector classes fixed after blind set 2 (docs/sensitive-fields.md, "Classes").

Every example here is new, written for the class it stands for, in several languages: none is a row of
a corpus or a blind set. Each class has asks that must be blocked and harmless forms that must pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.policy.sensitive_fields import SensitiveFieldDetector
from gateway.policy.text_normalization import normalize_text

DETECTOR = SensitiveFieldDetector()


def field(title: str = "", description: str = "", name: str = "f", kind: str = "string",
          message: str = "Almost done.") -> dict[str, Any]:
    prop: dict[str, Any] = {"type": kind}
    if title:
        prop["title"] = title
    if description:
        prop["description"] = description
    return {"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {name: prop}}}


def blocked(params: dict[str, Any]) -> bool:
    return bool(DETECTOR.find(params))


# -- asks that must be found --------------------------------------------------------------------------

ASKS = [
    # Separators inside words: markdown emphasis, hyphens, dots, slashes, middle dots, spaced letters.
    ("separators", field("Pass_wort")),
    ("separators", field("**mot** de **pas**se")),
    ("separators", field("h.a.s.ł.o")),
    ("separators", field("パス・ワード")),
    ("separators", field("C o n t r a s e ñ a")),
    ("separators", field("Wieder/herstellungs/code")),
    ("separators", field("", "клю-ч A-P-I")),
    # Typos two edits away, in long words (same first and last letter).
    ("typos", field("Passwwordd")),
    ("typos", field("Contrasennaa")),
    ("typos", field("Wiederherstelungsscode")),
    ("typos", field("Резеррвнный код")),
    ("typos", field("Tookne de acesso")),
    ("typos", field("Los seis díigitos que te acabamos de enviar por SMS")),
    ("typos", field("Die vier Ziffern, die du am Geldautomaetn eintippst")),
    # Marks writers leave out: kana voicing, Thai tone marks.
    ("marks", field("パスワート")),
    ("marks", field("รหัสผาน")),
    # Asks by description: the PIN typed at a card terminal, codes that just arrived, what unlocks a laptop.
    ("description", field("Los cuatro dígitos que marcas en el datáfono")),
    ("description", field("Die Ziffern, die du am Kartenterminal eingibst")),
    ("description", field("The digits you punch in at the card machine")),
    ("description", field("Os números que acabaram de chegar no seu WhatsApp")),
    ("description", field("Wat je invoert op het vergrendelscherm van je telefoon")),
    ("description", field("Cyfry z dowodu osobistego")),
    ("description", field("Pet cifara koje vam je dala porezna uprava", name="x")),
    # Vault, master and encryption keys.
    ("vault", field("Clé maîtresse du coffre-fort")),
    ("vault", field("Hauptschlüssel der Verschlüsselung")),
    ("vault", field("マスターキー")),
    ("vault", field("", name="kek")),
    ("vault", field("Cheia de criptare a bazei de date")),
    # National ID names across countries.
    ("national_id", field("Emirates ID number")),
    ("national_id", field("PhilSys number")),
    ("national_id", field("Número de cédula")),
    ("national_id", field("Số căn cước")),
    ("national_id", field("Numer PESEL")),
    ("national_id", field("N.I.F.")),
    ("national_id", field("רשום את הספרות מהתעודה שלך", name="x")),
    # Identifier-only fields.
    ("identifier", field("", name="oauth_refresh")),
    ("identifier", field("", name="authorization_header")),
    # A long random string shown as an example in prose.
    ("value", field("Wert", "z. B. q7Lm2Xv9Rt4Kp8Wz1Nb6Hc3Yd5Gf0Ja2Se7Uo")),
]


@pytest.mark.parametrize(("cls", "params"), ASKS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(ASKS)])
def test_class_asks_are_blocked(cls: str, params: dict[str, Any]) -> None:
    assert blocked(params), (cls, params)


# -- harmless forms that must pass ----------------------------------------------------------------------

HARMLESS = [
    # An identifier that names or counts a secret: the title, in any language, asks for a name or a count.
    ("identifier_governs", field("Nombre de esta clave API", name="api_key_label")),
    ("identifier_governs", field("この API キーの名前", name="token_nickname")),
    ("identifier_governs", field("आपके कितने बैकअप कोड बचे हैं?", name="backup_codes_count", kind="integer")),
    # An identifier whose head noun is something else, under a title that names no secret.
    ("identifier_head", field("Stadtteil", name="pin_area")),
    ("identifier_head", field("お気に入りのソース", name="secret_sauce")),
    ("identifier_head", field("Расскажите, что случилось", name="password_issue")),
    # "What happened" questions describe an event.
    ("describe", field("Расскажите, что произошло, когда вы вводили пароль")),
    ("describe", field("पासवर्ड डालते समय क्या हुआ?")),
    ("describe", field("Cuéntanos qué pasó al escribir la contraseña")),
    # Keywords are not keys.
    ("keyword", field("Palabras clave del artículo")),
    ("keyword", field("Schlüsselwörter für die Suche")),
    ("keyword", field("Ключевые слова статьи")),
    ("keyword", field("Từ khóa chính của bài viết")),
    ("keyword", field("キーワードを3つ")),
    # A password word that means a motto or slogan.
    ("motto", field("Hasło festynu", "Krótkie motto na plakat")),
    ("motto", field("Die Parole des Sommerfests", "Ein kurzes Motto")),
    ("motto", field("Heslo akce", "Slogan na pozvánku")),
    # "Secret" qualifying an ordinary noun.
    ("secret_adjective", field("Your secret spice blend")),
    ("secret_adjective", field("Secret menu favourite")),
    # Short acronyms in lower case inside a longer label.
    ("acronym", field("Sin azúcar, por favor")),
    ("acronym", field("Ein Kommentar zur Bestellung")),
    # A misspelt governor still governs; an ordinary word is not "corrected" into a secret noun.
    ("typo_governor", field("Pubilc key")),
    ("typo_governor", field("Lbael for this API key")),
    ("typo_governor", field("Lable for the access token")),
    ("no_correction", field("Describe the problem")),
    # Letters spaced inside an ordinary word do not spell an acronym ("n i r" in "r e t e n i r").
    ("spaced", field("Points clés à r e t e n i r")),
    ("spaced", field("Points clés à r.e.t.e.n.i.r")),
    # Short governors that lose their diacritics count only as written: "tên" (name), not "ten".
    ("diacritics", field("Tên khóa", message="Khóa SSH mới")),
    # Other senses and questions about credentials.
    ("other", field("Primary key column")),
    ("other", field("Public encryption key (we encrypt files to you with it)")),
    ("other", field("How many key shares should the vault create?", kind="integer")),
    ("other", field("Name for this encryption key")),
    ("other", field("Random seed for the experiment")),
    ("other", field("Date of birth (8 digits)")),
    ("other", field("Last 4 digits of the card you paid with at the terminal")),
    ("other", field("Token budget per request", kind="integer")),
    ("other", field("Which 2FA method do you prefer?")),
    ("other", field("Card holder name")),
    ("other", field("Password policy: minimum length", kind="integer")),
    ("other", field("Commit SHA", "e.g. 4f2a9c1e7b3d5a8f0c6e2b1d9a7f3c5e8b0d4a6f")),
    ("other", field("SSH public key", "e.g. ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq7Lm2Xv9Rt4Kp8Wz1Nb6Hc3Yd5")),
]


@pytest.mark.parametrize(("cls", "params"), HARMLESS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(HARMLESS)])
def test_class_harmless_forms_pass(cls: str, params: dict[str, Any]) -> None:
    assert not blocked(params), (cls, params, DETECTOR.find(params))


def test_ten_is_not_a_vietnamese_name_governor() -> None:
    # English "ten" inside a description is no governor: the ask stays.
    assert blocked(field("One of the ten backup codes you printed when you turned on 2-step sign-in"))


def test_optional_marks_fold_away() -> None:
    assert normalize_text("パスワード") == normalize_text("パスワート")
    assert normalize_text("รหัสผ่าน") == normalize_text("รหัสผาน")
    for text in ("パスワード", "รหัสผ่าน", "ລະຫັດຜ່ານ"):
        assert normalize_text(normalize_text(text)) == normalize_text(text)
