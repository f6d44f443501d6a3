"""The detector classes fixed after blind set 2 (docs/sensitive-fields.md, "Classes").

Every example here is new, written for the class it stands for, in several languages: none is a row of
a corpus or a blind set. Each class has asks that must be blocked and harmless forms that must pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.policy.sensitive_fields import SensitiveFieldDetector
from gateway.policy.text_normalization import decode_escapes, normalize_text

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
    # Short CJK and Hangul nouns written backwards.
    ("reversed", field("호번밀비")),
    ("reversed", field("드워스패")),
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
    # An identifier whose head is something else still names the field when the title says nothing.
    ("identifier", field("Value", name="password_main")),
    ("identifier", field("Enter it here", name="otp_box")),
    # A generic identifier never governs its field.
    ("identifier", field("", "PIN", name="field_a")),
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
    # A hyphen cuts "סועדים" (diners): its fragment "סועד" is one letter from "סודי" (secret), but only the
    # glued word is spelled right.
    ("spaced", field("סועד-ים בשולחן")),
    # Short governors that lose their diacritics count only as written: "tên" (name), not "ten".
    ("diacritics", field("Tên khóa", message="Khóa SSH mới")),
    ("diacritics", field("Ｔêｎ ｋｈóａ", message="Khóa SSH mới")),
    ("diacritics", field("\u202eaóhk nêT\u202c", message="Khóa SSH mới")),
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
    assert normalize_text("パスワード") == normalize_text("パスワート") == normalize_text("ハ\u309aスワート\u3099")
    assert normalize_text("ﾊﾟｽﾜｰﾄﾞ") == normalize_text("パスワード")
    assert normalize_text("รหัสผ่าน") == normalize_text("รหัสผาน")
    for text in ("パスワード", "รหัสผ่าน", "ລະຫັດຜ່ານ"):
        assert normalize_text(normalize_text(text)) == normalize_text(text)


# -- a wider probe: asks by name and by description, and harmless titles full of trigger words ----------

PROBE_ASKS = [
    'The 6-digit number shown in Google Authenticator',
    'What you use to sign in to Netflix',
    'The thing you type after your username',
    'The secret word you chose when you signed up',
    'The words on the recovery sheet you wrote when creating the wallet',
    'The three numbers on the back of your card',
    'The long number on the front of your card',
    'The string that starts with sk_live',
    'The contents of your id_rsa file',
    'The number from your TAN generator',
    'The code your bank app just showed you',
    'What you enter at the cash machine',
    'The eight digits printed under the scratch panel on your SIM card holder',
    'The code we emailed you a minute ago',
    'The passcode of your phone',
    "Your phone's unlock code",
    'The login code from the text we sent',
    'The key from the Stripe dashboard',
    'The token GitHub gave you when you created it',
    'The 24 words that back up your Ledger',
    'Your social security number',
    'The digits from your national identity card',
    'Your tax identification number',
    'The recovery key BitLocker showed you',
    'The unseal keys you got when you initialised Vault',
    'Vault root token',
    'Encryption passphrase for the backup',
    'The password for the Wi-Fi network',
    'Your online banking PIN',
    'Type the code from the SMS',
    'Die sechs Ziffern aus der SMS',
    'El código que te enviamos por SMS',
    'Le code reçu par SMS',
    'Il codice che ti abbiamo inviato via SMS',
    'O código que enviamos por SMS',
    'De code die we je per sms stuurden',
    'Kod, który wysłaliśmy SMS-em',
    'Код из СМС',
    'SMS ile gönderdiğimiz kod',
    '短信验证码',
    'SMSで届いた確認コード',
    '문자로 받은 인증번호',
    'الرمز الذي أرسلناه إليك عبر الرسائل القصيرة',
    'एसएमएस से मिला कोड',
    'Mã xác nhận được gửi qua SMS',
    'Kode yang kami kirim lewat SMS',
    'รหัสที่ส่งไปทาง SMS',
    'Was du eingibst, um dein Handy zu entsperren',
    'Lo que escribes para desbloquear tu portátil',
    'Ce que vous tapez pour déverrouiller votre ordinateur',
    'Le 12 parole che hai scritto quando hai creato il portafoglio',
    'As palavras que você anotou ao criar sua carteira',
    'De woorden die je opschreef bij het aanmaken van je wallet',
    'Słowa, które zapisałeś przy zakładaniu portfela',
    'Слова, которые вы записали при создании кошелька',
    'Cüzdanı oluştururken yazdığınız kelimeler',
    '创建钱包时写下的单词',
    'ウォレット作成時に書き留めた単語',
    '지갑을 만들 때 적어 둔 단어',
    'الكلمات التي كتبتها عند إنشاء محفظتك',
    'Die drei Ziffern auf der Rückseite deiner Karte',
    'Los tres números del reverso de tu tarjeta',
    'Les trois chiffres au dos de votre carte',
    'I tre numeri sul retro della carta',
    'Os três números no verso do cartão',
    '卡背面的三位数字',
    'カード裏面の3桁の数字',
    '카드 뒷면의 세 자리 숫자',
    'الأرقام الثلاثة على ظهر بطاقتك',
    'कार्ड के पीछे के तीन अंक',
    'Ba số ở mặt sau thẻ',
    'Tiga angka di belakang kartu',
    'Kolme numeroa kortin takana',
    'Tre siffror på baksidan av kortet',
    'Tre cifre på bagsiden af kortet',
    'Οι τρεις αριθμοί στο πίσω μέρος της κάρτας',
    'Három számjegy a kártya hátoldalán',
    'Trei cifre de pe spatele cardului',
    'Три цифри на звороті картки',
    'Tři číslice na zadní straně karty',
    'Geben Sie Ihre Steuer-ID ein',
    'Ihre Sozialversicherungsnummer',
    'Ihr privater Schlüssel',
    'Ihr API-Schlüssel',
    'Das Zugriffstoken',
    'Aktualisierungstoken',
    'Wiederherstellungsphrase Ihrer Wallet',
    'PUK-Code der SIM-Karte',
    'Prüfziffer der Kreditkarte',
    'Kartennummer',
    'Ingresa tu token de acceso',
    'Tu frase semilla',
    'Tu clave privada SSH',
    'Número de la Seguridad Social',
    'Clave de API',
    'Token de actualización',
    'Código de respaldo',
    "Votre jeton d'accès",
    'Votre phrase de récupération',
    'Votre clé API',
    'Numéro de sécurité sociale',
    'Code PUK',
    'Il tuo token di accesso',
    'La tua frase di recupero',
    'La tua chiave privata',
    'Numero di carta',
    'O seu token de acesso',
    'A sua frase de recuperação',
    'Chave privada',
    'Número do cartão',
    'Uw toegangstoken',
    'Uw herstelzin',
    'Uw privésleutel',
    'Twój token dostępu',
    'Fraza odzyskiwania',
    'Klucz prywatny',
    'Numer karty',
    'Ваш токен доступа',
    'Секретная фраза',
    'Приватный ключ',
    'Номер карты',
    'Erişim belirteciniz',
    'Kurtarma ifadesi',
    'Özel anahtar',
    'Kart numarası',
    '您的访问令牌',
    '助记词',
    '私钥',
    '银行卡号',
    'アクセストークン',
    'リカバリーフレーズ',
    '秘密鍵',
    'カード番号',
    '액세스 토큰',
    '복구 문구',
    '개인 키',
    '카드 번호',
    'رمز الوصول',
    'عبارة الاسترداد',
    'المفتاح الخاص',
    'رقم البطاقة',
    'एक्सेस टोकन',
    'रिकवरी फ्रेज़',
    'निजी कुंजी',
    'कार्ड नंबर',
    'Mã truy cập',
    'Cụm từ khôi phục',
    'Khóa riêng tư',
    'Số thẻ',
    'Token akses',
    'Frasa pemulihan',
    'Kunci privat',
    'Nomor kartu',
    'โทเค็นการเข้าถึง',
    'วลีกู้คืน',
    'คีย์ส่วนตัว',
    'หมายเลขบัตร',
    'Hozzáférési token',
    'Helyreállítási kifejezés',
    'Privát kulcs',
    'Kártyaszám',
    'Jeton de acces',
    'Frază de recuperare',
    'Cheie privată',
    'Numărul cardului',
    'Přístupový token',
    'Fráze pro obnovení',
    'Soukromý klíč',
    'Číslo karty',
    'Åtkomsttoken',
    'Återställningsfras',
    'Privat nyckel',
    'Kortnummer',
    'Pääsytunnus',
    'Palautuslause',
    'Yksityinen avain',
    'Kortin numero',
    'Διακριτικό πρόσβασης',
    'Φράση ανάκτησης',
    'Ιδιωτικό κλειδί',
    'Αριθμός κάρτας',
    'אסימון גישה',
    'ביטוי שחזור',
    'מפתח פרטי',
    'מספר כרטיס',
    'توکن دسترسی',
    'عبارت بازیابی',
    'کلید خصوصی',
    'شماره کارت',
    'p/w',
    'P/W',
    'PW',
    'pwd',
    'passwd',
    'Kennw.',
    'Passw.',
    'MDP',
    'mdp',
    'PIN',
    '2FA code',
    'OTP',
    'TOTP',
    'MFA code',
    'API key',
    'priv key',
    'privkey',
    'mnemonic',
    'CC#',
    'CC number',
    'CVV2',
    'CVC',
    'SSN',
    'NI no.',
    'Ausweisnr.',
    'Ausweis-Nr.',
    'acc. token',
    'access tok',
    'refresh tok',
    'auth tok',
    'pass phrase',
    'passphr.',
    'recovery cd',
    'backup cds',
    '2FA',
    'Sec. code',
    'sec code',
    'card no.',
    'card #',
    'Tarjeta nº',
    'N° de carte',
    'Nr. karty',
    'PESEL nr',
    'Steuer-Nr.',
    'Personalausweisnr.',
    'BSN-nr.',
    'API-Schl.',
    'Priv. Schlüssel',
    'Zugangsdaten',
    'creds',
    'login creds',
    'pwd (again)',
    'New pw',
    'Confirm pwd',
    'Wi-Fi pw',
    'WLAN-PW',
    'Router-PW',
]

PROBE_HARMLESS = [
    "Número de contrato",
    "API Kalender",
    'Which password manager do you use?',
    'How often do you change your password?',
    'Did you receive the SMS?',
    'How many digits should the PIN have?',
    'Name of your Wi-Fi network',
    'Describe your last login problem',
    'Postal PIN code of your town',
    'Your favourite secret recipe',
    'Token budget for this run',
    'Preferred 2FA method',
    'Card holder name',
    'Expiry date of the card',
    'Last four digits of your card',
    'Which card type do you have?',
    'Key prefix shown in the dashboard',
    'API key label',
    'When did you last rotate your API key?',
    'Was your password reset successful?',
    'Number of recovery codes left',
    'Wallet name',
    'Which wallet app do you use?',
    "What is your mother's maiden name used for?",
    'The name printed on the front of your card',
    'Bank name',
    'IBAN country',
    'Passport expiry date',
    'Your date of birth',
    'Your national holiday',
    'Tax year',
    'Locksmith company name',
    'Key ring colour',
    'Keynote speaker',
    "Master's degree subject",
    'Seed variety for the garden',
    'Password policy: minimum length',
    'Token of appreciation for the volunteers',
    "Ring bearer's name",
    'Secret Santa budget',
    'Boarding pass seat',
    'Pass mark for the exam',
    'Passage number in the book',
    'Compass heading',
    'Pinned message title',
    'Pin the tab name',
    'Spin class time',
    'Code review comments',
    'Dress code',
    'Discount code',
    'Promo code',
    'Tracking code',
    'Zip code',
    'Area code',
    'Source code repository URL',
    'Unlock date for the new feature',
    'Login page theme',
    'Sign-in method preference',
    '¿Cuántos intentos de contraseña quedan?',
    'Nombre de la clave API',
    'Wie viele Wiederherstellungscodes hast du noch?',
    'Quel est le nom de votre clé ?',
    'Numero massimo di tentativi',
    'Data di scadenza della carta',
    'Nome do titular do cartão',
    'Naam van je sleutel',
    'Ile kodów zapasowych zostało?',
    'Сколько резервных кодов осталось?',
    'Kaç yedek kodunuz kaldı?',
    '还剩几个备用码？',
    'APIキーの名前',
    'API 키 이름',
    'كم عدد الرموز المتبقية؟',
    'कितने बैकअप कोड बचे हैं?',
    'Tên khóa API',
    'Nama kunci API',
    'ชื่อคีย์ API',
    'Hasło reklamowe kampanii',
    'Kata kunci pencarian',
    'Mot-clé principal',
    'Schlüsselwort',
    'Parola chiave',
    'Palavra-chave',
    'Postleitzahl',
    'Código postal',
    'PIN code (India post)',
    'Sicherheitsfrage auswählen',
    'Wie lautet der Name Ihres API-Schlüssels?',
    'Wann haben Sie Ihr Passwort zuletzt geändert?',
    'Haben Sie Ihre PIN vergessen?',
    'Wie viele Zeichen muss das Passwort haben?',
    'Welche Art von Schlüssel möchten Sie erstellen?',
    '¿Cuándo cambiaste tu contraseña por última vez?',
    '¿Qué tipo de clave quieres generar?',
    'Nombre del token',
    '¿Olvidaste tu PIN?',
    'Quand avez-vous changé votre mot de passe ?',
    'Nom du jeton',
    'Quel type de clé souhaitez-vous ?',
    "Quando hai cambiato la password l'ultima volta?",
    'Nome del token',
    'Quantos códigos de recuperação você ainda tem?',
    'Nome da chave de API',
    'Wanneer heb je je wachtwoord voor het laatst gewijzigd?',
    'Naam van het token',
    'Kiedy ostatnio zmieniłeś hasło?',
    'Nazwa tokenu',
    'Когда вы в последний раз меняли пароль?',
    'Название токена',
    'Şifrenizi en son ne zaman değiştirdiniz?',
    'Token adı',
    '您上次修改密码是什么时候？',
    '令牌名称',
    '最後にパスワードを変更したのはいつですか？',
    'トークンの名前',
    '마지막으로 비밀번호를 변경한 때는 언제입니까?',
    '토큰 이름',
    'متى غيرت كلمة المرور آخر مرة؟',
    'اسم الرمز المميز',
    'आपने पिछली बार पासवर्ड कब बदला था?',
    'टोकन का नाम',
    'Lần cuối bạn đổi mật khẩu là khi nào?',
    'Tên token',
    'Kapan terakhir kali Anda mengganti kata sandi?',
    'Nama token',
    'คุณเปลี่ยนรหัสผ่านครั้งล่าสุดเมื่อไร',
    'ชื่อโทเค็น',
    'Mikor változtattad meg utoljára a jelszavad?',
    'Când ți-ai schimbat ultima dată parola?',
    'Kdy jste naposledy změnili heslo?',
    'När bytte du lösenord senast?',
    'Milloin vaihdoit salasanasi viimeksi?',
    'Πότε αλλάξατε τελευταία φορά τον κωδικό σας;',
    'מתי שינית את הסיסמה לאחרונה?',
    'آخرین بار کی رمز عبور خود را تغییر دادید؟',
    "Secret ingredient of your grandmother's cake",
    'Ingrediente secreto de la receta',
    'Geheimzutat im Rezept',
    'Ingrédient secret',
    'Ingrediente segreto',
    'Passe-partout du concierge',
    'Passaporto: data di scadenza',
    'Codice sconto',
    'Código de seguimiento',
    'Postleitzahl Ihres Wohnorts',
    'Codice postale',
    'Kod pocztowy',
    'Почтовый индекс',
    'Posta kodu',
    '邮政编码',
    '郵便番号',
    '우편번호',
    'الرمز البريدي',
    'पिन कोड (डाक)',
    'Mã bưu điện',
    'Kode pos',
    'รหัสไปรษณีย์',
]


@pytest.mark.parametrize("title", PROBE_ASKS)
def test_probe_asks_are_blocked(title: str) -> None:
    assert blocked(field(title)), title


@pytest.mark.parametrize("title", PROBE_HARMLESS)
def test_probe_harmless_titles_pass(title: str) -> None:
    assert not blocked(field(title)), (title, DETECTOR.find(field(title)))


# -- classes fixed after blind set 3 (docs/sensitive-fields.md, "Encoded texts" and the lists below) -----

ENCODED_ASKS = [
    # HTML character references, decimal, hex and named, anywhere in the word and in any script.
    field("Kennw&#111;rt"),
    field("contrase&#241;a de acceso"),
    field("&#x4B;ennwort wiederholen"),
    field("&#1087;&#1072;&#1088;&#1086;&#1083;&#1100;"),
    field("c&oacute;digo de verifica&ccedil;&atilde;o"),
    field("Wiederherstellungs&shy;code"),
    field("Jeton d&#39;acc&egrave;s"),
    field("&#x30EF;&#x30F3;&#x30BF;&#x30A4;&#x30E0;&#x30D1;&#x30B9;&#x30EF;&#x30FC;&#x30C9;"),
    # URL percent-encoding, one letter or the whole word.
    field("%6Dot de passe"),
    field("%E5%AF%86%E7%A0%81"),
    field("s%C3%A4hk%C3%B6postin salasana"),
    field("one%2Dtime code"),
    field("Clave%20privada"),
    # A percent sign written as a reference: each decoder runs once, HTML first.
    field("&#37;70assword"),
    # The property name, the description and the message are decoded too.
    field("", name="api&#95;key"),
    field("Value", "Your se&#99;ret access token from the dashboard"),
    {"mode": "form", "message": "Bitte geben Sie Ihre %50IN ein",
     "requestedSchema": {"type": "object", "properties": {"value": {"type": "string"}}}},
]
ENCODED_HARMLESS = [
    field("Rabatt in %", kind="integer"),
    field("Q&amp;A topic"),
    field("R&amp;D department"),
    field("Caf&eacute; name"),
    field("Tom &amp; Jerry: favourite episode"),
    field("Growth 100%AB test variant"),
    field("%E2%9C%93 Done items"),
    field("Nom du caf&eacute; pr&eacute;f&eacute;r&eacute;"),
]


@pytest.mark.parametrize("params", ENCODED_ASKS)
def test_encoded_asks_are_blocked(params: dict[str, Any]) -> None:
    assert blocked(params), params


@pytest.mark.parametrize("params", ENCODED_HARMLESS)
def test_encoded_harmless_forms_pass(params: dict[str, Any]) -> None:
    assert not blocked(params), (params, DETECTOR.find(params))


def test_decoding_is_once_and_bounded() -> None:
    from gateway.policy.text_normalization import decode_escapes

    assert decode_escapes("&amp;amp;") == "&amp;"  # one pass, not a fixed point
    assert decode_escapes("%ZZ 100%AB") == "%ZZ 100%AB"  # not UTF-8 percent-encoding: as written
    assert decode_escapes("%D0%BF%D0%B0") == "па"
    long_text = "&#112;" * 20000
    assert decode_escapes(long_text) == long_text


def test_location_names_the_property_as_sent() -> None:
    findings = DETECTOR.find(field("", name="pass&#119;ord"))
    assert findings and all(f.location.startswith("requestedSchema.properties.pass&#119;ord") for f in findings)


def form(message: str, **props: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": props}}


HARD_NEGATIVES_3 = [
    # Prepaid electricity tokens are bought, not typed in as credentials.
    form("Buy prepaid electricity tokens", meter={"type": "string", "title": "Meter number"},
         amount={"type": "number", "title": "Amount"}),
    form("Nunua tokeni za LUKU", mita={"type": "string", "title": "Namba ya mita"}),
    # A network technology named after its token.
    field("Token Ring MAU location"),
    # A crossword's solution word ("hasło", "heslo", "geslo" also mean that).
    field("Rozwiązanie", "Hasło z liter w zaznaczonych polach krzyżówki"),
    field("Tajenka", "Heslo z vyznačených políček"),
    field("Tajnička krížovky", "Heslo z vyfarbených políčok"),
    field("Rešitev križanke", "Geslo iz označenih polj"),
    # A group's motto ("jelmondat" is also a passphrase).
    field("A klub jelmondata", "Rövid, vidám mondat a zászlóra"),
    # A question about what a credential is for.
    form("Create a deploy key", purpose={"type": "string", "title": "What is this key for?"}),
    form("New access token", purpose={"type": "string", "title": "Whats this token for?"}),
    # Postal PIN codes with a region's leading digits in the pattern.
    form("ডাকঘৰৰ ঠিকনা", pin={"type": "string", "title": "পিন ক'ড", "pattern": "^781\\d{3}$"}),
    form("Delivery", pin={"type": "string", "title": "PIN", "pattern": "^11[0-9]{4}$"}),
    # A database's primary-key column (Thai "คีย์หลัก" is also a master key).
    field("ฟิลด์คีย์หลัก"),
]
ASKS_NEAR_HARD_NEGATIVES_3 = [
    field("Hasło do konta"),
    field("Heslo k účtu"),
    field("A kulcs jelmondata"),
    field("API token", message="Buy more tokens? First sign in."),
    form("Card", pin={"type": "string", "title": "PIN", "pattern": "^\\d{6}$"}),
    field("คีย์หลักของห้องนิรภัย"),
]


@pytest.mark.parametrize("params", HARD_NEGATIVES_3)
def test_blind3_hard_negative_classes_pass(params: dict[str, Any]) -> None:
    assert not blocked(params), (params, DETECTOR.find(params))


@pytest.mark.parametrize("params", ASKS_NEAR_HARD_NEGATIVES_3)
def test_asks_near_blind3_hard_negatives_are_blocked(params: dict[str, Any]) -> None:
    assert blocked(params), params


# Letter variants folded (or read a second way): capital look-alikes inside Latin words, Persian and Arabic
# letter forms, the Indic nukta, Georgian capitals.
VARIANT_ASKS = [
    field("Kart PΙΝ kodu"),  # Greek capital Iota and Nu
    field("ΑPI kеy"),  # Greek capital Alpha, Cyrillic small ie
    field("رمز عبور", message="ورود به حساب"),
    field("رمز عبوري"),  # Arabic yeh in a Persian word
    field("كلمه عبور"),  # Arabic kaf in a Persian word
    field("پاس‌ورد کی"),
    field("पा़सवर्ड"),  # a nukta added
    field("पासवर्ड़"),
    field("ᲞᲐᲠᲝᲚᲘ"),  # Georgian Mtavruli capitals
]


@pytest.mark.parametrize("params", VARIANT_ASKS)
def test_letter_variant_asks_are_blocked(params: dict[str, Any]) -> None:
    assert blocked(params), params


def test_letter_variants_fold_together() -> None:
    assert normalize_text("کلمة") == normalize_text("كلمة")
    assert normalize_text("फ़ोन") == normalize_text("फोन")
    assert normalize_text("ᲞᲐᲠᲝᲚᲘ") == normalize_text("პაროლი")
    # Words of other scripts keep the shared fold of both cases.
    assert normalize_text("ΚΩΔΙΚΟΣ") == normalize_text("κωδικός")


# Asks missed at first sight on blind set 3, by class; every example new.
MISSED_CLASS_ASKS = [
    # Loanwords written in another script (transliterations) and romanized native words.
    ("transliteration", field("Ваш пасуърд")),
    ("transliteration", field("Введите пасворд")),
    ("transliteration", field("Сид фраза од 24 речи")),
    ("transliteration", field("Ο πάσγουορντ σας")),
    ("transliteration", field("الباسوورد الجديد")),
    ("transliteration", field("Jumin deungnok beonho dwitjari")),
    ("transliteration", field("Lek prachachon 13 lak")),
    ("transliteration", field("Unga attai en")),
    ("transliteration", field("Ilagay ang otipi")),
    ("transliteration", field("Ra2m serri taba3ak")),
    # Homophone and spelling slips of short CJK and Devanagari nouns.
    ("typo", field("请输入秘码")),
    ("typo", field("वॉलेट की प्राइवेट कि")),
    # Korean bank security cards, phone unlock patterns.
    ("bank_card", field("보안카드 07번 뒤 2자리")),
    ("unlock_pattern", field("Your screen lock pattern, as dot numbers")),
    ("unlock_pattern", field("휴대폰 잠금 패턴")),
    # Session cookies are bearer credentials.
    ("cookie", field("Session cookie", "Copy it from the browser's developer tools")),
    ("cookie", field("登录 Cookie")),
    # UK-bank memorable information.
    ("memorable", field("Memorable word")),
    # Descriptions: codes that arrived by WhatsApp, digits on the back of the card, an authenticator's
    # digits, digits typed to open an app.
    ("description", field("El código que te llegó por WhatsApp")),
    ("description", field("Os números que chegaram por SMS")),
    ("description", field("An cód a seoladh chugat")),
    ("description", field("Card ke pichhe likhe 3 ank")),
    ("description", field("Autentifikator ilovasidagi 8 xonali raqam")),
    ("description", field("Angka yang kamu ketik saat membuka aplikasi")),
    # The channel a code came by is no identity field: the message's ask points at it.
    ("channel", form("We just emailed you a code.", code={"type": "string", "title": "Code from your email"})),
    # Values: a credential's prefix named, an extended private key, a recovery phrase's word count.
    ("prefix", field("OpenAI key", "It starts with sk-proj- and is shown once")),
    ("prefix", field("Kunci", "Diawali Mid-server-, lihat dashboard")),
    ("prefix", field("Schlüssel", "Beginnt mit tprv8ZgxMBicQKsPd...")),
    ("mnemonic", {"mode": "form", "message": "Import", "requestedSchema": {"type": "object", "properties": {
        "w": {"type": "string", "title": "Words", "pattern": "^[a-z]+( [a-z]+){11}$"}}}}),
    ("mnemonic", {"mode": "form", "message": "Restaurar", "requestedSchema": {"type": "object", "properties": {
        "w": {"type": "string", "title": "Copia", "pattern": "^(?:[a-z]{3,8}\\s){17}[a-z]{3,8}$"}}}}),
]
MISSED_CLASS_HARMLESS = [
    field("Server key fingerprint"),
    field("Cookie preferences"),
    field("Session cookie name"),
    field("Unlock pattern hint"),
    field("Card ke peeche ka design kaisa hai?"),
    field("Project slug", "e.g. my-proj-1"),
    {"mode": "form", "message": "Haiku", "requestedSchema": {"type": "object", "properties": {
        "w": {"type": "string", "title": "Three words", "pattern": "^([a-z]+ ){2}[a-z]+$"}}}},
]


@pytest.mark.parametrize(("cls", "params"), MISSED_CLASS_ASKS,
                         ids=[f"{c}-{i}" for i, (c, _) in enumerate(MISSED_CLASS_ASKS)])
def test_blind3_missed_classes_are_blocked(cls: str, params: dict[str, Any]) -> None:
    assert blocked(params), (cls, params)


@pytest.mark.parametrize("params", MISSED_CLASS_HARMLESS)
def test_blind3_missed_class_neighbours_pass(params: dict[str, Any]) -> None:
    assert not blocked(params), (params, DETECTOR.find(params))


# Languages added after blind set 3: Afrikaans, Zulu, Somali, Guarani.
NEW_LANGUAGE_ASKS = [
    field("Nuwe wagwoord"),
    field("Identiteitsnommer", "13 syfers"),
    field("Eenmalige kode"),
    field("Faka iphasiwedi yakho"),
    field("Inombolo yomazisi"),
    field("Geli erayga sirta"),
    field("Lambarka sirta ah ee kaarka"),
    field("Ehai ne ñe'ẽñemi"),
]


@pytest.mark.parametrize("params", NEW_LANGUAGE_ASKS)
def test_new_language_asks_are_blocked(params: dict[str, Any]) -> None:
    assert blocked(params), params


@pytest.mark.parametrize("title", ["Naam van die kaart", "Hoeveel herstelkodes het jy oor?", "Igama lakho",
                                   "Magacaaga"])
def test_new_language_harmless_titles_pass(title: str) -> None:
    assert not blocked(field(title)), title


@pytest.mark.parametrize("title", ["Mot de pase", "Mots de passé", "Mot de passse", "Numero de tarjta"])
def test_a_label_misspelt_across_its_words_is_an_ask(title: str) -> None:
    assert blocked(field(title)), title


SIGN_IN_ASKS = [
    form("Sunucuya giriş", kullanici={"type": "string", "title": "Kullanıcı adı"},
         parola={"type": "string", "title": "Parola"}),
    form("Conectare la cont", parola={"type": "string", "title": "Parola:"}),
    form("Ingresar al portal", usuario={"type": "string", "title": "Usuario"}, clave={"type": "string", "title": "Clave"}),
    form("VPN", user={"type": "string", "title": "User name"}, pw={"type": "string", "title": "Pass"}),
    # A pattern shaped like a national id (Aadhaar, US SSN) under a bland title.
    form("Verify", n={"type": "string", "title": "Number", "pattern": "^[2-9][0-9]{3} [0-9]{4} [0-9]{4}$"}),
    form("Verify", n={"type": "string", "title": "Number", "pattern": "^\\d{3}-\\d{2}-\\d{4}$"}),
]
SIGN_IN_HARMLESS = [
    form("Gioco di parole", parola={"type": "string", "title": "Parola"}),
    form("Diccionario", clave={"type": "string", "title": "Clave", "description": "La palabra clave del artículo"}),
    form("Order", d={"type": "string", "title": "Delivery date", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"}),
    form("Contact", p={"type": "string", "title": "Phone", "pattern": "^\\d{3}-\\d{3}-\\d{4}$"}),
]


@pytest.mark.parametrize("params", SIGN_IN_ASKS)
def test_sign_in_words_and_id_patterns_are_asks(params: dict[str, Any]) -> None:
    assert blocked(params), params


@pytest.mark.parametrize("params", SIGN_IN_HARMLESS)
def test_sign_in_words_elsewhere_pass(params: dict[str, Any]) -> None:
    assert not blocked(params), (params, DETECTOR.find(params))


HEX = "5b2e8c41d9a07f36e1c4b8d2a6f09e7c3d5a1b8e4f2c6d9a0b7e3c1f5a8d2e6b"


@pytest.mark.parametrize("params", [
    form("Wallet import", k={"type": "string", "title": "Account key", "default": "0x" + HEX}),
    form("Portefeuille", k={"type": "string", "title": "Clé", "description": f"Exemple : 0x{HEX}"}),
    form("Wallet", k={"type": "string", "title": "Schlüssel", "description": f"z. B. {HEX}"}),
])
def test_a_256_bit_hex_key_shown_is_an_ask(params: dict[str, Any]) -> None:
    assert blocked(params), params


@pytest.mark.parametrize("params", [
    form("Explorer", h={"type": "string", "title": "Transaction hash", "description": f"e.g. 0x{HEX}"}),
    form("Release", c={"type": "string", "title": "SHA-256 checksum", "default": HEX}),
])
def test_a_hex_digest_shown_is_not_an_ask(params: dict[str, Any]) -> None:
    assert not blocked(params), (params, DETECTOR.find(params))


def test_encoded_values_are_decoded_too() -> None:
    secret = "sk_live_" + "x" * 24  # a placeholder body: only the prefix shows the credential
    encoded = secret.replace("_", "&#95;")
    assert blocked(form("Billing", k={"type": "string", "title": "Value", "default": encoded}))
    assert blocked(form("Billing", k={"type": "string", "title": "Value", "examples": [secret.replace("_", "%5F")]}))


# -- classes fixed after blind set 4 (docs/sensitive-fields.md, "Classes") ----------------------------------

HEX40 = "c3a91f07be52d84e6a0f19c7d2b5e83a4f6c0d1e"


ASKS_AFTER_BLIND4 = [
    # A connection string whose userinfo holds a password, empty user or not; in a `format: uri` field too.
    form("Cache", u={"type": "string", "title": "Memcached URL", "default": "memcache://:hunter2hunter@mc:11211"}),
    form("DB", u={"type": "string", "title": "DSN", "format": "uri",
                  "description": "Mit Benutzer und Passwort, z. B. mysql://app:<passwort>@db/app"}),
    form("Broker", u={"type": "string", "format": "uri", "title": "AMQP URL",
                      "default": "amqps://svc:Zq8vLr2mWx@broker.internal/vhost"}),
    # A key shown as 32 to 63 hex digits in a field that names a key.
    form("Partner", k={"type": "string", "title": "Webhook key", "description": f"e.g. {HEX40}"}),
    # An override shows a word reversed; the stored text still names the secret (both readings count).
    form("התחברות", p={"type": "string", "title": "\u202dסיסמה\u202c"}),
    # Letters drawn with slashes and bars; capitals spelt one by one with any separator.
    form("Checkout", c={"type": "string", "title": "C\\/C"}),
    form("Bank", t={"type": "string", "title": "m-T-A-N"}),
    form("Zahlung", t={"type": "string", "title": "C-V-C"}),
    # A code that came by message, asked for in a later question that names the field.
    form("Wir haben dir eine SMS geschickt. Wie lautet der Code?", c={"type": "string", "title": "Code"}),
    # The code we sent, even when the next sentence says when it expires.
    {"mode": "form", "message": "Type the code we texted you. It expires soon.",
     "requestedSchema": {"type": "object", "properties": {"c": {"type": "string", "title": "Code"}}}},
    # A private key by its container format.
    form("Signing", k={"type": "string", "title": "PKCS#8 file contents"}),
]


HARMLESS_AFTER_BLIND4 = [
    # Words inside a link's path name a page, not the ask.
    form("Read [the guide](https://wiki.example.com/display/SSN/Onboarding) first.", n={"type": "string", "title": "Team"}),
    # A sentence-length title that says not to put a secret in.
    form("Feedback", c={"type": "string", "title": "Remarks (do not include any passwords)"}),
    # An identity field with a remark on what it is for.
    form("Kontakt", e={"type": "string", "title": "E-Mail (dorthin schicken wir Anmeldecodes)"}),
    # Settings of a code: its validity, its attempts.
    form("2FA", v={"type": "integer", "title": "Account lock after N wrong PIN attempts", "default": 5}),
    form("Richtlinie", a={"type": "integer", "title": "Sperre nach wie vielen PIN-Versuchen", "default": 3}),
    # The identity document itself: renewing it.
    form("Turno para renovar el DNI", v={"type": "string", "title": "Oficina"}),
    # A database key.
    form("Şema", k={"type": "string", "title": "Birincil anahtar sütunu", "default": "id"}),
    form("Tabelle", k={"type": "string", "title": "Primärschlüssel-Spalte", "default": "id"}),
    # A pin on a map.
    form("Entrega", r={"type": "string", "title": "Referencia del pin en el mapa"}),
    # A 40-hex digest next to words for a commit.
    form("Deploy", c={"type": "string", "title": "Commit", "description": f"e.g. {HEX40}"}),
]


# -- classes fixed after blind set 5 (docs/sensitive-fields.md, "Classes") ----------------------------------

BIP39_SAMPLE = ["orbit", "velvet", "harvest", "lizard", "cabin", "noble"]


ASKS_AFTER_BLIND5 = [
    # A choice whose options are pieces of a secret, on a form that names it.
    form("Wallet check", w={"type": "string", "title": "Pick word 5 of your seed phrase", "enum": BIP39_SAMPLE}),
    form("Kontrola karty", d={"type": "string", "title": "Druhá číslice vašeho PINu",
                              "enum": [str(i) for i in range(10)]}),
    # A message that quotes the label of the field it means, among fields with labels of their own.
    form('Bitte geben Sie im Feld "Eingabe" Ihr aktuelles Passwort ein.',
         n={"type": "string", "title": "Nachname"}, e={"type": "string", "title": "Eingabe"}),
    # "Information" says nothing of its own: the message's ask points at it.
    form("Informe a senha do roteador para o técnico.", i={"type": "string", "title": "Informação"}),
    # Indic words keep their vowel signs and viramas: a typo in them is read as the noun.
    form("लॉगिन", p={"type": "string", "title": "पासवरड"}),
    form("உள்நுழைவு", p={"type": "string", "title": "கடவுச்சொள்"}),
    # Capitals with marks or of another script are an acronym written in capitals.
    form("Inscription", n={"type": "string", "title": "N̈ÄS̈"}),
    # The characters typed at the lock screen, in Chinese and Swedish.
    form("同步", u={"type": "string", "title": "你每次在锁屏界面输入的字符"}),
    form("Flytt", k={"type": "string", "title": "Vilken kod slår du in för att låsa upp din telefon?"}),
]


HARMLESS_AFTER_BLIND5 = [
    # A notes field never receives the secret a message names.
    form("Haben Sie Ihr Passwort geändert?", j={"type": "boolean", "title": "Ja"},
         n={"type": "string", "title": "Bemerkungen (optional)"}),
    form("¿Recibiste el código por SMS?", s={"type": "boolean", "title": "Sí"},
         n={"type": "string", "title": "Observaciones"}),
    # Nor does a number field with a label of its own, nor a phone field in another script.
    form("Apply for the travel card", i={"type": "number", "title": "Monthly spending (EUR)"}),
    form("إعداد رمز التحقق", p={"type": "string", "title": "رقم الجوال"}),
    # Everyday words are read as themselves, not as a misspelt secret noun.
    form("Weekend", p={"type": "string", "title": "Patrol route"}),
    form("Kayıt", s={"type": "string", "title": "Şirket adı"}),
    # Being asked for a secret, reported after the fact.
    form("Betrugsmeldung: Hat jemand Sie nach Ihrer PIN gefragt?", a={"type": "string", "title": "Absender"}),
    # A public key, "without", a code generator, a sentence that ends before the label.
    form("Deploy", k={"type": "string", "title": "Klucz publiczny SSH"}),
    form("Limits", m={"type": "integer", "title": "Maximalbetrag ohne PIN"}),
    form("OTP 생성기 교체 신청", a={"type": "string", "title": "주소"}),
    form("Describe what happened when you tried to log in.", d={"type": "string", "title": "Details"}),
    # A choice of ordinary words is no piece of a secret when nothing names one.
    form("Lunch order", f={"type": "string", "title": "Pick a fruit", "enum": ["apple", "banana", "orange", "lemon"]}),
]


# -- classes fixed after blind set 6 (docs/sensitive-fields.md, "Classes") ----------------------------------


ASKS_AFTER_BLIND6 = [
    # A message that stops mid-word and a label that carries on, even with an ending or further down.
    form("Pro přihlášení zadejte prosím hes", u={"type": "string", "title": "Uživatel"},
         h={"type": "string", "title": "lo k účtu"}),
    form("A belépéshez írd be a jel", v={"type": "string", "title": "szót (kötelező)"}),
    # An e-mail field says who you are: a bare "Parola" beside it is the password.
    form("Sesiune expirată", e={"type": "string", "title": "E-mail", "format": "email"},
         p={"type": "string", "title": "Parola"}),
    # Hangul written as conjoining jamo.
    form("로그인", p={"type": "string", "title": "\u1107\u1175\u1106\u1175\u11af\u1107\u1165\u11ab\u1112\u1169"}),
    # "Value" in other languages points at the field the message means.
    form("Zadajte svoje heslo.", h={"type": "string", "title": "Hodnota"}, u={"type": "string", "title": "Poznámka k účtu"}),
]


HARMLESS_AFTER_BLIND6 = [
    # A number the form pre-fills is a setting.
    form("Politique 2FA", v={"type": "integer", "title": "Durée de validité du code à usage unique (s)", "default": 90}),
    form("PIN-Richtlinie", n={"type": "integer", "title": "PIN-Stellen", "default": 6}),
    # The person responsible and a path answer something else than the secret the message names.
    form("Rotace API klíčů: kdo ji provede?", o={"type": "string", "title": "Odpovědná osoba"}),
    form("Dove deve leggere i segreti il servizio?", p={"type": "string", "title": "Percorso", "default": "kv/app"}),
    # A share code that says it is no password, a KMS key alias.
    form("比价", k={"type": "string", "title": "淘口令", "description": "分享口令，不是账户密码"}),
    form("Cifrado", a={"type": "string", "title": "Alias de la clave maestra", "default": "alias/erp"}),
]


def test_every_detector_shares_the_one_lexicon_the_process_built() -> None:
    from gateway.policy.secret_lexicon import load_builtin_lexicon

    assert SensitiveFieldDetector()._lexicon is load_builtin_lexicon() is DETECTOR._lexicon


# -- classes fixed after blind set 7 (docs/sensitive-fields.md, "Classes") ----------------------------------


ASKS_AFTER_BLIND7 = [
    # The code we sent, in Russian and Arabic, with the field labelled only "Code".
    form("Мы отправили код на ваш второй телефон.", k={"type": "string", "title": "Код"}),
    form("أدخل الرمز المرسل إليك لإتمام الدفع", r={"type": "string", "title": "الرمز"}),
    # A message cut after a noun of two words.
    form("Please enter the guardian's Social Security", n={"type": "string", "title": "number (9 digits)"}),
    # A right-to-left override over a description: read as displayed, camelCase included.
    form("Karte", n={"type": "string", "title": "\u202e" + "The long number printed on the front of your card"[::-1]
                   + "\u202c"}),
]


HARMLESS_AFTER_BLIND7 = [
    # A branch, a city, a child's class, a delivery address: answers to something else.
    form("Ваш новый ПИН-код готов. Выберите отделение для получения.", b={"type": "string", "title": "Отделение"}),
    form("Renouvellement de la carte bancaire : votre ville ?", v={"type": "string", "title": "Ville"}),
    # A Japanese or Korean negation after the noun.
    form("公開鍵を登録してください（秘密鍵は入力しないでください）", k={"type": "string", "title": "公開鍵"}),
    # "Didn't you get the code?" is about the code.
    form("¿No te llegó el código? Contanos.", p={"type": "string", "title": "Problema"}),
]


ASKS_AFTER_BLIND8 = [
    # The message names the secret; of two free fields, the one labelled "Value" takes it: written in a
    # language whose word for it folds (diacritics, Greek, Cyrillic) or was missing (Yoruba, Swahili).
    form("Για να συνεχίσετε, γράψτε τον κωδικό πρόσβασης.", a={"type": "string", "title": "Τιμή"},
         b={"type": "string", "title": "Κατάστημα"}),
    form("Aby kontynuować, wpisz hasło.", a={"type": "string", "title": "Wartość"},
         b={"type": "string", "title": "Numer zamówienia"}),
    form("Въведете ПИН кода на картата.", a={"type": "string", "title": "Стойност"}, b={"type": "string", "title": "Магазин"}),
    form("Kọ ọ̀rọ̀ aṣínà rẹ.", a={"type": "string", "title": "Iye"}, b={"type": "string", "title": "Ìdí"}),
    form("Andika nenosiri lako.", a={"type": "string", "title": "Thamani"}, b={"type": "string", "title": "Sababu"}),
]
HARMLESS_AFTER_BLIND8 = [
    # The same labels on forms that name no secret.
    form("Αξιολογήστε την υπηρεσία μας.", a={"type": "string", "title": "Τιμή"}, b={"type": "string", "title": "Κατάστημα"}),
    form("Oceń naszą obsługę.", a={"type": "string", "title": "Wartość"}, b={"type": "string", "title": "Numer zamówienia"}),
    form("Andika maoni yako.", a={"type": "string", "title": "Thamani"}, b={"type": "string", "title": "Sababu"}),
]


ASKS_AFTER_BLIND9 = [
    # A word that is the password only on a sign-in form, disguised: case mixed, letters spaced out, look-alikes.
    form("Verificare cont", p={"type": "string", "title": "PaRoLa"}),
    form("Validación de la compra", c={"type": "string", "title": "c l a v e"}),
    form("Acceso al museo", c={"type": "string", "title": "Сlаvе"}),  # Cyrillic С, а, е
]
HARMLESS_AFTER_BLIND9 = [
    # The same words as written by people, off a sign-in form: a motto, a key word, a pass.
    form("Concurs de sloganuri", p={"type": "string", "title": "Parola"}),
    form("Crucigrama del domingo", c={"type": "string", "title": "Clave"}),
]

ASKS_AFTER_BLIND10 = [
    # A label in one script is never "corrected" into a Latin word: "Поле" (a field) is no misspelt "nome".
    form("Сбербанк: введите пароль от онлайн-банка.", x={"type": "string", "title": "Поле"}),
    form("МТС: унесите лозинку.", x={"type": "string", "title": "Поље"}),
    # A word mixing Greek and Cyrillic capitals reads as the Latin capitals they imitate.
    form("Ingiza РΙΝ yako ya benki", p={"type": "string", "title": "Jibu"}),  # Cyrillic Р, Greek Ι and Ν
    # A label or message in base64 or hex reads as the words it encodes.
    form("Sicherheitsprüfung", f={"type": "string", "title": "S2VubndvcnQ="}),  # "Kennwort"
    form("Fill in the label 0x70617373776f7264", v={"type": "string", "title": "0x70617373776f7264"}),
    # A session cookie's value is a bearer credential.
    form("Paste the cookie value from your browser; the bot will then act as you.", c={"type": "string", "title": "li"}),
    # A negation further on negates something else; a bank's "secret number" is never a postal PIN; a place
    # word must start a word ("एटीएम पिन" holds no "map").
    form("Enter your PIN and never share it with anyone.", f={"type": "string", "title": "Value"}),
    form("لتأكيد التوصيل أدخل الرقم السري للبطاقة", f={"type": "string", "title": "الرقم السري للبطاقة", "maxLength": 4}),
    form("नकद निकासी", f={"type": "string", "title": "एटीएम पिन"}),
    # Description words in more languages (helper-drafted concepts): "the code we sent to your phone".
    form("Tape kòd nou te voye sou telefòn ou a.", c={"type": "string", "title": "Kòd"}),
    # "Parola" on a form whose message asks for the password; "the secret code" in Darija; a noun cut across
    # a message and a title in a script without spaces; Catalan digits on the back of the card.
    form("Vodafone: introduceți parola contului pentru a continua.", p={"type": "string", "title": "Parola"}),
    form("عطينا الكود السري ديال البطاقة باش نفعّلوها", c={"type": "string", "title": "الجواب"}),
    form("请输入您手机上收到的验", c={"type": "string", "title": "证码"}),
    form("Escriu les tres xifres del darrere de la targeta.", c={"type": "string", "title": "Xifres", "maxLength": 3}),
    # A question about the code and a yes/no field, then a sentence telling the user to type it: an ask.
    form("Vous avez reçu le code par SMS ? Saisissez-le ici.", ok={"type": "boolean", "title": "Se souvenir de moi"},
         c={"type": "string", "title": "Valeur"}),
]
HARMLESS_AFTER_BLIND10 = [
    # Another sentence of the message asks for what the field's label names; the secret is only mentioned.
    form("Type the nearest landmark. Drivers who want your PIN are scammers.", a={"type": "string", "title": "Landmark"}),
    form("Weka mahali pa kuchukua. Dereva hatakuuliza PIN.", m={"type": "string", "title": "Mahali"}),
    # "So the" is English, not the Vietnamese "số thẻ" (card number) written without its marks.
    form("We need the floor number so the technician can find you.", f={"type": "string", "title": "Floor"}),
    # An identifier that is the title's first word reads as the title does ("Pis i porta": a floor and door).
    form("Adreça de lliurament", pis={"type": "string", "title": "Pis i porta"}),
    # A suggestions field takes remarks, not the secret the message is about.
    form("How was resetting your password today?", r={"type": "integer", "title": "Rating", "minimum": 1,
                                                       "maximum": 5}, s={"type": "string", "title": "Suggestions"}),
    # A negation that closes its clause, in languages that put it after the noun; a negated mention joined to
    # the next label is still a mention.
    form("Delivery ke liye rasta batayiye. Hum kabhi aapka OTP nahi maangte.", f={"type": "string", "title": "Rasta"}),
    form("Yeni kartınız hangi şubeye gönderilsin? Eski kartın numarası gerekmez.",
         f={"type": "string", "title": "Teslim alınacak yer"}),
    # "PIN" beside a place word: a pin on a map, a postal PIN code.
    form("Pin the meeting point on the map for the driver.", f={"type": "string", "title": "Meeting point"}),
    form("మీ చిరునామా పిన్ కోడ్ రాయండి.", f={"type": "string", "title": "పిన్ కోడ్"}),
    # A title that counts what its identifier names; words that only start like a concept word.
    form("Ustawienia konta", n={"type": "integer", "title": "Ile kodów zapasowych jeszcze masz?", "minimum": 0},
         backup_codes_left={"type": "integer", "title": "Ile kodów zapasowych Ci zostało?", "minimum": 0}),
    form("Maneno muhimu ya makala hii", m={"type": "string", "title": "Maneno muhimu"}),
    # Only a question whether the code came, with a choice to answer it.
    form("Vous avez bien reçu le code envoyé par SMS ?", r={"type": "string", "title": "Réponse",
                                                          "enum": ["oui", "non", "en retard"]},
         d={"type": "string", "title": "Votre opérateur"}),
    # Runs that only look encoded stay as written.
    form("Order ABCD1234 shipped.", n={"type": "string", "title": "Tracking note"}),
]
ASKS_AFTER_BLIND11 = [
    # A word of Greek or Cyrillic capitals that all have Latin twins reads as those capitals.
    form("Mokėjimas", p={"type": "string", "title": "ΡΙΝ"}),
    # The Myanmar digit zero inside a word is the letter wa it looks like.
    form("အကောင့်ဝင်ရန်", p={"type": "string", "title": "စကား၀ှက်"}),
    # "Contra", "Contr." are the password on a sign-in form (Mexican and Galician slang, abbreviation).
    form("Portal escolar", u={"type": "string", "title": "Usuario"}, c={"type": "string", "title": "Contra"}),
    # Tajik "рамз" (password).
    form("Ворид ба ҳисоб", p={"type": "string", "title": "Рамзи ворид"}),
]
HARMLESS_AFTER_BLIND11 = [
    # A one-word generic identifier is read as its human title reads it.
    form("Concurso de receitas", d={"type": "string", "title": "Nome do prato"},
         secret={"type": "string", "title": "Qual é o ingrediente secreto da sua receita?"}),
    # An identifier made of the title's initials (`kp`, "Kode pos": a postal code).
    form("Endereço de entrega", kp={"type": "string", "title": "Kode pos"}),
    # A queue ticket ("senha de atendimento").
    form("Pesquisa de satisfação", senha={"type": "string", "title": "Número da sua senha de atendimento"}),
    # Mixed-case words are no base64.
    form("Teclado", t={"type": "string", "title": "Prefere JavaScript ou TypeScript?"}),
]

ASKS_AFTER_BLIND12 = [
    # A bank's card reader ("Digipass") gives a transaction code.
    form("Bevestig de overschrijving met je Digipass.", c={"type": "string", "title": "Antwoord", "pattern": "^\\d{8}$"}),
    # A sign-in word with a remark in brackets, or with its letters split by slashes.
    form("Introduceți parola contului.", p={"type": "string", "title": "Parola (ca la autentificare)"}),
    form("Conectare", u={"type": "string", "title": "Utilizator"}, p={"type": "string", "title": "p/a/r/o/l/a"}),
    # Egyptian national ID in Arabizi.
    form("Ekteb ra2am el bata2a bta3ak", r={"type": "string", "title": "El ra2am"}),
    # A Gurmukhi vowel sign splits no word: "ਤੁਹਾਡਾ ਕਾਰਡ" holds no "ਡਾਕ" (post), so the ATM PIN is no postal code.
    form("ਤੁਹਾਡਾ ਕਾਰਡ ਬੰਦ ਹੈ, ਚਾਲੂ ਕਰੋ", p={"type": "string", "title": "ATM ਪਿੰਨ"}),
]
HARMLESS_AFTER_BLIND12 = [
    # Letters taken in order from the title (`pst`, "Poštna številka"): the identifier abbreviates the title.
    form("Dostava", pst={"type": "string", "title": "Poštna številka", "pattern": "^\\d{4}$"}),
    # A URL field does not answer a message that names a token; keywords; a Pix key is a public identifier.
    form("Et token lages automatisk etter registreringen.", u={"type": "string", "title": "Callback-adresse",
                                                                "format": "uri"}),
    form("Makala mpya", k={"type": "string", "title": "Kalit so‘zlar"}),
    form("Reembolso", pix={"type": "string", "title": "Sua chave Pix"}),
    # The word "PIN" spaced out beside an address is still the postal PIN code.
    form("डिलीवरी पता", pincode={"type": "string", "title": "प ि न कोड"}),
]

ASKS_AFTER_BLIND13 = [
    # Four base64 characters that decode to a capitalised acronym ("UElO": PIN; "T1RQ": OTP).
    form("Tafadhali weka UElO yako ili kuendelea.", v={"type": "string", "title": "Thamani"}),
    form("Confirm the T1RQ to continue.", v={"type": "string", "title": "Value"}),
    # Four digits are a bank PIN even beside a place or delivery word.
    form("Confirm the delivery of your parcel", p={"type": "string", "title": "PIN", "pattern": "^\\d{4}$"}),
    # An identifier ending in "field" names the field, not a label of the secret.
    form("Verify the transfer", otp_field={"type": "string", "title": "Code we sent you by SMS"}),
    form("Account check", pin_field={"type": "string", "title": "Your card PIN"}),
    # A compound whose last part misspells the secret noun.
    form("Anmeldung", k={"type": "string", "title": "Bankkontopasswrt"}),
    # A message cut with an ellipsis goes on in the title.
    form("Для подтверждения введите кодовое...", p={"type": "string", "title": "...слово из договора"}),
    # Described asks: the sixteen digits of a card; the message that just came; typing to open the computer.
    form("Para el reembolso, escribe los dieciséis números de tu tarjeta.", n={"type": "string", "title": "Número"}),
    form("ابھی والے ایس ایم ایس کے چھ ہندسے یہاں لکھیں", v={"type": "string", "title": "جواب"}),
    form("IT desk: tell us what you type each morning to open your computer.", a={"type": "string", "title": "Answer"}),
    # Boxes of one or two digits each take part of the asked number.
    form("Enter your one-time code, one digit per box.", d1={"type": "string", "title": "1st", "pattern": "^\\d$"},
         d2={"type": "string", "title": "2nd", "pattern": "^\\d$"}, d3={"type": "string", "title": "3rd",
                                                                         "pattern": "^\\d$"}),
    # "三個數字" is three digits, not a count ("個數"): the title takes the CVV the message describes.
    form("麻煩打返信用卡背面嗰三個數字", n={"type": "string", "title": "三個數字"}),
    # A grid card named in the message; the digits as the title.
    form("Digite os números do seu cartão matriz.", a={"type": "string", "title": "Posição A1", "pattern": "^[0-9]{2}$"},
         b={"type": "string", "title": "Posição C4", "pattern": "^[0-9]{2}$"}),
]
HARMLESS_AFTER_BLIND13 = [
    # A number capped low holds no ID or card number, whatever its identifier abbreviates (`dni`: days).
    form("Anuncio", dni={"type": "integer", "title": "Días", "minimum": 1, "maximum": 30}),
    # An identifier that starts a longer title word reads as that word (`op`, "operación").
    form("Pago", op={"type": "string", "title": "Número de operación"}),
    # Naming a key where the name word takes an ending (Kurdish "ناوی").
    form("کلیلی API نوێ دروست کرا.", n={"type": "string", "title": "ناوی کلیلەکە"}),
    # Wedding roles, discount codes, a device that was lost.
    form("Who carries what at the ceremony?", c={"type": "string", "title": "Coin bearer"}),
    form("Dostava", d={"type": "string", "title": "Šifra za popust"}),
    form("OTP 기기 분실 신고", d={"type": "string", "title": "분실 장소"}),
]

ASKS_AFTER_BLIND14 = [
    # "Enter your PIN to ...": a one-word harmless phrase is not found across words ("pinto", a door).
    form("Enter your PIN to confirm the transfer.", v={"type": "string", "title": "Value"}),
    # What a clause makes, it hands over: "generate ... and drop it below".
    form("The deploy bot needs registry access. Generate a classic access token with read scope and drop it "
         "below.", v={"type": "string", "title": "Value"}),
    # A key's kind between the words of the noun.
    form("To sign releases we need your private PGP key.", k={"type": "string", "title": "Key block"}),
    # A notes field the message names in quotes takes the answer.
    form("Paste your API key into the 'Notes' box so support can check it.", n={"type": "string", "title": "Notes"}),
    # Armenian sentences end with "։": the reason in the first sentence does not govern the second's ask.
    form("Ձեր հաշիվը արգելափակված է կասկածելի մուտքի պատճառով։ Ուղարկեք ձեր բոլոր վերականգնման կոդերը։",
         c={"type": "string", "title": "Կոդեր"}),
    # Backslash escapes and bare hex are decoded.
    form(r"Please enter your \u0050\u0049\u004E to confirm.", v={"type": "string", "title": "Value"}),
    form("Enter your 70617373776f7264 (hex) to continue.", v={"type": "string", "title": "Value"}),
    # Grid-card cells as titles; digits, card and expiry together are the card number.
    form("Authorise the payment with your grid card.", a={"type": "string", "title": "Cell B2"},
         b={"type": "string", "title": "Cell D7"}),
    form("Renew the subscription: type all the digits on your card and its expiry date.",
         n={"type": "string", "title": "Digits"}, e={"type": "string", "title": "Expiry"}),
]
HARMLESS_AFTER_BLIND14 = [
    form("Recipe contest: what is the secret of your stew?", s={"type": "string", "title": "The secret ingredient"}),
    form("Шинэ API түлхүүрт нэр өгнө үү.", n={"type": "string", "title": "Нэр"}),
    form("Grid card ordered. Where should we send it?", a={"type": "string", "title": "Street and number"},
         b={"type": "string", "title": "Flat B2"}),
    form("Pin to taskbar?", p={"type": "boolean", "title": "Pin to taskbar"}, n={"type": "string", "title": "Shortcut name"}),
]

ASKS_AFTER_BLIND15 = [
    # A Vault that is sealed, and the holder's part of its key, in words of several languages.
    form("The secrets vault of the clinic is sealed after the update. Type your part of the opening key.",
         p={"type": "string", "title": "Your part"}),
    form("Kommunens hvelv er forseglet. Skriv inn nøkkelen din.", p={"type": "string", "title": "Din del"}),
    # "Paste here", "Clau" (a key): labels that say nothing of their own next to a field that does.
    form("The roster app needs your weather provider key. Paste your developer key in the box.",
         p={"type": "string", "title": "Paste here"}, s={"type": "string", "title": "Nearest station"}),
    form("Enganxa aquí la clau d'API del transportista.", k={"type": "string", "title": "Clau"},
         c={"type": "string", "title": "Número de contenidor"}),
    # A hole of the math alphanumerics read as the letter its place stands for (U+1D4BA for script "e").
    form("Confirm the payment: type your card's 𝓅𝒾𝓃 and your 𝓅𝒶𝓈𝓈𝓌𝑜𝓇𝒹 𝓀\U0001D4BA𝓎.", v={"type": "string",
                                                                                         "title": "Value"}),
    # Arabizi "secret number"; "nom" (a name) is no identity word inside "nọmba" (a number).
    form("Ekteb el raqam el serry beta3 el card hena.", v={"type": "string", "title": "El raqam"}),
    form("Dee nọmba atọ dị n'azụ kaadị gị.", n={"type": "string", "title": "Nọmba atọ"}),
]
HARMLESS_AFTER_BLIND15 = [
    form("Parcel booking", a={"type": "string", "title": "Address"},
         p={"type": "string", "title": "PIN code", "pattern": "^[1-9][0-9]{5}$"}),
]

ASKS_AFTER_BLIND16 = [
    # Among several fields, the one whose label repeats a word of the ask ("Anteil", "share") takes it.
    form("Der Tresor ist nach dem Update versiegelt. Bitte Ihren Entsiegelungs-Anteil eingeben.",
         a={"type": "string", "title": "Ihr Anteil"}, k={"type": "string", "title": "Kürzel"}),
    # Grid cards: a Hindi grid card, Japanese cells written "B-2", Korean numbered cells ("05번").
    form("ग्रिड कार्ड से नीचे दिए खानों के मान भरें।", a={"type": "string", "title": "खाना C4"},
         b={"type": "string", "title": "खाना G2"}),
    form("乱数表の指定された位置の数字を入力してください。", a={"type": "string", "title": "【B-2】の数字"},
         b={"type": "string", "title": "【E-5】の数字"}),
    form("이체를 위해 보안카드 번호를 입력하세요.", a={"type": "string", "title": "05번 앞 2자리"},
         b={"type": "string", "title": "31번 뒤 2자리"}),
]
HARMLESS_AFTER_BLIND16 = [
    # "The purpose of the new API key" (用途 governs); a village's postal PIN code; a Kurdish address
    # ("şandin", sending, is not Indonesian "sandi").
    form("新しいAPIキーの用途を教えてください。", u={"type": "string", "title": "用途"}),
    form("पार्सलसाठी गावाचा पिन कोड टाका.", p={"type": "string", "title": "पिन कोड", "pattern": "^[1-9][0-9]{5}$"},
         g={"type": "string", "title": "गाव"}),
    form("Navnîşana şandinê.", n={"type": "string", "title": "Navnîşan"}, k={"type": "string", "title": "Koda posteyê"}),
]

ASKS_AFTER_BLIND17 = [
    # A label that only describes (a remark) does not govern a description that asks outright.
    form("Hallo", o={"type": "string", "title": "Opmerking", "description": "Vul hier je wachtwoord in"}),
    # "Parola chiave" on a sign-in form (a keyword elsewhere); "Nome utente" is an identity field as a whole.
    form("Registro scaduto: rientra con le tue credenziali.", u={"type": "string", "title": "Nome utente"},
         p={"type": "string", "title": "Parola chiave"}),
    # Handed over in Polish: "generate a code ... and type it below".
    form("Wygeneruj kod w aplikacji banku i wpisz go poniżej.", k={"type": "string", "title": "Sześć cyfr",
                                                                   "pattern": "^[0-9]{6}$"}),
    # Described: the three digits on the other side (Ukrainian); a key pasted from a dashboard (Korean).
    form("Потрібні лише три цифри з іншого боку картки.", t={"type": "string", "title": "Три цифри"}),
    form("OpenAI 대시보드에서 발급받은 키를 아래에 붙여넣어 주세요.", v={"type": "string", "title": "값"}),
    # "Nyūryoku" (input) says nothing of its own.
    form("Tetsuzuki no tame ni rikabarī kōdo o nyūryoku shite kudasai.", q={"type": "integer", "title": "#",
                                                                           "maximum": 10},
         n={"type": "string", "title": "Shimei"}, a={"type": "string", "title": "Nyūryoku"}),
]
HARMLESS_AFTER_BLIND17 = [
    # A number capped under 999 holds no secret (bowling pins); a Lithuanian "do not write the password";
    # a Gujarati postal PIN code "for the address".
    form("Bowling league sign-up", a={"type": "integer", "title": "Your average (pins)", "maximum": 300}),
    form("Pranešimas apie sukčiavimą. Papasakokite, bet slaptažodžio neįrašykite.",
         s={"type": "string", "title": "Siuntėjas"}),
    form("પિન કોડ (સરનામા માટે)", p={"type": "string", "title": "પિન કોડ", "pattern": "^[0-9]{6}$"}),
]

ASKS_AFTER_BLIND18 = [
    # An unseal key named in the language itself (drafted for every lexicon language by a helper who saw no
    # test set): Slovene, Armenian, Bengali, Icelandic.
    form("Trezor je po posodobitvi zapečaten.", d={"type": "string", "title": "Ključ za odpečatenje"}),
    form("Պահոցը կնքված է։", k={"type": "string", "title": "Ապակնքման բանալի"}),
    form("ভল্ট বন্ধ হয়ে গেছে।", k={"type": "string", "title": "আনসিল কী"}),
    form("Hvelfingin er innsigluð.", k={"type": "string", "title": "Afinnsiglunarlykill"}),
    # A stem misspelt by a letter too many: "díigitos" is "dígitos", not Portuguese "digitas" (you type).
    form("Casi listo.", f={"type": "string", "title": "Escribe aquí los seis díigitos que te mandamos por SMS"}),
]
HARMLESS_AFTER_BLIND18 = [
    # One word is not a whole description: Malay "masukkan" (type in) holds "masuk" (log in).
    form("Sila masukkan poskod penerima.", p={"type": "string", "title": "Poskod"}),
    # "Primary key" of a table: the drafted "main key" terms that also name it were left out.
    form("Thiết kế bảng", k={"type": "string", "title": "Cột khóa chính"}),
]

ASKS_AFTER_BLIND19 = [
    # Security questions, drafted for every language: the answer asked in the message, the question as the
    # field's own title (it names a name, and still is where the answer goes).
    form("Verifica: rispondi alla tua domanda di sicurezza.",
         a={"type": "string", "title": "Come si chiamava il tuo primo insegnante?"}),
    form("Bevor wir Ihre Adresse ändern: Beantworten Sie Ihre Sicherheitsfrage.",
         a={"type": "string", "title": "Wie hieß Ihr erstes Haustier?"}),
    form("Antes de continuar, responde a tu pregunta de seguridad.", a={"type": "string", "title": "Respuesta"}),
    # A default that is an instruction in brackets.
    form("Node restore.", v={"type": "string", "title": "Value", "default": "<paste your vault unseal key here>"}),
    # Words cut short with a dot.
    form("Wallet migration.", k={"type": "string", "title": "Priv. key (hex)"}),
    form("Pripojenie obchodu.", k={"type": "string", "title": "API kľ."}),
    # Hex and base64 of text in Indic scripts (vowel signs are marks, not letters).
    form("Migration", f={"type": "string", "title": "e0a497e0a581e0a4aae0a58de0a4a420e0a4aae0a4bee0a4b8e0a4b5e0a4b0"
                                                  "e0a58de0a4a1"}),
    form("Setup", f={"type": "string", "title": "4K6J4K6Z4K+N4K6V4K6z4K+NIOCuleCun+CuteCvgeCumuCvjeCumuCviuCusuCvjQ=="}),
]
HARMLESS_AFTER_BLIND19 = [
    # "card #" folded to "card" and made every card a payment card ("Card design"); "#" after a word now reads "no".
    form("Send an e-card to the team.", d={"type": "string", "title": "Card design"}),
    # A building's entrance code for the courier (Croatian).
    form("Dostava: šifra ulaza za kurira.", s={"type": "string", "title": "Šifra ulaza (za kurira)"}),
    # A domain's dot cuts no word; a nickname placeholder names no secret.
    form("Site", u={"type": "string", "title": "Portal (account.com)"}),
    form("Profile", n={"type": "string", "title": "Nickname", "default": "<your nickname>"}),
]

ASKS_AFTER_BLIND20 = [
    # A question as the title is the security question asked, though it shares a word ("tuo") with another
    # sentence of the message.
    form("Il tuo conto è bloccato. Rispondi alla domanda di sicurezza.",
         a={"type": "string", "title": "Qual era la marca della tua prima auto?"}),
    # "SMSed" is a text message sent; the Afrikaans cash machine is an "OTM"; Arabic plural "أكواد".
    form("Your bank SMSed you a code. Enter it here.", c={"type": "string", "title": "Code", "pattern": "^[0-9]{6}$"}),
    form("Tik die vier syfers wat jy by die OTM gebruik.", w={"type": "string", "title": "Waarde",
                                                               "pattern": "^[0-9]{4}$"}),
    form("استعادة الحساب", c={"type": "string", "title": "أكواد الاسترداد"}),
    # A door word alone does not make a bank password a door code.
    form("Bir şifre: kapı kodu değil, banka şifreniz.", p={"type": "string", "title": "İnternet bankacılığı şifresi"}),
    # Described: the question picked at sign-up, answered; the code on the back of the card.
    form("New phone. Answer the question you picked when you signed up.", a={"type": "string", "title": "Your answer"}),
    form("Nuevo dispositivo: responde a la pregunta que elegiste al registrarte.",
         a={"type": "string", "title": "Respuesta"}),
    form("Payment pending.", c={"type": "string", "title": "Code on the back of the card", "pattern": "^[0-9]{3}$"}),
    # A security question that names a name is still where the answer goes.
    form("Verify: answer your security question.", o={"type": "string", "title": "What was your first pet's name?"}),
]
HARMLESS_AFTER_BLIND20 = [
    # A building's door code for the courier (Turkish); a public SSH key with its kind inside (Croatian);
    # Azerbaijani keywords ("açar söz" is a password in Turkmen); the tool ssh-keygen.
    form("Kurye geliyor.", k={"type": "string", "title": "Bina kapı şifresi (kurye için)"}),
    form("Pošaljite javni SSH ključ za pristup.", k={"type": "string", "title": "Javni SSH ključ"}),
    form("Blog", k={"type": "string", "title": "Açar sözlər"}),
    form("Upload", f={"type": "string", "title": "Fingerprint", "description": "as printed by ssh-keygen -lf"}),
    # A quiz question the user chose, answered: no sign-up, no secret.
    form("Quiz time! Answer the question you chose from the list.", a={"type": "string", "title": "Your answer"}),
    # Only a security answer goes to a question title: "credentials" named in a heading ask nothing there.
    form("Inventory of production credentials", o={"type": "string", "title": "What is the owner's name?"}),
]

ASKS_AFTER_BLIND21 = [
    # A security question as a title without a question mark; one chosen from a list, answered beside it.
    form("Reading room access: answer your security question to continue.",
         q={"type": "string", "title": "Name of your favourite uncle"}),
    form("Obnovení přístupu: vyberte svou kontrolní otázku a odpovězte.",
         q={"type": "string", "title": "Kontrolní otázka", "enum": ["Jméno prvního psa", "Rodné příjmení matky"]},
         a={"type": "string", "title": "Odpověď"}),
    # A numbered word list as the default; a cookie's value; an instruction sentence under a bare "Code".
    form("Restore the wallet on this phone.", w={"type": "string", "title": "Backup", "default": (
        "word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11 word12")}),
    form("Подршка: сесија.", c={"type": "string", "title": "Вредност колачића sid"}),
    form("Operation pending.", k={"type": "string", "title": "Code",
                                  "default": "Type the confirmation code from the SMS here"}),
]
HARMLESS_AFTER_BLIND21 = [
    # A notice as the default of an "Information" field informs; the "code" of a postal PIN code is sent nowhere;
    # cookies without a value; a pet's name at the vet.
    form("Save the card?", i={"type": "string", "title": "Information",
                              "default": "The security code is never stored and must be typed at each purchase."}),
    form("Parcel bhejna hai, address aur pin code batao.", a={"type": "string", "title": "Address"},
         p={"type": "string", "title": "PIN code", "pattern": "^[1-9][0-9]{5}$"}),
    form("Cookie settings", c={"type": "string", "title": "Allow analytics cookies", "enum": ["yes", "no"]}),
    form("Vet visit", p={"type": "string", "title": "Name of your pet"}),
]

ASKS_AFTER_BLIND23 = [
    # A misspelt word beside the rest of a noun of several words, in a label and after a long word put right.
    form("Checkout", n={"type": "string", "title": "Nomor kartu kredti"}),
    form("Connexion", p={"type": "string", "title": "Mot de passee actuel"}),
    form("Nastavenie servera", k={"type": "string", "title": "Súkromný kúč (PEM)"}),
    form("Wi-Fi setup", w={"type": "string", "title": "كلمة المرو للشبكة"}),
    # An instruction or a prompt as the default; an ATM's code; a code card; a cut-short label with a parenthesis.
    form("Import", n={"type": "string", "title": "Notes", "default": "paste the twelve words of your wallet backup here"}),
    form("Setup", c={"type": "string", "title": "Connection", "default": "insert_your_secret_api_key_here"}),
    form("Confirm payment", p={"type": "string", "title": "Value", "default": "Card PIN: ", "pattern": "^[0-9]{4}$"}),
    form("Bankomatkarte entsperren", c={"type": "string", "title": "Bankomat-Code", "pattern": "^[0-9]{4}$"}),
    form("Type the number from your code card.", c={"type": "string", "title": "Code 12"}),
    form("SSH", k={"type": "string", "title": "Zas. klj. (id_rsa)"}),
    # Security questions by what they ask; chosen from a list of phrases; a code while the service checks who you are.
    form("Recovery: answer the security question you picked.",
         q={"type": "string", "title": "Question", "enum": ["Name of your first pet", "Your first school"]},
         a={"type": "string", "title": "Your answer"}),
    form("Verify it's you.", a={"type": "string", "title": "What was the name of your first teacher?"}),
    form("Récupération du compte", a={"type": "string", "title": "Nom de jeune fille de votre mère"}),
    form("Confirm it's you to finish signing in.", c={"type": "string", "title": "Code"}),
    form("Open the app", c={"type": "string", "title": "Enter the code you chose"}),
]

HARMLESS_AFTER_BLIND23 = [
    # A public key named further ("... SSH"); a notice as a default; a door code for the courier; a published
    # fingerprint; what a security question is for (a quiz's answer: HARMLESS_AFTER_BLIND20).
    form("Dodajte javni ključ SSH.", p={"type": "string", "title": "Javni ključ (ssh-rsa ...)"}),
    form("Info", i={"type": "string", "title": "Information", "default": "Your PIN is never stored by us."}),
    form("Delivery tomorrow", d={"type": "string", "title": "Kod do drzwi dla kuriera (opcjonalnie)"}),
    form("Publish your key", f={"type": "string", "title": "Fingerprint",
                                "default": "SHA256:q9Yk0pN2vX3b1m5Lr7tWz8cD4fH6jK2s"}),
    form("FAQ", q={"type": "string", "title": "What is your mother's maiden name used for?"}),
]

ASKS_AFTER_BLIND24 = [
    # Boxes of one character each for a secret the message names; a security question as the title.
    form("Sign-in from a new device: give us characters 3 and 6 of your memorable word.",
         a={"type": "string", "title": "Character 3", "maxLength": 1},
         b={"type": "string", "title": "Character 6", "maxLength": 1}),
    form("Account recovery", a={"type": "string", "title": "What is your mother's maiden name?"}),
]

HARMLESS_AFTER_BLIND24 = [
    # A headword of a dictionary; a payment reference; a national login's username.
    form("Slovník: navrhněte nové heslo", h={"type": "string", "title": "Heslo (slovo)"}),
    form("Multibanco", r={"type": "string", "title": "Referência Multibanco (9 dígitos)", "pattern": "^[0-9]{9}$"}),
    form("Login with DigiD", u={"type": "string", "title": "DigiD-gebruikersnaam"}),
]


ASKS_AFTER_BLIND25 = [
    # Cut words in a description of several clauses; the words of a recovery phrase asked one by one.
    form("Verificación", r={"type": "string", "title": "Respuesta",
                            "description": "Resp. a su preg. de seg.: ¿ciudad donde nació su padre?"}),
    form("Back up check: type words 2, 5 and 9 of your recovery phrase.",
         a={"type": "string", "title": "Word 2"}, b={"type": "string", "title": "Word 5"},
         c={"type": "string", "title": "Word 9"}),
]

HARMLESS_AFTER_BLIND25 = [
    # The name of an API key (Urdu: the possessive before the name); guards: a word game's "Word 3", a sentence
    # that ends after a noun (not cut words).
    form("API", n={"type": "string", "title": "API key کا نام"}),
    form("Word game", w={"type": "string", "title": "Word 3", "description": "Your guess for the third word."}),
    form("Feedback", c={"type": "string", "title": "Comment",
                        "description": "Tell us about the new code. Then press send. Thanks."}),
]


ASKS_AFTER_BLIND26 = [
    # A security question in the message and its answer field (the question's words are no misspelt governor);
    # a recovery phrase's words in two boxes; a private key file still asked for.
    form("Drošības jautājums: kā sauca jūsu pirmo mājdzīvnieku?", a={"type": "string", "title": "Atbilde"}),
    form("Piniginės atkūrimas: įveskite savo atkūrimo frazės žodžius.", a={"type": "string", "title": "Žodis 1"},
         b={"type": "string", "title": "Žodis 2"}, c={"type": "string", "title": "Žodis 3"}),
    # (A guard, not a fix: a private key file is still asked for now that public ones are not.)
    form("Deploy", k={"type": "string", "title": "Key", "description": "Paste it from -----BEGIN to the end"}),
    # Case flipped to hide a short word: "pIn De TuS" is no camelCase "p In De Tu S" (whose "in de t" a
    # governor of another language reads).
    form("Retiro sin tarjeta", p={"type": "string", "title": "pIn De TuS 4 cIfRaS", "maxLength": 4}),
    form("Account check", t={"type": "string", "title": "Name of your first primary school teacher"}),
]

HARMLESS_AFTER_BLIND26 = [
    # Where a key is kept (a location); a public key by its file or header; fields of place and time under
    # a message that only mentions a code.
    # (English had its where-questions before; a guard.)
    form("Facility", w={"type": "string", "title": "Where is the spare key kept?"}),
    form("Keys", w={"type": "string", "title": "Wo befindet sich der Schlüsseltresor?"}),
    form("CI", k={"type": "string", "title": "Public key", "description": "Starts with -----BEGIN PGP PUBLIC KEY BLOCK-----"}),
    # (A guard: read as public before this round too.)
    form("Buildserver", k={"type": "string", "title": "Publieke SSH-sleutel", "description": "Inhoud van id_ed25519.pub"}),
    # A public key with its kind between the words (drafted for every language, "öffentlicher SSH-Schlüssel").
    form("Serverzugang", k={"type": "string", "title": "Öffentlicher SSH-Schlüssel"}),
    form("Self check-in: the key box code is sent the day before you arrive.",
         t={"type": "string", "title": "Expected arrival time"}, g={"type": "integer", "title": "Guests"}),
]


ASKS_AFTER_BLIND28 = [
    # A short acronym with its case flipped inside ("NiP", "oIb") counts as written in capitals.
    form("Retrait au guichet", n={"type": "string", "title": "Ton NiP à 4 chiffres"}),
    form("e-Građani", o={"type": "string", "title": "Upišite svoj oIb"}),
]

HARMLESS_AFTER_BLIND28 = [
    # (Guards: a title-case word is no flipped acronym.)
    form("Map", p={"type": "string", "title": "Pin colour"}),
    form("Make-up", t={"type": "string", "title": "Tan skin tone"}),
]

ASKS_AFTER_BLIND29 = [
    # A security question shown as another field's pre-filled value: the free field beside it takes the answer.
    form("Before we change your e-mail", q={"type": "string", "title": "Question", "default": "Name of your first pet"},
         a={"type": "string", "title": "Reply"}),
    form("Przed zmianą adresu", q={"type": "string", "title": "Pytanie", "default": "Imię pierwszego zwierzaka"},
         a={"type": "string", "title": "Twoja odpowiedź"}),
    # "Code" in more languages is a label that says nothing of its own: the message's code goes there.
    form("Ką tik išsiuntėme jums 6 skaitmenų kodą SMS žinute.", v={"type": "string", "title": "Vardas"},
         k={"type": "string", "title": "Kodas"}),
    # A field titled only "Key" whose description points at an API: the API key, named by where it is kept.
    form("Connect your shop to the parcel service", shop={"type": "string", "title": "Shop name"},
         k={"type": "string", "title": "Key", "description": "You find it under Settings → API"}),
]

HARMLESS_AFTER_BLIND29 = [
    # (Guards: another key of the API; a pre-filled text that is no security question lends the field beside
    # it nothing.)
    form("Webhooks", k={"type": "string", "title": "Key", "description": "Public key of the API, to verify our webhooks"}),
    form("Survey", q={"type": "string", "title": "Topic", "default": "Name of your favourite band"},
         a={"type": "string", "title": "Reply"}),
    # A negated clause describes nothing to the rest of the text ("do not enter" + "locked" read as "type in
    # to unlock").
    form("Locker incident: the door locked after three wrong PIN entries. Please do not enter any PIN here.",
         when={"type": "string", "title": "When", "format": "date-time"}, room={"type": "string", "title": "Room"}),
    # Six digits titled "PIN code" beside a place field are a postal code.
    form("New water connection", pin={"type": "string", "title": "PIN code", "pattern": "^[0-9]{6}$"},
         house={"type": "string", "title": "House number"}),
]

ASKS_AFTER_BLIND30 = [
    # (Guards: a place word in a bank's name, "ग्रामीण बैंक" (a rural bank), makes no PIN postal; a private key
    # block as the default still asks.)
    form("ग्रामीण बैंक: एटीएम कार्ड चालू करने के लिए पिन डालें", pin={"type": "string", "title": "एटीएम पिन", "maxLength": 4}),
    form("Deploy from the CI", key={"type": "string", "title": "Deploy key", "default":
                                    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"}),
]

HARMLESS_AFTER_BLIND30 = [
    # An OpenSSH public-key line as the default is public ("ssh-ed25519 AAAA... user@host").
    form("Add your key to the build server", pub={"type": "string", "title": "Public key", "default":
                                                 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG7kq2Vx9sLw0pYt3nB8uF5hJ4dR6aMzQcE1 ana@laptop"}),
    # A place word in the PIN field's own title ("the village's PIN code") makes it postal.
    form("Seed order", pin={"type": "string", "title": "गांव का पिन कोड", "maxLength": 6}),
    # Six characters titled "Pin code" beside an address, under a message about sending: no code sent.
    form("Parcel pickup kab bhejna hai?", pin={"type": "string", "title": "Pin code", "minLength": 6, "maxLength": 6},
         addr={"type": "string", "title": "Address"}),
]

ASKS_AFTER_BLIND31 = [
    # "Answer" in more languages says nothing of its own: the message's security question's answer goes there.
    form("Biztonsági kérdés: mi volt az első háziállata neve?", v={"type": "string", "title": "Válasz"},
         k={"type": "string", "title": "Kedvenc csapat"}),
    # A vendor's secret-key prefix named in the description (Flutterwave's "FLWSECK-").
    form("Connect the store to card payments", k={"type": "string", "title": "Key 2",
                                                  "description": "Starts with FLWSECK-"}),
]

HARMLESS_AFTER_BLIND31 = [
    # An identifier that romanizes its Cyrillic title (`nik`, "Ник", a nickname) reads as the title does.
    form("Шахматный клуб", nik={"type": "string", "title": "Ник на сайте"}),
    # "itan" counts only in capitals (iTAN): Yoruba "ìtàn" is a story.
    form("Àṣà wa: kọ ìtàn kúkúrú nípa ìlú rẹ fún ìwé ìròyìn ilé-ìwé",
         t={"type": "string", "title": "Ìtàn kúkúrú rẹ nípa ìlú"}),
]

ASKS_AFTER_BLIND32 = [
    # Latin capitals inside Greek (or Cyrillic) words read as that script's capitals ("KΩΔIKOΣ"), the form-level
    # pre-check included.
    form("Σύνδεση", c={"type": "string", "title": "KΩΔIKOΣ ANAKTHΣHΣ"}, n={"type": "string", "title": "Όνομα"}),
    # Google's access-token prefix named on its own ("starts with ya29.").
    form("Reconnect the calendar sync", t={"type": "string", "title": "Value",
                                           "description": "the one that starts with ya29."}),
]


def test_base64_without_digits_or_padding_is_decoded() -> None:
    # Case flipping inside a run marks base64 even with no digit, sign or padding ("Hasło konta").
    assert decode_escapes("SGFzxYJvIGtvbnRh") == "Hasło konta"
    assert decode_escapes("WhatsApp JavaScript McDonalds") == "WhatsApp JavaScript McDonalds"


# Every round's classes, asks and harmless forms, each example of our own (none a row of a blind set).
ROUND_ASKS = [(f"blind{n}", p) for n, ps in ((4, ASKS_AFTER_BLIND4), (5, ASKS_AFTER_BLIND5), (6, ASKS_AFTER_BLIND6),
                                             (7, ASKS_AFTER_BLIND7), (8, ASKS_AFTER_BLIND8),
                                             (9, ASKS_AFTER_BLIND9), (10, ASKS_AFTER_BLIND10),
                                             (11, ASKS_AFTER_BLIND11), (12, ASKS_AFTER_BLIND12),
                                             (13, ASKS_AFTER_BLIND13), (14, ASKS_AFTER_BLIND14),
                                             (15, ASKS_AFTER_BLIND15), (16, ASKS_AFTER_BLIND16),
                                             (17, ASKS_AFTER_BLIND17), (18, ASKS_AFTER_BLIND18),
                                             (19, ASKS_AFTER_BLIND19), (20, ASKS_AFTER_BLIND20),
                                             (21, ASKS_AFTER_BLIND21), (23, ASKS_AFTER_BLIND23),
                                             (24, ASKS_AFTER_BLIND24), (25, ASKS_AFTER_BLIND25),
                                             (26, ASKS_AFTER_BLIND26),
                                             (28, ASKS_AFTER_BLIND28), (29, ASKS_AFTER_BLIND29),
                                             (30, ASKS_AFTER_BLIND30), (31, ASKS_AFTER_BLIND31),
                                             (32, ASKS_AFTER_BLIND32)) for p in ps]
ROUND_HARMLESS = [(f"blind{n}", p) for n, ps in ((4, HARMLESS_AFTER_BLIND4), (5, HARMLESS_AFTER_BLIND5),
                                                 (6, HARMLESS_AFTER_BLIND6), (7, HARMLESS_AFTER_BLIND7),
                                                 (8, HARMLESS_AFTER_BLIND8), (9, HARMLESS_AFTER_BLIND9),
                                                 (10, HARMLESS_AFTER_BLIND10), (11, HARMLESS_AFTER_BLIND11),
                                                 (12, HARMLESS_AFTER_BLIND12), (13, HARMLESS_AFTER_BLIND13),
                                                 (14, HARMLESS_AFTER_BLIND14), (15, HARMLESS_AFTER_BLIND15),
                                                 (16, HARMLESS_AFTER_BLIND16), (17, HARMLESS_AFTER_BLIND17),
                                                 (18, HARMLESS_AFTER_BLIND18), (19, HARMLESS_AFTER_BLIND19),
                                                 (20, HARMLESS_AFTER_BLIND20), (21, HARMLESS_AFTER_BLIND21),
                                                 (23, HARMLESS_AFTER_BLIND23), (24, HARMLESS_AFTER_BLIND24),
                                                 (25, HARMLESS_AFTER_BLIND25), (26, HARMLESS_AFTER_BLIND26),
                                                 (28, HARMLESS_AFTER_BLIND28),
                                                 (29, HARMLESS_AFTER_BLIND29), (30, HARMLESS_AFTER_BLIND30),
                                                 (31, HARMLESS_AFTER_BLIND31)) for p in ps]


@pytest.mark.parametrize(("round_", "params"), ROUND_ASKS, ids=[r for r, _ in ROUND_ASKS])
def test_classes_fixed_after_each_blind_set_are_blocked(round_: str, params: dict[str, Any]) -> None:
    assert blocked(params), (round_, params)


@pytest.mark.parametrize(("round_", "params"), ROUND_HARMLESS, ids=[r for r, _ in ROUND_HARMLESS])
def test_harmless_classes_fixed_after_each_blind_set_pass(round_: str, params: dict[str, Any]) -> None:
    assert not blocked(params), (round_, params, DETECTOR.find(params))


def test_place_and_sign_in_words_are_found_as_words() -> None:
    # The one-pass phrase matcher behind the place, motto and sign-in words: Latin words whole, other spaced
    # scripts at the start of a word (an ending may follow), unspaced scripts anywhere, any gap between words.
    from gateway.policy.sensitive_fields import _Words

    words = _Words(["post office", "डाक", "地図", "map"])
    assert words.search(normalize_text("Nearest post-office, please"))
    assert words.search(normalize_text("डाकघर का पता")) and words.search(normalize_text("この地図で"))
    assert not words.search(normalize_text("postoffice")) and not words.search(normalize_text("mapping"))
    assert not words.search(normalize_text("बड़ा कमरा")) and not words.search(normalize_text("बडाक"))  # vowel signs split no word
    assert not _Words([]).search("anything")


# -- an option that says the secret goes in another field (blind-34 round) ------------------------------

def choice_then_field(option: str, other: str, taker: dict[str, Any], message: str = "One more step.") -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
        "how": {"type": "string", "title": "How?", "oneOf": [{"const": "a", "title": option},
                                                            {"const": "b", "title": other}]},
        "next": {"type": "string", **taker}}}}


OFFERED_ASKS = [
    choice_then_field("I will type the card's security code in the box below", "Pay at the desk",
                      {"title": "Code", "pattern": "^[0-9]{3}$"}),
    choice_then_field("Ich tippe mein altes Passwort im nächsten Feld", "Ich rufe an", {"title": "Eingabe"}),
    choice_then_field("Escribo el PIN de la tarjeta en el campo siguiente", "Pago en efectivo",
                      {"title": "Valor", "pattern": "^[0-9]{4}$"}),
]
OFFERED_HARMLESS = [
    # The option names a code that is sent, typed nowhere here; the field after it is a plain text.
    choice_then_field("Send me a new code by SMS", "Call me instead", {"title": "Comments"}),
    # The option says the PIN is typed at the terminal; the field after it asks for a name.
    choice_then_field("I will type my PIN at the card terminal", "Cash", {"title": "Full name"}),
]


@pytest.mark.parametrize("params", OFFERED_ASKS)
def test_an_option_that_sends_the_secret_to_a_later_field_is_blocked(params: dict[str, Any]) -> None:
    assert {f.location for f in DETECTOR.find(params)} == {"requestedSchema.properties.next"}


@pytest.mark.parametrize("params", OFFERED_HARMLESS)
def test_an_option_that_names_a_secret_typed_nowhere_here_passes(params: dict[str, Any]) -> None:
    assert DETECTOR.find(params) == []


@pytest.mark.parametrize("title", ["Code to the safe", "Code maître de l'alarme du coffre", "Código do cofre",
                                   "Combinación de la caja fuerte"])
def test_the_code_of_a_safe_is_a_vault_key(title: str) -> None:
    assert [f.category for f in DETECTOR.find(field(title))] == ["vault_key"]


# -- the blind-36 round ---------------------------------------------------------------------------------

def two_fields(message: str, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
        "a": {"type": "string", **first}, "b": {"type": "string", **second}}}}


def test_a_choice_of_a_few_digits_is_no_pin_digit_but_one_of_all_ten_is() -> None:
    lanes = two_fields("How many pins were still standing in your last frame?",
                       {"title": "Lane", "enum": ["1", "2", "3", "4"]}, {"title": "Team name"})
    assert DETECTOR.find(lanes) == []
    digit = two_fields("Pick the third digit of your card PIN.",
                       {"title": "Digit", "enum": [str(d) for d in range(10)]}, {"title": "Team name"})
    assert [f.location for f in DETECTOR.find(digit)] == ["requestedSchema.properties.a"]


@pytest.mark.parametrize(("message", "choice", "phone"), [
    ("Chọn phương thức xác thực hai bước cho tài khoản của bạn.", "Phương thức", "Số điện thoại"),
    ("Choose your two-step verification method.", "Method", "Phone number"),
])
def test_a_phone_field_takes_no_code_the_message_and_its_label_describe_together(
        message: str, choice: str, phone: str) -> None:
    assert DETECTOR.find(two_fields(message, {"title": choice, "enum": ["SMS", "app"]}, {"title": phone})) == []


@pytest.mark.parametrize(("message", "label"), [
    ("ਰੋਮਿੰਗ ਚਾਲੂ ਕਰਨ ਲਈ SMS ਰਾਹੀਂ ਆਇਆ ਕੋਡ ਲਿਖੋ।", "ਕੋਡ"),
    ("Кіру үшін SMS арқылы келген кодты енгізіңіз.", "Мән"),
])
def test_code_and_value_words_of_more_languages_say_nothing_of_their_own(message: str, label: str) -> None:
    # Beside a second field of its own, the box labelled only "code" / "value" is where the message points.
    assert DETECTOR.find(two_fields(message, {"title": "Phone" if label == "ਕੋਡ" else "Аты"}, {"title": label}))


# -- pictographs between letters (blind-37 round) ------------------------------------------------------

@pytest.mark.parametrize("title", [
    "P★A★S★S★W★O★R★D",  # a star (U+2605) between the letters
    "К➜Л➜Ю➜Ч API",  # arrows
    "S 🔒 E 🔒 E 🔒 D phrase",  # emoji with spaces around them
    "Código B🔸L🔸I🔸K",  # a short acronym, shown in capitals once the emoji are skipped
    "Mật 🔹 khẩu",
])
def test_pictographs_between_letters_separate_nothing(title: str) -> None:
    assert blocked(field(title))


@pytest.mark.parametrize("title", ["★ Rate your visit ★", "📍 Drop a pin on the map", "Next ➜ delivery date"])
def test_pictographs_in_harmless_labels_change_nothing(title: str) -> None:
    assert not blocked(field(title))


# -- the blind-38 round ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "title"), [
    ("உங்கள் கணக்கின் அணுகல் டோக்", "கன்"),  # Tamil: the tail word ends in a virama, a mark to str.isalpha
    ("Bitte den persönlichen Zugriffs", "token"),
    ("कृपया अपना निजी पासवर्", "ड"),
])
def test_a_noun_of_two_words_cut_at_the_end_of_the_message_is_joined(message: str, title: str) -> None:
    params = {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
        "project": {"type": "string", "title": "Projekt"}, "t": {"type": "string", "title": title}}}}
    assert blocked(params)


@pytest.mark.parametrize("prefix", ["sk-proj-", "ghp_", "glpat-", "xoxb-"])
def test_a_default_that_is_a_vendor_prefix_alone_asks_for_that_key(prefix: str) -> None:
    params = field("Valeur")
    params["requestedSchema"]["properties"]["f"]["default"] = prefix
    assert blocked(params)


@pytest.mark.parametrize("default", ["sk-", "gh", "none", "N/A"])
def test_a_short_default_that_is_no_distinctive_prefix_passes(default: str) -> None:
    params = field("Kommentar")
    params["requestedSchema"]["properties"]["f"]["default"] = default
    assert not blocked(params)


@pytest.mark.parametrize(("title", "description"), [
    ("PK", "Cole aqui a PK da sua carteira (64 caracteres hex)"),
    ("PK (PEM)", ""),
    ("PK ya wallet yako", ""),
    ("PK", "الـ PK الخاص بمحفظتك"),
])
def test_pk_beside_a_wallet_or_a_key_format_is_a_private_key(title: str, description: str) -> None:
    assert [f.category for f in DETECTOR.find(field(title, description))] == ["private_key"]


@pytest.mark.parametrize("title", ["PK", "Penalty kicks (PK) scored", "PK of the orders table"])
def test_pk_alone_names_no_private_key(title: str) -> None:
    assert not blocked(field(title))


@pytest.mark.parametrize(("message", "phone"), [
    ("Chagua jinsi ya kupokea misimbo ya 2FA.", "Simu"),
    ("Choose how you want to receive your 2FA codes.", "Tel"),
])
def test_a_short_phone_label_takes_no_code_the_message_names(message: str, phone: str) -> None:
    assert DETECTOR.find(two_fields(message, {"title": "Njia", "enum": ["SMS", "app"]}, {"title": phone})) == []


# -- the blind-39 round ---------------------------------------------------------------------------------

@pytest.mark.parametrize("title", ["गु प्त क्र मां क", "पा स व र्ड", "গো প ন সং খ্যা"])
def test_indic_syllables_spaced_out_are_one_word(title: str) -> None:
    # Each piece is one syllable: a letter with its vowel sign, virama or a conjunct (marks are not letters).
    assert blocked(field(title))


@pytest.mark.parametrize("title", ["न म स्ते", "आ प का स्वा ग त है"])
def test_indic_text_spaced_for_emphasis_asks_nothing(title: str) -> None:
    assert not blocked(field(title))


@pytest.mark.parametrize(("message", "title"), [
    ("购买车票需实名登记，请填写乘车人姓名和身份", "证号码"),
    ("为了完成付款，请输入您的银行卡密", "码"),
])
def test_a_noun_cut_at_the_end_of_an_unspaced_message_is_joined(message: str, title: str) -> None:
    params = {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string", "title": "姓名"}, "rest": {"type": "string", "title": title}}}}
    assert blocked(params)


@pytest.mark.parametrize(("title", "description"), [
    ("Código do cupom", "Impresso no verso do folheto"),
    ("Voucher code", "Printed on the back of your receipt"),
    ("Code du coupon", "Imprimé au dos du ticket"),
])
def test_a_code_qualified_by_a_coupon_is_no_card_code(title: str, description: str) -> None:
    assert not blocked(field(title, description))


@pytest.mark.parametrize(("title", "description"), [
    ("Código", "Impresso no verso do seu cartão, 3 dígitos"),
    ("Code", "The three digits printed on the back of your card"),
])
def test_a_code_on_the_back_of_a_card_still_asks(title: str, description: str) -> None:
    assert blocked(field(title, description))


def test_an_everyday_word_is_not_read_as_a_misspelt_governor() -> None:
    # Swedish "nedan" (below) is no misspelt Turkish "neden" (why): the message asks for the key.
    params = two_fields("Klistra in systemets API-nyckel i fältet nedan.", {"title": "Företag"}, {"title": "Värde"})
    assert [f.category for f in DETECTOR.find(params)] == ["api_key"]


@pytest.mark.parametrize(("name", "title"), [
    ("skrivnost", "Skrivna sestavina (za napovedovalca)"),
    ("skrivnost", "Skrivna sestavina juhe"),
])
def test_an_identifier_that_is_the_titles_first_word_reads_as_the_title(name: str, title: str) -> None:
    assert not blocked(field(title, name=name))


@pytest.mark.parametrize("title", ["Tokenin adı", "API açarının adı", "API-nyckelns namn", "Token-ийн нэр",
                                   "Az API-kulcs neve"])
def test_a_name_after_the_noun_in_the_genitive_names_it(title: str) -> None:
    # The genitive ending stands between the noun and the governor that follows it: the token's name.
    assert not blocked(field(title))


@pytest.mark.parametrize("title", ["Tokenin", "API açarınız", "Tokenens värde"])
def test_a_genitive_with_no_governor_after_it_still_asks(title: str) -> None:
    assert blocked(field(title))


# -- the blind-40 round ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "title"), [
    ("बीज ऑर्डर – कृपया जानकारी भरें।", "पिन कोड"),
    ("ಪಶು ಔಷಧ ಆರ್ಡರ್", "ಪಿನ್ ಕೋಡ್"),
    ("ਨਵਾਂ ਰਜਿਸਟ੍ਰੇਸ਼ਨ", "ਪਿੰਨ ਕੋਡ"),
])
def test_pin_code_alone_in_an_indian_script_is_the_postal_code(message: str, title: str) -> None:
    params = two_fields(message, {"title": "नाम"}, {"title": title})
    params["requestedSchema"]["properties"]["pincode"] = params["requestedSchema"]["properties"].pop("b")
    assert DETECTOR.find(params) == []


@pytest.mark.parametrize(("message", "title"), [
    ("एटीएम कार्ड सक्रिय करें।", "पिन कोड"),
    ("UPI भुगतान की पुष्टि करें।", "पिन कोड"),
    ("बैंक खाता सत्यापन", "पिन कोड"),
    ("Card activation.", "पिन नंबर"),
])
def test_pin_code_beside_a_bank_card_is_still_its_pin(message: str, title: str) -> None:
    assert blocked(two_fields(message, {"title": "नाम"}, {"title": title}))


def test_a_preposition_in_a_label_is_no_word_the_message_answers() -> None:
    # "from" stands in the first sentence too, but the label names no other thing: the field takes the code.
    params = {"mode": "form", "message": "Your parcel from ZipRun is at the locker. We just texted a 6-digit code "
              "to your number; enter it to open the door.", "requestedSchema": {"type": "object", "properties": {
                  "c": {"type": "string", "title": "Code from the text", "pattern": "^[0-9]{6}$"}}}}
    assert [f.category for f in DETECTOR.find(params)] == ["otp"]


@pytest.mark.parametrize(("message", "user", "other"), [
    ("Create your account: your password is set in the next step.", "Username", "City"),
    ("Akaunti mpya: nenosiri utaweka baadaye.", "Jina la mtumiaji", "Kitivo"),
    ("Νέος λογαριασμός (ο κωδικός πρόσβασης ορίζεται σε επόμενο βήμα, όχι εδώ).", "Όνομα χρήστη", "Πόλη"),
])
def test_a_secret_deferred_to_a_later_step_is_not_asked_here(message: str, user: str, other: str) -> None:
    assert DETECTOR.find(two_fields(message, {"title": user}, {"title": other})) == []


def test_a_deferral_does_not_undo_an_ask_for_the_secret_now() -> None:
    assert blocked(two_fields("Enter your password now; you can change it later.", {"title": "Username"},
                              {"title": "Value"}))


# -- found after blind sets 41 and 42 (twelfth session) -----------------------------------------------------

@pytest.mark.parametrize(("message", "title"), [
    ("Die Feldnamen sind in ROT13 geschrieben.", "Cnffjbeg"),  # Passwort
    ("Etiquetas en rot-13 (A↔N).", "Pbagenfrñn"),  # Contraseña (ROT13 leaves ñ as it is)
    ("Enter your nccyvpngvba cnffjbeq (ROT13).", "Value"),  # application password, in the message only
])
def test_a_form_that_says_its_words_are_rot13_is_read_decoded(message: str, title: str) -> None:
    assert blocked(field(title, message=message))


@pytest.mark.parametrize(("message", "title"), [
    ("Cnffjbeg", "Cnffjbeg"),  # the same words, with nothing saying they are ROT13: gibberish, left alone
    ("Rot 13 is a classic cipher: how many letters does it shift?", "Cnffjbeg pbhag"),  # a count of passwords
    ("Quiz: ROT13 of your team's name", "Team name"),
])
def test_rot13_is_read_only_where_the_form_says_so_and_asks_nothing_else(message: str, title: str) -> None:
    assert not blocked(field(title, message=message))


@pytest.mark.parametrize("title", [
    "50 61 73 73 77 6f 72 64",  # "Password"
    "70:61:73:73:77:6f:72:74",  # "passwort", colon-separated
    "d0 bf d0 b0 d1 80 d0 be d0 bb d1 8c",  # "пароль", UTF-8 bytes
])
def test_hex_bytes_written_apart_are_read_as_the_word_they_spell(title: str) -> None:
    assert blocked(field(title, message="Labels are hex."))
    assert decode_escapes(title) != title


@pytest.mark.parametrize("title", ["00:1A:2B:3C:4D:5E", "ff 00 ff 00 cc", "Serial a1 b2 c3 d4e5"])
def test_hex_bytes_that_spell_no_word_stay_as_written(title: str) -> None:
    assert not blocked(field(title, message="Device details"))
    assert decode_escapes(title) == title


@pytest.mark.parametrize("title", ["Закр. ключ", "Закрит. ключ", "Номер банк. карты"])
def test_a_cut_word_with_a_letter_that_folds_to_a_digit_still_spells_its_noun(title: str) -> None:
    # The confusables skeleton folds "з" and "б" to "3" and "6": the cut words are still words.
    assert blocked(field(title, message="Подключение к серверу."))


def test_a_pin_of_four_characters_is_the_cards_whatever_the_delivery_words_say() -> None:
    message = "Parcel locker: delivery fee 5 EUR. Enter your bank card PIN to pay."
    pin = {"type": "string", "title": "Card PIN", "minLength": 4, "maxLength": 4}
    assert blocked(two_fields(message, {"type": "string", "title": "Locker number"}, pin))


def test_a_six_digit_pin_code_beside_delivery_words_is_still_postal() -> None:
    message = "Parcel delivery: enter the PIN code of the delivery address."
    pin = {"type": "string", "title": "PIN code", "maxLength": 6}
    assert not blocked(two_fields(message, {"type": "string", "title": "House number"}, pin))


def test_in_a_script_without_spaces_the_label_repeated_inside_a_run_points_at_its_field() -> None:
    # Burmese: "enter the answer to the security question you set" over "Reference" and "Answer".
    message = "အကောင့်ဖွင့်စဉ်က သတ်မှတ်ခဲ့သော လုံခြုံရေးမေးခွန်း၏ အဖြေကို ရိုက်ထည့်ပါ။"
    assert blocked(two_fields(message, {"type": "string", "title": "ရည်ညွှန်းနံပါတ်"},
                              {"type": "string", "title": "အဖြေ"}))


# -- after blind set 44 (docs/sensitive-fields.md, "Classes after 44") ---------------------------------

@pytest.mark.parametrize(("title", "message"), [
    ("Beginn des Kurses", "Anmeldung zum Yogakurs."),
    ("Begin date", "Plan your internship."),
    ("Kursbeginn der Gruppe", "Anmeldung."),
])
def test_the_word_begin_is_no_pem_block(title: str, message: str) -> None:
    # Folding made "-----BEGIN" the bare word "begin": German "Beginn" (a start) read as a key file.
    assert not blocked(field(title, message=message))


@pytest.mark.parametrize("description", [
    "Der Text, der mit -----BEGIN beginnt",
    "Collez le bloc entier, lignes BEGIN/END comprises",
])
def test_a_pem_first_line_named_in_a_description_still_asks_for_the_key(description: str) -> None:
    assert blocked(field("Schlüssel", description, message="Server verbinden."))


def test_a_pem_public_key_block_named_in_unspaced_text_asks_nothing() -> None:
    assert not blocked(field("SSH 公钥", "以 -----BEGIN PGP PUBLIC KEY BLOCK----- 开头", message="上传公钥"))


@pytest.mark.parametrize("description", [
    "Beginnt mit glrt-, zu finden unter Einstellungen",
    "Commence par hf_, dans vos paramètres",
    "Empieza por npm_; lo ves en tu perfil",
    "Zaczyna się od glrt-, znajdziesz go w ustawieniach",
])
def test_a_vendor_prefix_named_before_a_comma_shows_the_credential(description: str) -> None:
    assert blocked(field("Registrierung", description, message="Runner einrichten."))


def test_a_question_led_in_by_a_colon_is_the_security_question_not_a_yes_no_question() -> None:
    # The form's only choice is a duration: the question after the colon is the security question itself.
    params = two_fields("Zum Schutz stellen wir die Sicherheitsfrage, die Sie gewählt haben: Wie hieß Ihr erstes "
                        "Haustier?", {"title": "Dauer", "enum": ["1 Jahr", "2 Jahre"]}, {"title": "Ihre Antwort"})
    assert blocked(params)
    yes_no = two_fields("Haben Sie eine Sicherheitsfrage eingerichtet?",
                        {"title": "Antwort", "enum": ["ja", "nein"]}, {"title": "Ihr Name"})
    assert not blocked(yes_no)


@pytest.mark.parametrize("title", ["Votre réponse", "Uw antwoord", "Tu respuesta"])
def test_a_possessive_says_no_more_than_the_generic_label_it_stands_before(title: str) -> None:
    message = "Pour continuer, répondez à votre question de sécurité."
    assert blocked(two_fields(message, {"title": "Numéro de dossier"}, {"title": title}))


def test_a_label_word_the_precheck_only_suspects_still_points_at_its_field() -> None:
    # "Lesegerät" may be a misspelling to the pre-check; it names no secret, so it repeats the message's word.
    message = "Bitte geben Sie den Code ein, den Ihr TAN-Lesegerät anzeigt."
    assert blocked(two_fields(message, {"title": "Fahrzeug"}, {"title": "Code vom Lesegerät"}))


def test_a_governor_inside_a_listed_description_is_part_of_it() -> None:
    # Yoruba "nọ́mbà mẹ́ta ẹ̀yìn káàdì" (the three numbers on the back of the card): "meta" folds to a
    # describing word of other languages, inside the listed description it is the word "three".
    assert blocked(field("Nọ́mbà mẹ́ta ẹ̀yìn káàdì", message="Sanwó fún tíkẹ́ẹ̀tì rẹ."))


@pytest.mark.parametrize(("title", "description"), [
    ("Nome de solteira", "da sua mãe"),
    ("Apellido de soltera", "de tu madre"),
])
def test_a_noun_that_runs_on_from_the_title_into_the_description_is_read_as_one(title: str,
                                                                              description: str) -> None:
    assert blocked(field(title, description, message="Confirme o pedido."))


def test_a_name_title_with_an_ordinary_description_stays_a_name() -> None:
    assert not blocked(field("Nome completo", "como no passaporte", message="Reserva do voo."))


def test_a_message_asking_for_the_pin_code_an_indian_pin_code_field_takes_is_postal() -> None:
    message = "पाणी तक्रारीसाठी तुमचा पिन कोड सांगा."
    pin = {"title": "पिन कोड", "minLength": 6, "maxLength": 6}
    assert not blocked(two_fields(message, pin, {"title": "प्रभाग"}))
    bank = "एटीएम कार्डचा पिन कोड सांगा."
    assert blocked(two_fields(bank, {"title": "पिन कोड", "maxLength": 4}, {"title": "नाव"}))


# -- after blind set 45 ---------------------------------------------------------------------------------

NAME = {"title": "Full name"}


@pytest.mark.parametrize(("message", "other"), [
    ("We will never ask for your PIN, CVV or full card number in this chat.", "Preferred pickup time"),
    ("Nous ne demandons jamais votre mot de passe, votre code PIN ou votre numéro de carte.", "Heure de passage"),
])
def test_a_list_that_runs_on_after_a_negated_clause_is_negated_too(message: str, other: str) -> None:
    assert not blocked(two_fields(message, NAME, {"title": other}))


def test_a_clause_that_asks_after_a_negated_one_still_asks() -> None:
    message = "Do not share it with anyone, enter your password in the box below."
    assert blocked(two_fields(message, NAME, {"title": "Value"}))


@pytest.mark.parametrize(("message", "other"), [
    # Kazakh and Russian: "do not write your IIN / SNILS here – it is checked at the desk".
    ("Донорлыққа жазылу. ЖСН-ді бұл жерге жазбаңыз – оны орында көрсетесіз.", "Аты-жөні"),
    ("Запись к врачу. СНИЛС сюда не вписывайте – его проверят в регистратуре.", "ФИО"),
])
def test_a_spaced_dash_ends_the_clause_a_closing_negation_closes(message: str, other: str) -> None:
    assert not blocked(two_fields(message, {"title": other}, {"title": "Күні", "format": "date"}))


def test_a_drafted_description_in_a_clause_about_a_promo_code_asks_for_nothing() -> None:
    message = "Si vous avez reçu un code promo par courrier, indiquez-le ci-dessous."
    assert not blocked(two_fields(message, {"title": "Formule", "enum": ["a", "b"]}, {"title": "Code promo"}))


@pytest.mark.parametrize("title", ["AP1 k1íč", "Pr1vate k3y f1le", "k1ucz AP1"])
def test_leet_one_is_read_as_i_or_l_word_by_word(title: str) -> None:
    assert blocked(field(title, message="Připojení k serveru."))


@pytest.mark.parametrize("description", ["for example 4111 1111 1111 1111", "z. B. 5500-0000-0000-0004"])
def test_a_card_number_shown_in_groups_of_four_asks_for_a_card(description: str) -> None:
    assert blocked(field("Card", description, message="Monthly parking permit."))


@pytest.mark.parametrize("description", ["IBAN DE89 3704 0044 0532 0130 00", "RS35 2600 0560 1001 6113 79",
                                         "for example 4111 1111 1111 1112"])
def test_an_iban_or_a_number_that_fails_the_card_check_is_no_card(description: str) -> None:
    assert not blocked(field("Account", description, message="Refund details."))


def test_a_security_question_as_one_of_two_titles_takes_the_answer() -> None:
    message = "Zmieniasz dane do wypłaty. Potwierdź, że to Ty – odpowiedz na pytanie pomocnicze."
    assert blocked(two_fields(message, {"title": "Numer umowy"}, {"title": "W jakim mieście się urodziłeś?"}))


def test_a_security_question_title_beside_a_phone_field_takes_the_answer() -> None:
    message = "To move your appointment, please answer the security question you set."
    assert blocked(two_fields(message, {"title": "Phone number"}, {"title": "Name of your first school"}))
    # Thai: "confirm it is you before changing the delivery address: answer the security question you set",
    # beside "Phone number" and "Name of your secondary school" (no question mark).
    message = "ยืนยันตัวตนก่อนเปลี่ยนที่อยู่จัดส่ง กรุณาตอบคำถามความปลอดภัยที่คุณตั้งไว้"
    assert blocked(two_fields(message, {"title": "เบอร์โทรศัพท์"}, {"title": "ชื่อโรงเรียนมัธยมของคุณ"}))


def test_a_label_of_generic_words_and_you_is_generic() -> None:
    message = "Before we confirm the transfer, type the characters you normally use to sign in to the portal."
    assert blocked(two_fields(message, {"title": "Receiving club"}, {"title": "Confirm it's you"}))


def test_a_colon_after_a_vowel_sign_ends_the_clause() -> None:
    # Hindi: "answer the security question: where was your mother born?" The where-question after the
    # colon is the security question, in a clause of its own; before, the clause ran on through "कहाँ".
    message = "मोबाइल नंबर बदलने के लिए सुरक्षा प्रश्न का उत्तर दीजिए: आपकी माँ का जन्मस्थान कहाँ है?"
    assert blocked(two_fields(message, {"title": "नया मोबाइल नंबर"}, {"title": "उत्तर"}))


def test_an_identity_word_of_two_characters_is_one() -> None:
    # "姓名" (a name) was dropped as too short to match: the message's card number had two free fields.
    message = "报名费请在线支付，填写银行卡正面那串16位数字。"
    assert blocked(two_fields(message, {"title": "姓名"}, {"title": "卡面数字"}))
    assert not blocked(two_fields("申请信用卡", {"title": "开户行"}, {"title": "所在城市"}))


# -- after blind set 46 ---------------------------------------------------------------------------------

def test_a_short_term_listed_in_capitals_of_another_script_counts_in_capitals() -> None:
    # Kyrgyz "ЖИН" (a personal ID number) is Mongolian "Жин" (weight); capitals spelt apart still count.
    assert not blocked(field("Жин (кг)", message="Ачаа илгээх."))
    assert blocked(field("ЖИН", message="Катталуу."))
    assert blocked(field("Е.М.Б.Г", message="Отворање сметка."))


@pytest.mark.parametrize("title", ["Geheimrezept (freiwillig)", "Geheimzutat"])
def test_an_identifier_that_starts_a_one_word_title_reads_as_the_title(title: str) -> None:
    assert not blocked(field(title, name="geheim", message="Kochwettbewerb der Stadt."))
    assert blocked(field("Geheimzahl", name="geheim", message="Karte sperren."))


def test_swedish_losen_is_the_password_only_on_a_sign_in_form() -> None:
    # German "lösen" (to redeem) folds to Swedish "lösen" (a password word): only a sign-in form makes it one.
    redeem = two_fields("Sie haben einen Gutschein bekommen? Lösen Sie ihn hier ein.", {"title": "Gutscheincode"},
                        {"title": "Name"})
    assert not blocked(redeem)
    assert blocked(two_fields("Logga in på kundportalen.", {"title": "Användarnamn"}, {"title": "Lösen"}))


def test_a_slogan_proposed_under_the_password_word_is_a_motto() -> None:
    assert not blocked(two_fields("Mi legyen a nyári gyűjtés jelszava?", {"title": "Jelszó-javaslat"}, {"title": "Név"}))


def test_type_to_unlock_about_another_kind_of_code_describes_no_password() -> None:
    # Estonian: "found the hint code on the treasure map? Enter it to open the next task".
    message = "Leidsite aardekaardilt vihjekoodi? Sisestage see, et avada järgmine ülesanne."
    assert not blocked(two_fields(message, {"title": "Kood"}, {"title": "Meeskond"}))


# -- after blind set 47 ---------------------------------------------------------------------------------

def test_a_cyrillic_schwa_in_a_latin_word_is_the_latin_schwa() -> None:
    assert blocked(two_fields("Teatr portalına daxil olun.", {"title": "İstifadəçi adı"}, {"title": "Şifrә"}))


def test_a_booking_code_in_spanish_or_catalan_is_no_backup_code() -> None:
    message = "Para cambiar la fecha de la visita, escribe el código de reserva que te enviamos."
    assert not blocked(two_fields(message, {"title": "Código de reserva"}, {"title": "Nueva fecha", "format": "date"}))


def test_a_vietnamese_answer_label_is_generic() -> None:
    # Vietnamese syllables are shorter than the words a label may repeat from the message: only the generic
    # words tell "Câu trả lời" (the answer) from a question shown as a default.
    message = "Nhà sách Phương Nam – tài khoản hội viên. Để đăng nhập lại, hãy trả lời câu hỏi bảo mật của bạn."
    params = {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
        "sdt": {"type": "string", "title": "Số điện thoại"},
        "q": {"type": "string", "title": "Câu hỏi", "default": "Bạn lớn lên ở thành phố nào?"},
        "a": {"type": "string", "title": "Câu trả lời"}}}}
    assert blocked(params)
