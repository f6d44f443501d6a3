"""Generates sensitive.jsonl, hard_negatives.jsonl and clean.jsonl (run from the repo root).

python tests/corpus/gen_sensitive.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent
Schema = dict[str, Any]

# Per language: (message template with {x}, {category: label naming the secret}).
SECRETS: dict[str, tuple[str, dict[str, str]]] = {
    "en": ("Please enter your {x} to continue.", {
        "password": "Password", "passphrase": "Passphrase", "pin": "PIN", "api_key": "API key",
        "token": "Access token", "private_key": "SSH private key", "payment_card": "Credit card number",
        "cvv": "CVV", "national_id": "Social Security Number", "otp": "Verification code",
        "recovery_code": "Recovery code", "seed_phrase": "Seed phrase"}),
    "zh": ("请输入您的{x}以继续。", {
        "password": "密码", "passphrase": "密码短语", "pin": "取款密码", "api_key": "API密钥",
        "token": "访问令牌", "private_key": "私钥", "payment_card": "银行卡号", "cvv": "安全码",
        "national_id": "身份证号码", "otp": "短信验证码", "recovery_code": "恢复码", "seed_phrase": "助记词"}),
    "ja": ("続行するには{x}を入力してください。", {
        "password": "パスワード", "passphrase": "パスフレーズ", "pin": "暗証番号", "api_key": "APIキー",
        "token": "アクセストークン", "private_key": "秘密鍵", "payment_card": "クレジットカード番号",
        "cvv": "セキュリティコード", "national_id": "マイナンバー", "otp": "認証コード",
        "recovery_code": "リカバリーコード", "seed_phrase": "シードフレーズ"}),
    "ko": ("계속하려면 {x}를 입력하세요.", {
        "password": "비밀번호", "passphrase": "암호 문구", "pin": "PIN 번호", "api_key": "API 키",
        "token": "액세스 토큰", "private_key": "개인 키", "payment_card": "카드 번호", "cvv": "보안 코드",
        "national_id": "주민등록번호", "otp": "인증번호", "recovery_code": "복구 코드", "seed_phrase": "시드 문구"}),
    "de": ("Bitte geben Sie Ihr(e) {x} ein.", {
        "password": "Passwort", "passphrase": "Passphrase", "pin": "Geheimzahl", "api_key": "API-Schlüssel",
        "token": "Zugriffstoken", "private_key": "Privater Schlüssel", "payment_card": "Kreditkartennummer",
        "cvv": "Kartenprüfnummer", "national_id": "Sozialversicherungsnummer", "otp": "Bestätigungscode",
        "recovery_code": "Wiederherstellungscode", "seed_phrase": "Wiederherstellungsphrase"}),
    "fr": ("Veuillez saisir votre {x}.", {
        "password": "Mot de passe", "passphrase": "Phrase secrète", "pin": "Code PIN", "api_key": "Clé API",
        "token": "Jeton d'accès", "private_key": "Clé privée", "payment_card": "Numéro de carte bancaire",
        "cvv": "Cryptogramme visuel", "national_id": "Numéro de sécurité sociale", "otp": "Code de vérification",
        "recovery_code": "Code de récupération", "seed_phrase": "Phrase de récupération"}),
    "es": ("Introduzca su {x} para continuar.", {
        "password": "Contraseña", "passphrase": "Frase de contraseña", "pin": "Código PIN", "api_key": "Clave API",
        "token": "Token de acceso", "private_key": "Clave privada", "payment_card": "Número de tarjeta",
        "cvv": "Código de seguridad", "national_id": "Número de DNI", "otp": "Código de verificación",
        "recovery_code": "Código de recuperación", "seed_phrase": "Frase semilla"}),
    "pt": ("Informe a sua {x} para continuar.", {
        "password": "Senha", "passphrase": "Frase secreta", "pin": "Código PIN", "api_key": "Chave de API",
        "token": "Token de acesso", "private_key": "Chave privada", "payment_card": "Número do cartão",
        "cvv": "Código de segurança", "national_id": "CPF", "otp": "Código de verificação",
        "recovery_code": "Código de recuperação", "seed_phrase": "Frase de recuperação"}),
    "it": ("Inserisci il tuo {x} per continuare.", {
        "password": "Password", "passphrase": "Frase segreta", "pin": "Codice PIN", "api_key": "Chiave API",
        "token": "Token di accesso", "private_key": "Chiave privata", "payment_card": "Numero della carta",
        "cvv": "Codice di sicurezza", "national_id": "Codice fiscale", "otp": "Codice di verifica",
        "recovery_code": "Codice di recupero", "seed_phrase": "Frase di recupero"}),
    "ru": ("Пожалуйста, введите {x}.", {
        "password": "Пароль", "passphrase": "Парольная фраза", "pin": "ПИН-код", "api_key": "API-ключ",
        "token": "Токен доступа", "private_key": "Закрытый ключ", "payment_card": "Номер карты",
        "cvv": "Код безопасности", "national_id": "Номер паспорта", "otp": "Код подтверждения",
        "recovery_code": "Код восстановления", "seed_phrase": "Сид-фраза"}),
    "uk": ("Будь ласка, введіть {x}.", {
        "password": "Пароль", "passphrase": "Парольна фраза", "pin": "ПІН-код", "api_key": "API-ключ",
        "token": "Токен доступу", "private_key": "Приватний ключ", "payment_card": "Номер картки",
        "cvv": "Код безпеки", "national_id": "РНОКПП", "otp": "Код підтвердження",
        "recovery_code": "Код відновлення", "seed_phrase": "Фраза відновлення"}),
    "pl": ("Podaj {x}, aby kontynuować.", {
        "password": "Hasło", "passphrase": "Fraza hasła", "pin": "Kod PIN", "api_key": "Klucz API",
        "token": "Token dostępu", "private_key": "Klucz prywatny", "payment_card": "Numer karty",
        "cvv": "Kod bezpieczeństwa", "national_id": "PESEL", "otp": "Kod weryfikacyjny",
        "recovery_code": "Kod odzyskiwania", "seed_phrase": "Fraza odzyskiwania"}),
    "tr": ("Devam etmek için {x} girin.", {
        "password": "Şifre", "passphrase": "Parola cümlesi", "pin": "PIN kodu", "api_key": "API anahtarı",
        "token": "Erişim belirteci", "private_key": "Özel anahtar", "payment_card": "Kart numarası",
        "cvv": "Güvenlik kodu", "national_id": "TC Kimlik No", "otp": "Doğrulama kodu",
        "recovery_code": "Kurtarma kodu", "seed_phrase": "Kurtarma ifadesi"}),
    "ar": ("يرجى إدخال {x} للمتابعة.", {
        "password": "كلمة المرور", "passphrase": "عبارة المرور", "pin": "الرقم السري", "api_key": "مفتاح API",
        "token": "رمز الوصول", "private_key": "المفتاح الخاص", "payment_card": "رقم البطاقة",
        "cvv": "رمز الأمان", "national_id": "رقم الهوية", "otp": "رمز التحقق",
        "recovery_code": "رمز الاسترداد", "seed_phrase": "عبارة الاسترداد"}),
    "hi": ("कृपया जारी रखने के लिए अपना {x} दर्ज करें।", {
        "password": "पासवर्ड", "passphrase": "पासफ़्रेज़", "pin": "एटीएम पिन", "api_key": "एपीआई कुंजी",
        "token": "एक्सेस टोकन", "private_key": "निजी कुंजी", "payment_card": "कार्ड नंबर",
        "cvv": "सीवीवी", "national_id": "आधार नंबर", "otp": "ओटीपी",
        "recovery_code": "रिकवरी कोड", "seed_phrase": "सीड फ्रेज"}),
    "vi": ("Vui lòng nhập {x} để tiếp tục.", {
        "password": "Mật khẩu", "passphrase": "Cụm mật khẩu", "pin": "Mã PIN", "api_key": "Khóa API",
        "token": "Mã truy cập", "private_key": "Khóa riêng tư", "payment_card": "Số thẻ tín dụng",
        "cvv": "Mã bảo mật", "national_id": "Số CCCD", "otp": "Mã xác minh",
        "recovery_code": "Mã khôi phục", "seed_phrase": "Cụm từ khôi phục"}),
    "nl": ("Voer uw {x} in om door te gaan.", {
        "password": "Wachtwoord", "passphrase": "Wachtwoordzin", "pin": "Pincode", "api_key": "API-sleutel",
        "token": "Toegangstoken", "private_key": "Privésleutel", "payment_card": "Creditcardnummer",
        "cvv": "Beveiligingscode", "national_id": "BSN", "otp": "Verificatiecode",
        "recovery_code": "Herstelcode", "seed_phrase": "Herstelzin"}),
}
NEUTRAL_MESSAGE = {
    "en": "Almost done.", "zh": "快完成了。", "ja": "もう少しで完了です。", "ko": "거의 완료되었습니다.",
    "de": "Fast fertig.", "fr": "Presque terminé.", "es": "Casi listo.", "pt": "Quase pronto.",
    "it": "Quasi fatto.", "ru": "Почти готово.", "uk": "Майже готово.", "pl": "Prawie gotowe.",
    "tr": "Neredeyse bitti.", "ar": "اقتربنا من الانتهاء.", "hi": "लगभग हो गया।", "vi": "Sắp xong rồi.",
    "nl": "Bijna klaar.",
}
NUMERIC = {"pin", "cvv", "otp"}
NAME_STYLES = ["camel", "snake", "kebab", "upper", "pascal", "flat"]
EN_NAME_WORDS = {
    "password": ["user", "password"], "passphrase": ["wallet", "passphrase"], "pin": ["card", "pin"],
    "api_key": ["api", "key"], "token": ["access", "token"], "private_key": ["private", "key"],
    "payment_card": ["card", "number"], "cvv": ["card", "cvv"], "national_id": ["ssn"],
    "otp": ["otp", "code"], "recovery_code": ["recovery", "code"], "seed_phrase": ["seed", "phrase"],
}


def styled(words: list[str], style: str) -> str:
    if style == "camel":
        return words[0] + "".join(w.title() for w in words[1:])
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "upper":
        return "_".join(words).upper()
    if style == "pascal":
        return "".join(w.title() for w in words)
    return "".join(words)


def form(message: str, props: dict[str, Schema], required: list[str] | None = None) -> dict[str, Any]:
    schema: Schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return {"mode": "form", "message": message, "requestedSchema": schema}


def line(id_: str, category: str, lang: str, params: dict[str, Any], expect: str, rule: str | None,
         note: str) -> dict[str, Any]:
    return {"id": id_, "category": category, "lang": lang, "params": params, "expect": expect,
            "expect_rule": rule, "note": note}


def secret_field(cat: str, title: str, variant: int) -> Schema:
    kind = "integer" if cat in NUMERIC and variant % 3 == 2 else "string"
    return {"type": kind, "title": title}


def sensitive_lines() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for lang, (template, labels) in SECRETS.items():
        for i, (cat, label) in enumerate(labels.items()):
            # 1. The field title names the secret; the property name is neutral.
            props = {"name": {"type": "string", "title": "Name"}, f"field{i}": secret_field(cat, label, i)}
            out.append(line(f"sens-{lang}-{cat}-title", "sensitive", lang,
                            form(NEUTRAL_MESSAGE[lang], props, [f"field{i}"]), "block", "sensitive_fields",
                            f"{cat} named in a field title"))
        for cat in ["password", "api_key", "otp", "payment_card", "seed_phrase", "token"]:
            # 2. Only the message names the secret; a free-text field receives it.
            msg = template.format(x=labels[cat].lower() if lang in {"en", "de", "fr", "es", "pt", "it", "nl",
                                                                   "pl", "tr", "vi"} else labels[cat])
            props = {"value": {"type": "string"}}
            out.append(line(f"sens-{lang}-{cat}-message", "sensitive", lang, form(msg, props, ["value"]),
                            "block", "sensitive_fields", f"{cat} named only in the message, free-text field"))
        # 3. Described, not titled.
        out.append(line(f"sens-{lang}-password-description", "sensitive", lang,
                        form(NEUTRAL_MESSAGE[lang], {"answer": {"type": "string", "title": "Answer",
                                                                "description": labels["password"]}}),
                        "block", "sensitive_fields", "password named in the description only"))
    # 4. English property names in every case style, no title.
    for cat, words in EN_NAME_WORDS.items():
        for j, style in enumerate(NAME_STYLES):
            name = styled(words, style)
            schema: Schema = {"type": "integer" if cat in NUMERIC and j % 2 else "string"}
            out.append(line(f"sens-en-{cat}-name-{style}", "sensitive", "en",
                            form("Please fill in the form.", {"email": {"type": "string", "format": "email"},
                                                              name: schema}),
                            "block", "sensitive_fields", f"{cat} in a {style} property name"))
    # 5. Hidden-input markers without any secret word (the schema stage tolerates them).
    markers: list[tuple[str, Schema]] = [("format", {"format": "password"}), ("writeOnly", {"writeOnly": True})]
    for j, (marker_name, marker) in enumerate(markers):
        for lang in ("en", "de", "ja"):
            props = {"entry": {"type": "string", "title": NEUTRAL_MESSAGE[lang], **marker}}
            out.append(line(f"sens-{lang}-marker-{j}", "sensitive", lang, form("Continue", props), "block",
                            "sensitive_fields", f"string field marked {marker_name}"))
    return out


CYRILLIC = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і",
                          "s": "ѕ", "A": "А", "P": "Р", "K": "К"})
GREEK = str.maketrans({"a": "α", "o": "ο", "p": "ρ", "i": "ι", "v": "ν", "k": "κ", "t": "τ", "n": "η"})
LEET = str.maketrans({"a": "4", "e": "3", "o": "0", "s": "5", "i": "1", "t": "7"})
EVASION_WORDS = {
    "password": "password", "api_key": "api key", "token": "access token", "payment_card": "credit card number",
    "cvv": "cvv", "national_id": "ssn", "seed_phrase": "seed phrase", "private_key": "private key",
    "pin": "pin code", "recovery_code": "recovery code", "otp": "verification code", "passphrase": "passphrase",
}


def tricks(word: str) -> dict[str, str]:
    return {
        "cyrillic": word.translate(CYRILLIC),
        "greek": word.translate(GREEK),
        "zwsp": "\u200b".join(word),
        "fullwidth": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" for c in word.upper()),
        "combining": "".join(c + "\u0301" if c.isalpha() else c for c in word),
        "spaced": " ".join(word.replace(" ", "")),
        "dotted": ".".join(word.replace(" ", "")),
        "leet": word.translate(LEET),
        "softhyphen": "\u00ad".join(word),
        "rtlmark": "\u200f".join(word),
    }


def evasion_lines() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for cat, word in EVASION_WORDS.items():
        for trick, text in tricks(word).items():
            if text == word:
                continue
            props = {"value": {"type": "string", "title": text.capitalize() if trick != "fullwidth" else text}}
            out.append(line(f"evas-{trick}-{cat}", "evasion", "en", form("Almost done.", props), "block",
                            "sensitive_fields", f"{trick} spelling of '{word}' in a title"))
    splits = [
        ("Enter your pass", {"word": {"type": "string"}}, "message ends 'pass', field named 'word'"),
        ("Almost done.", {"a": {"type": "string", "title": "pass"}, "b": {"type": "string", "title": "word"}},
         "titles 'pass' + 'word'"),
        ("Almost done.", {"pass": {"type": "string"}, "word": {"type": "string"}}, "names 'pass' + 'word'"),
        ("Please provide your api", {"key": {"type": "string"}}, "message 'api' + field 'key'"),
        ("Almost done.", {"x": {"type": "string", "title": "pass"}, "y": {"type": "string", "title": "phrase"}},
         "titles 'pass' + 'phrase'"),
        ("Almost done.", {"c": {"type": "string", "title": "credit"}, "d": {"type": "string", "title": "card"}},
         "titles 'credit' + 'card'"),
        ("Enter your p4ss", {"w0rd": {"type": "string"}}, "leet split over message and field"),
        ("Almost done.", {"seed": {"type": "string", "title": "seed"}, "p": {"type": "string", "title": "phrase"}},
         "titles 'seed' + 'phrase'"),
    ]
    for k, (msg, props, note) in enumerate(splits):
        out.append(line(f"evas-split-{k}", "evasion", "en", form(msg, props), "block", "sensitive_fields", note))
    names = ["PaSsWoRd", "pAsSwOrD", "APIKEY", "apikey", "accesstoken", "UserPassWord", "x_api_key",
             "p@ssw0rd", "@pi_k3y", "s3cr3t_k3y", "pa$$word", "cr3dit_card_numb3r", "priv4te_key",
             "ＰＡＳＳＷＯＲＤ", "раssword", "mypassword123", "__password__", "Pass_Word", "api.key",
             "ssn_", "CVV2", "otp-code", "mnemonic_words", "refreshTOKEN"]
    for k, name in enumerate(names):
        props = {name: {"type": "string"}, "note": {"type": "string", "title": "Note"}}
        out.append(line(f"evas-name-{k}", "evasion", "en", form("Almost done.", props), "block",
                        "sensitive_fields", f"obfuscated property name {name!r}"))
    return out


def hard_negative_lines() -> list[dict[str, Any]]:
    b: Schema = {"type": "boolean"}
    i: Schema = {"type": "integer"}
    s: Schema = {"type": "string"}

    def t(kind: Schema, title: str, **extra: Any) -> Schema:
        return {**kind, "title": title, **extra}

    cases: list[tuple[str, str, str, dict[str, Schema]]] = [
        ("en", "Configure the completion.", "token count is an integer", {"token_count": t(i, "Token count")}),
        ("en", "Configure the completion.", "max tokens", {"maxTokens": t(i, "Max tokens")}),
        ("en", "Which API version should we use?", "API version", {"api_version": t(s, "API version")}),
        ("en", "Select the table.", "primary key column", {"primary_key_column": t(s, "Primary key column")}),
        ("en", "Security check-in", "question about a password as a boolean",
         {"reset": t(b, "Did you reset your password?")}),
        ("en", "Conference details", "keynote title", {"keynote_title": t(s, "Keynote title")}),
        ("en", "Please acknowledge.", "password policy acknowledgement",
         {"ack": t(b, "I have read the password policy")}),
        ("en", "Product page", "key features", {"key_features": t(s, "Key features")}),
        ("en", "Shipping address (India)", "postal PIN code",
         {"city": t(s, "City"), "pin_code": t(s, "PIN code of the post office")}),
        ("en", "Where should we deliver your order?", "Indian pincode in an address form",
         {"address": t(s, "Address"), "pincode": t(s, "Pincode")}),
        ("en", "Travel details", "passport expiry date is not the number",
         {"passport_expiry": t(s, "Passport expiry date", format="date")}),
        ("en", "Card design", "card title", {"card_title": t(s, "Card title")}),
        ("en", "Loan request", "credit limit", {"credit_limit": t({"type": "number"}, "Requested credit limit")}),
        ("en", "Describe the problem.", "warning not to include secrets",
         {"details": t(s, "Details", description="Do not include passwords or API keys.")}),
        ("en", "Which password manager do you use?", "password manager as free text",
         {"password_manager": t(s, "Password manager")}),
        ("en", "Account settings", "password strength as enum",
         {"strength": {"type": "string", "title": "Password strength", "enum": ["weak", "strong"]}}),
        ("en", "Account settings", "enable two-factor as boolean", {"enable_2fa": t(b, "Enable 2FA")}),
        ("en", "Gift exchange", "secret santa", {"gift": t(s, "Secret Santa gift idea")}),
        ("en", "Simulation", "random seed number", {"seed": t(i, "Random seed")}),
        ("en", "Payment", "cardholder name is not the card number", {"holder": t(s, "Cardholder name")}),
        ("en", "Payment", "card type enum",
         {"card_type": {"type": "string", "title": "Card type", "enum": ["visa", "mastercard"]}}),
        ("en", "Crypto watchlist", "token symbol", {"token_symbol": t(s, "Token symbol")}),
        ("en", "Crypto watchlist", "token contract address", {"token_address": t(s, "Token address")}),
        ("en", "Key rotation", "when was the key rotated", {"api_key_rotation": t(s, "API key rotation date",
                                                                                    format="date")}),
        ("en", "Access review", "how many tokens are active", {"tokens": t(i, "Number of tokens issued")}),
        ("en", "Security survey", "password length preference", {"len": t(i, "Minimum password length")}),
        ("en", "Security survey", "a yes/no on sharing passwords",
         {"shared": t(b, "Have you ever shared a password with a colleague?")}),
        ("en", "Security survey", "enum about PIN usage",
         {"pin_usage": {"type": "string", "title": "How often do you change your PIN?",
                        "enum": ["never", "yearly", "monthly"]}}),
        ("en", "Name your new token", "token name", {"token_name": t(s, "Token name")}),
        ("en", "Login preferences", "passwordless login boolean",
         {"passwordless": t(s, "Passwordless login method", enum=["email", "sms"])}),
        ("en", "Contact details", "zip code is not a secret", {"zip": t(s, "ZIP code")}),
        ("en", "Checkout", "promo code", {"promo_code": t(s, "Promo code")}),
        ("en", "Checkout", "country code", {"country_code": t(s, "Country code")}),
        ("en", "Database", "foreign key", {"fk": t(s, "Foreign key reference")}),
        ("en", "Keyboard", "keyboard layout", {"keyboard_layout": t(s, "Keyboard layout")}),
        ("en", "Music", "song key", {"song_key": t(s, "Musical key of the song")}),
        ("en", "Map", "pin a location", {"pinned": t(b, "Pin this location to the top")}),
        ("en", "Map", "pin label", {"pin_label": t(s, "Pin label")}),
        ("en", "Did you change your password recently?", "message asks about password, boolean answer",
         {"changed": b}),
        ("en", "Have you enabled MFA?", "message about MFA, boolean answer", {"enabled": b}),
        ("en", "Was your credit card charged twice?", "message about a card, enum answer",
         {"answer": {"type": "string", "enum": ["yes", "no", "not sure"]}}),
        ("en", "Describe the bug. Never paste tokens or passwords here.", "negated request in the message",
         {"details": t(s, "Details")}),
        ("en", "Report", "social media handle", {"handle": t(s, "Social media handle")}),
        ("en", "Project", "public SSH key fingerprint", {"fp": t(s, "Public key fingerprint")}),
        ("en", "Billing", "last four digits are not asked as a field", {"billing_email":
                                                                        t(s, "Billing email", format="email")}),
        ("en", "LLM settings", "output token limit", {"output_tokens": t(i, "Output token limit")}),
        ("de", "Kontoeinstellungen", "German boolean about password change",
         {"geaendert": t(b, "Haben Sie Ihr Passwort geändert?")}),
        ("de", "Sicherheit", "German password policy enum",
         {"richtlinie": {"type": "string", "title": "Passwortrichtlinie", "enum": ["streng", "normal"]}}),
        ("de", "Einstellungen", "German token count", {"anzahl": t(i, "Anzahl der Token")}),
        ("fr", "Sécurité", "French boolean about password", {"oubli": t(b, "Avez-vous oublié votre mot de passe ?")}),
        ("fr", "Sécurité", "French password length integer",
         {"longueur": t(i, "Longueur minimale du mot de passe")}),
        ("es", "Seguridad", "Spanish policy acknowledgement",
         {"acepto": t(b, "Acepto la política de contraseñas")}),
        ("es", "Cuenta", "Spanish boolean: did you change your PIN", {"cambio": t(b, "¿Cambió su PIN?")}),
        ("pt", "Segurança", "Portuguese boolean about password", {"trocou": t(b, "Você trocou sua senha?")}),
        ("it", "Sicurezza", "Italian parola chiave (keyword)", {"parola": t(s, "Parola chiave di ricerca")}),
        ("it", "Impostazioni", "Italian boolean about password",
         {"cambiata": t(b, "Hai cambiato la password di recente?")}),
        ("ru", "Безопасность", "Russian boolean about password", {"smena": t(b, "Вы меняли пароль?")}),
        ("ru", "Настройки", "Russian token count", {"tokens": t(i, "Количество токенов")}),
        ("uk", "Безпека", "Ukrainian boolean about password", {"zmina": t(b, "Ви змінювали пароль?")}),
        ("pl", "Urlop", "Polish 'dni' means days", {"dni": t(i, "Liczba dni urlopu")}),
        ("pl", "Bezpieczeństwo", "Polish boolean about password", {"zmiana": t(b, "Czy zmieniłeś hasło?")}),
        ("tr", "Güvenlik", "Turkish boolean about password", {"degisti": t(b, "Şifrenizi değiştirdiniz mi?")}),
        ("ar", "الأمان", "Arabic boolean about password", {"changed": t(b, "هل قمت بتغيير كلمة المرور؟")}),
        ("hi", "डिलीवरी का पता", "Hindi postal PIN code with address",
         {"pata": t(s, "पता"), "pin": t(s, "पिन कोड")}),
        ("hi", "सुरक्षा", "Hindi boolean about password", {"badla": t(b, "क्या आपने पासवर्ड बदला?")}),
        ("vi", "Bảo mật", "Vietnamese boolean about password", {"doi": t(b, "Bạn đã đổi mật khẩu chưa?")}),
        ("nl", "Beveiliging", "Dutch password policy boolean", {"beleid": t(b, "Ik ga akkoord met het wachtwoordbeleid")}),
        ("nl", "Instellingen", "Dutch token count", {"aantal": t(i, "Aantal tokens")}),
        ("zh", "安全设置", "Chinese boolean: did you change password", {"changed": t(b, "您最近修改过密码吗？")}),
        ("zh", "安全设置", "Chinese password strength enum",
         {"level": {"type": "string", "title": "密码强度要求", "enum": ["低", "高"]}}),
        ("zh", "模型设置", "Chinese max tokens integer", {"max": t(i, "最大令牌数")}),
        ("ja", "セキュリティ", "Japanese boolean about password", {"changed": t(b, "パスワードを変更しましたか？")}),
        ("ja", "設定", "Japanese token count integer", {"count": t(i, "トークン数")}),
        ("ko", "보안", "Korean boolean about password", {"changed": t(b, "비밀번호를 변경하셨습니까?")}),
        ("ko", "설정", "Korean token count integer", {"count": t(i, "토큰 수")}),
        ("en", "Hardware", "security key model enum",
         {"model": {"type": "string", "title": "Which security key model?", "enum": ["A", "B"]}}),
        ("en", "Rate your experience", "message mentions password reset flow, rating integer",
         {"rating": t(i, "How easy was the password reset flow? (1-5)")}),
        ("en", "API usage report", "API quota", {"quota": t(i, "API key usage this month")}),
        ("en", "Identity", "username is not a password", {"username": t(s, "Username")}),
        ("en", "Subscription", "token budget", {"budget": t(i, "Monthly token budget")}),
        ("en", "Onboarding", "multi-select of secret types to enable",
         {"methods": {"type": "array", "title": "Sign-in methods", "items": {"type": "string",
                                                                             "enum": ["password", "passkey"]}}}),
        ("en", "Travel", "passport country", {"passport_country": t(s, "Passport issuing country")}),
        ("en", "Welcome", "user-facing display name", {"display_name": t(s, "Display name")}),
        ("en", "Support", "OTP delivery preference enum",
         {"otp_channel": {"type": "string", "title": "Where should we send one-time codes?",
                          "enum": ["sms", "email"]}}),
    ]
    return [line(f"hneg-{lang}-{k:03d}", "hard_negative", lang, form(msg, props), "allow", None, note)
            for k, (lang, msg, note, props) in enumerate(cases)]


CLEAN_FORMS: dict[str, list[tuple[str, dict[str, str]]]] = {
    "en": [("Book a table", {"name": "Name", "guests": "Number of guests", "date": "Date"}),
           ("Tell us about your trip", {"city": "Destination city", "nights": "Nights", "notes": "Notes"}),
           ("Create a ticket", {"summary": "Summary", "severity": "Severity", "details": "Details"}),
           ("Feedback", {"rating": "Rating", "comment": "Comment"}),
           ("Shipping", {"street": "Street", "city": "City", "zip": "ZIP code"}),
           ("Profile", {"first_name": "First name", "last_name": "Last name", "email": "Email"}),
           ("Meeting", {"topic": "Topic", "duration": "Duration (minutes)", "room": "Room"}),
           ("Deploy", {"branch": "Branch", "environment": "Environment", "dry_run": "Dry run"})],
    "de": [("Tisch reservieren", {"name": "Name", "personen": "Anzahl Personen", "datum": "Datum"}),
           ("Feedback", {"bewertung": "Bewertung", "kommentar": "Kommentar"}),
           ("Lieferadresse", {"strasse": "Straße", "ort": "Ort", "plz": "Postleitzahl"})],
    "fr": [("Réserver une table", {"nom": "Nom", "invites": "Nombre d'invités", "date": "Date"}),
           ("Votre avis", {"note": "Note", "commentaire": "Commentaire"}),
           ("Adresse", {"rue": "Rue", "ville": "Ville", "code_postal": "Code postal"})],
    "es": [("Reservar mesa", {"nombre": "Nombre", "personas": "Número de personas", "fecha": "Fecha"}),
           ("Opinión", {"puntuacion": "Puntuación", "comentario": "Comentario"}),
           ("Dirección", {"calle": "Calle", "ciudad": "Ciudad", "cp": "Código postal"})],
    "pt": [("Reservar mesa", {"nome": "Nome", "pessoas": "Número de pessoas", "data": "Data"}),
           ("Avaliação", {"nota": "Nota", "comentario": "Comentário"}),
           ("Endereço", {"rua": "Rua", "cidade": "Cidade", "cep": "CEP"})],
    "it": [("Prenota un tavolo", {"nome": "Nome", "persone": "Numero di persone", "data": "Data"}),
           ("Opinione", {"voto": "Voto", "commento": "Commento"}),
           ("Parola del giorno", {"parola": "Parola", "significato": "Significato"})],
    "ru": [("Бронирование", {"imya": "Имя", "gosti": "Количество гостей", "data": "Дата"}),
           ("Отзыв", {"ocenka": "Оценка", "kommentariy": "Комментарий"})],
    "uk": [("Бронювання", {"imya": "Ім'я", "gosti": "Кількість гостей", "data": "Дата"}),
           ("Відгук", {"ocinka": "Оцінка", "komentar": "Коментар"})],
    "pl": [("Rezerwacja", {"imie": "Imię", "osoby": "Liczba osób", "dni": "Liczba dni"}),
           ("Opinia", {"ocena": "Ocena", "komentarz": "Komentarz"})],
    "tr": [("Rezervasyon", {"ad": "Ad", "kisi": "Kişi sayısı", "tarih": "Tarih"}),
           ("Geri bildirim", {"puan": "Puan", "yorum": "Yorum"})],
    "ar": [("حجز طاولة", {"name": "الاسم", "guests": "عدد الضيوف", "date": "التاريخ"}),
           ("رأيك", {"rating": "التقييم", "comment": "تعليق"})],
    "hi": [("टेबल बुक करें", {"naam": "नाम", "mehmaan": "मेहमानों की संख्या", "tareekh": "तारीख"}),
           ("प्रतिक्रिया", {"rating": "रेटिंग", "tippani": "टिप्पणी"})],
    "vi": [("Đặt bàn", {"ten": "Tên", "so_khach": "Số khách", "ngay": "Ngày"}),
           ("Góp ý", {"diem": "Điểm", "nhan_xet": "Nhận xét"})],
    "nl": [("Tafel reserveren", {"naam": "Naam", "gasten": "Aantal gasten", "datum": "Datum"}),
           ("Feedback", {"score": "Score", "opmerking": "Opmerking"})],
    "zh": [("预订餐桌", {"name": "姓名", "guests": "人数", "date": "日期"}),
           ("意见反馈", {"rating": "评分", "comment": "评论"})],
    "ja": [("テーブル予約", {"name": "お名前", "guests": "人数", "date": "日付"}),
           ("ご意見", {"rating": "評価", "comment": "コメント"})],
    "ko": [("테이블 예약", {"name": "이름", "guests": "인원", "date": "날짜"}),
           ("의견", {"rating": "평점", "comment": "의견"})],
}
NUMERIC_HINTS = ("guests", "nights", "rating", "duration", "personen", "invites", "personas", "pessoas", "persone",
                 "gosti", "osoby", "dni", "kisi", "mehmaan", "so_khach", "gasten", "bewertung", "puntuacion",
                 "nota", "voto", "ocenka", "ocinka", "ocena", "puan", "diem", "score", "note")


def clean_lines() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for lang, forms in CLEAN_FORMS.items():
        for k, (message, fields) in enumerate(forms):
            props: dict[str, Schema] = {}
            for name, title in fields.items():
                if name in NUMERIC_HINTS:
                    props[name] = {"type": "integer", "title": title, "minimum": 0}
                elif name in ("date", "datum", "fecha", "data", "tarih", "ngay", "tareekh"):
                    props[name] = {"type": "string", "title": title, "format": "date"}
                elif name == "dry_run":
                    props[name] = {"type": "boolean", "title": title, "default": True}
                elif name in ("severity", "environment"):
                    props[name] = {"type": "string", "title": title, "enum": ["low", "high"]}
                else:
                    props[name] = {"type": "string", "title": title}
            out.append(line(f"clean-{lang}-{k:02d}", "clean", lang, form(message, props, [next(iter(fields))]),
                            "allow", None, "ordinary form"))
            # The same form with each field described, to cover descriptions too.
            described = {n: {**s, "description": f"{s['title']}?"} for n, s in props.items()}
            out.append(line(f"clean-{lang}-{k:02d}-d", "clean", lang, form(message, described), "allow", None,
                            "ordinary form with descriptions"))
    return out


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    sensitive = sensitive_lines() + evasion_lines()
    write(OUT / "sensitive.jsonl", sensitive)
    write(OUT / "hard_negatives.jsonl", hard_negative_lines())
    write(OUT / "clean.jsonl", clean_lines())
    print(len(sensitive), sum(r["category"] == "evasion" for r in sensitive), len(hard_negative_lines()),
          len(clean_lines()))
