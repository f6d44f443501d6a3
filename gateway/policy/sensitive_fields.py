"""Stage 2 of the policy engine: does a form-mode elicitation ask for a secret?

The deciding question is whether the answer to a field *is* a secret. A field
asks for one when

- its own texts (property name, title, description) name a secret (password,
  PIN, one-time code, API key, token, private key, recovery code, seed phrase,
  card number, CVV, national id, vault key, in every language of the lexicon)
  or describe one ("the code we just texted you"), and no governor turns the
  mention into a question *about* the secret (its name, a count, a choice, a
  confirmation, a description);
- it is a string marked `format: password` or `writeOnly: true`;
- its default, examples or pattern are shaped like a real credential;
- the top-level message asks for a secret and points at the field (the form
  has one field that could take it, or the field is a generic "value");
- a secret noun is split across two neighbouring texts ("pass" + "word").

Only a field that can carry free input can receive a secret: booleans, enums,
`const`/`oneOf` choices and constrained formats (email, date, uri) never do;
numbers only carry numeric secrets (a PIN, a card number), never a password.
See docs/sensitive-fields.md.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from typing import Any, Final, NamedTuple

import ahocorasick_rs

from gateway.policy.secret_lexicon import (
    DESCRIBED,
    FAMILY_CATEGORY,
    INVISIBLE,
    NOTHING,
    NUMERIC_CATEGORIES,
    UNSPACED,
    Lexicon,
    TextScan,
    load_builtin_lexicon,
    squash,
    words_of,
)
from gateway.policy.secret_values import fragment_kind, pattern_asks_for_secret, text_shows_secret, value_secret_kind
from gateway.policy.text_normalization import decode_escapes, has_encoded_run, native_capitals, normalize_text

__all__ = ["CATEGORIES", "SensitiveFieldDetector", "SensitiveFinding"]

CATEGORIES: Final[tuple[str, ...]] = (
    *sorted(set(FAMILY_CATEGORY.values())), DESCRIBED, "secret_value", "custom",
)


@dataclass(frozen=True, slots=True)
class SensitiveFinding:
    """One secret ask: its category and where it was seen (a path, never a value)."""

    category: str
    location: str


_FREE, _NUMBER, _URI, _OTHER = "string", "number", "uri", "other"
# A number capped below 100,000 ("Valid for (days)", max 365) holds no ID or card number, whatever its
# identifier abbreviates (`dni`: days, not Spain's DNI); a PIN, a code or a CVV still fits.
_SMALL_NUMBER = "small number"
_LONG_NUMBER_CATEGORIES: Final = frozenset({"national_id", "payment_card"})
_TYPED: Final = (_FREE, _URI)  # fields the user types into: their markers and values count
_URI_FORMATS: Final = frozenset({"uri", "iri", "uri-reference"})
# What a URI can carry besides a place: a password or token in its userinfo or query.
_URI_CATEGORIES: Final = frozenset({"password", "api_key", "token", "secret"})
_CONSTRAINED_FORMATS: Final = frozenset({"email", "idn-email", "uri", "iri", "uri-reference", "date", "date-time",
                                         "time", "duration", "hostname", "idn-hostname", "ipv4", "ipv6", "uuid"})
_QUIET_CACHE: Final = 4096
_PROSE_SPACES: Final = 4
_DIGIT: Final = re.compile(r"\d")
_QUESTION_ENDS: Final = ("?", "？", "؟", ";")  # (";" is the Greek question mark)
_SENTENCE_ENDS: Final = (".", "!", "?", "。", "！", "？", "؟", "।")
_QUOTE_OPEN: Final = re.compile("[\"'«»„“”‘’「」『』《》〈〉]")
_QUOTED: Final = re.compile("[\"“”„«»‘’'「『《〈]([^\"“”„«»‘’'「」『』《》〈〉\n]{1,60})[\"“”«»‘’'」』》〉]")
_REMARK: Final = re.compile(r"[(（][^()（）]*[)）]")
_SENTENCE: Final = re.compile(r"[^.!?。！？]*(?:[.!?。！？]+\s*|$)")
# Sentences as any script ends them (danda, Urdu and Amharic full stops, Arabic question mark, a new line).
_MESSAGE_SENTENCE: Final = re.compile("[^.!?。！？।۔؟።\n]*(?:[.!?。！？।۔؟።\n]+\\s*|$)")
_PLACEHOLDER: Final = re.compile(r"\s*[<\[{(«‹]\s*([^<>\[\]{}]{3,120}?)\s*[>\]})»›]\s*")
# A numbered list of words to fill in ("word1 word2 … word12", "palavra1 palavra2 …").
_WORD_TEMPLATE: Final = re.compile(r"(?<![^\W\d_])([^\W\d_]{3,12})\s?0?1\b(?:[\s,;…]+\1\s?\d{1,2}\b){2,}")
_VALUE_KEYS: Final = frozenset({"default", "examples", "example", "placeholder", "pattern"})
_MARKER_KEYS: Final = _VALUE_KEYS | {"format", "writeOnly"}
_CHOICE_KEYS: Final = frozenset({"enum", "oneOf", "anyOf", "const", "enumNames"})


_DECODED_KEYS: Final = ("title", "description", "default", "examples", "example", "placeholder")
# A link's host and path name a page, not what the user is asked for ("/display/FIN/Cost+Centers"):
# only its userinfo ("postgres://app:<password>@db") is read as text.
_URL: Final = re.compile(r"(?:\b[a-z][a-z0-9+.\-]*://|\bwww\.)([^\s<>()\[\]\"'@/]*@)?[^\s<>()\[\]\"']*", re.IGNORECASE)


def _without_urls(text: str) -> str:
    if "://" not in text and "www." not in text.lower():
        return text
    return _URL.sub(lambda m: " " + (m.group(1) or "").replace(":", " ").rstrip("@") + " ", text)


# A form that says its words are in ROT13 ("labels in ROT13 (A<->N)") tells its reader how to read them.
_ROT13_NAMED: Final = re.compile(r"(?<![^\W\d_])rot[ _-]?13(?!\d)", re.IGNORECASE)
_ROT13: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")
_ROT13_KEYS: Final = ("title", "description", "default", "enumNames", "oneOf", "anyOf", "items")


def _rot13(value: Any) -> Any:
    """The texts of a form (message, titles, descriptions, defaults, option titles) with ROT13 undone;
    property names, types, formats and option values as they are."""
    if isinstance(value, str):
        return value.translate(_ROT13)
    if isinstance(value, list):
        return [_rot13(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _rot13(v) if k in _ROT13_KEYS else v for k, v in value.items()}
    return value


def _rot13_params(params: Mapping[str, Any]) -> dict[str, Any]:
    out = {**params, "message": _rot13(_text(params.get("message")))}
    schema = params.get("requestedSchema")
    if isinstance(schema, Mapping) and isinstance(properties := schema.get("properties"), Mapping):
        out["requestedSchema"] = {**schema, "properties": {k: _rot13(v) for k, v in properties.items()}}
    return out


def _decoded(value: object) -> object:
    if isinstance(value, str):
        return decode_escapes(value)
    if isinstance(value, list):
        return [decode_escapes(v) if isinstance(v, str) else v for v in value]
    return value


def _decoded_schema(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with its texts and values decoded (`decode_escapes`); the same object when nothing changes."""
    changed: dict[str, object] | None = None
    for key in _DECODED_KEYS:
        value = schema.get(key)
        if value is None:
            continue
        decoded = _decoded(value)
        if decoded != value:
            if changed is None:
                changed = {}
            changed[key] = decoded
    return schema if changed is None else {**schema, **changed}


def _field_kind(schema: Mapping[str, Any]) -> str:
    if not _CHOICE_KEYS.isdisjoint(schema):
        return _OTHER  # picking one of fixed options never transmits a user's secret
    declared = schema.get("type")
    if declared in ("number", "integer"):
        top = schema.get("maximum")
        if not isinstance(top, int | float) or isinstance(top, bool):
            return _NUMBER
        if top < 999:
            return _OTHER  # no secret fits under 999 (a CVV needs 999): an average, a count, a score
        return _SMALL_NUMBER if top < 100_000 else _NUMBER
    if declared == "string" or declared is None:
        # An untyped field is read as text: fail closed.
        fmt = schema.get("format")
        if fmt in _URI_FORMATS:
            return _URI
        return _OTHER if fmt in _CONSTRAINED_FORMATS else _FREE
    if declared == "array":
        items = schema.get("items")
        if isinstance(items, Mapping):
            return _field_kind(items)
        return _FREE
    return _OTHER


def _receives(category: str, kind: str) -> bool:
    return kind == _FREE or (kind == _NUMBER and category in NUMERIC_CATEGORIES) or (
        kind == _SMALL_NUMBER and category in NUMERIC_CATEGORIES and category not in _LONG_NUMBER_CATEGORIES) or (
        kind == _URI and category in _URI_CATEGORIES)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _load_common() -> Mapping[str, Any]:
    data: Mapping[str, Any] = json.loads(
        resources.files("gateway.policy").joinpath("data/lexicon/_common.json").read_text(encoding="utf-8"))
    return data


def _phrase_matcher(phrases: Sequence[str]) -> ahocorasick_rs.AhoCorasick:
    keys = {squash(normalize_text(p)) for p in phrases}
    # (Two characters are a whole word outside Latin letters: "姓名", a name; "이름", "电话".)
    return ahocorasick_rs.AhoCorasick(sorted(k for k in keys if len(k) >= 3 or (len(k) == 2 and not k.isascii()))
                                      or ["\x00"])


class _Words:
    """Phrases found as words in a folded text, in one Aho-Corasick pass (a regex alternation of a thousand
    phrases took hundreds of µs a text). Words of Latin-like scripts must stand as whole words, words of
    other spaced scripts must start one (an ending may follow: "डाकघर"), words of unspaced scripts stand
    anywhere; between a phrase's words any run of non-letters counts as the one gap."""

    def __init__(self, phrases: Sequence[str]) -> None:
        kinds: dict[str, tuple[bool, bool]] = {}
        for phrase in phrases:
            folded = normalize_text(phrase).strip()
            key = _gapped(folded).strip()
            if key:
                kinds[key] = (folded.isascii(), UNSPACED.search(folded) is not None)
        self._keys = list(kinds)
        self._kinds = list(kinds.values())
        self._matcher = ahocorasick_rs.AhoCorasick(self._keys or ["\x00"], matchkind=ahocorasick_rs.MatchKind.Standard)

    def search(self, folded: str) -> bool:
        if not self._keys:
            return False
        text = _gapped(folded)
        for index, start, end in self._matcher.find_matches_as_indexes(text, overlapping=True):
            latin, unspaced = self._kinds[index]
            if unspaced:
                return True
            before = text[start - 1] if start else " "
            if before.isalnum() or (not latin and _MARK.match(before)):
                continue
            if latin and end < len(text) and text[end].isalnum():
                continue
            return True
        return False


def _gapped(text: str) -> str:
    """`text` with every run of non-letters as one space. Indic vowel signs and viramas are no word characters
    to `re` but are part of words: "ਡਾਕ" is one word, not "ਡ" + "ਕ"."""
    return _NON_LETTERS.sub(" ", text)


_MARKS: Final = "\u0900-\u0dff"  # the Indic blocks: letters and the signs inside words
_MARK: Final = re.compile(f"[{_MARKS}]")
_NON_LETTERS: Final = re.compile(rf"(?:(?![{_MARKS}])[\W_])+")


# The Indian postal PIN code: six digits, the first one never 0, often with the region's leading
# digits written out (`^78\d{4}$` for Assam, `^11[0-9]{4}$` for Delhi).
_POSTAL_PATTERN: Final = re.compile(
    r"\^?(?:(?:\[1-9\]|\\d)(?:\[0-9\]|\\d)\{5\}"
    r"|[1-9](?:\[0-9\]|\\d)\{5\}|[1-9]\d(?:\[0-9\]|\\d)\{4\}|[1-9]\d\d(?:\[0-9\]|\\d)\{3\})\$?")
_FOUR_DIGITS: Final = re.compile(r"\^?(?:\\d|\[0-9\])\{4\}\$?")
_SIX_DIGITS: Final = re.compile(r"\^?(?:\\d|\[0-9\])\{6\}\$?")
_POSTAL: Final = _Words(_load_common().get("pin_postal_context", ()))
# Fields beside a six-digit "PIN code" that make it postal ("House number", "Village"): read in field titles only
# (a bank's name may hold a place word, "Gramya Bank", a rural bank).
_PLACE_FIELDS: Final = _Words(_load_common().get("pin_place_fields", ()))
# "PIN" as written in the scripts of the countries with postal PIN codes and map pins (a loanword everywhere).
_PIN_WORD: Final = _Words(("pin", "pincode", "पिन", "পিন", "પિન", "ਪਿੰਨ", "ਪਿਨ", "பின்", "పిన్", "ಪಿನ್", "പിൻ",
                                  "ପିନ୍", "පින්", "پن", "پِن", "بن", "пин", "πιν", "ピン", "핀"))
# "Heslo", "jelszó", "hasło", "Parole" also mean a motto or slogan: a field that says so asks for one.
_MOTTO: Final = _Words(_load_common().get("password_motto_context", ()))
# (In the message, only its longer words: short ones meet ordinary words of other languages there.)
_MOTTO_SAID: Final = _Words([w for w in _load_common().get("password_motto_context", ())
                             if len(normalize_text(w).replace(" ", "")) >= 6])
_MOTTO_CATEGORIES: Final = frozenset({"password"})  # (not "passphrase": "kulcs jelmondata" is one)
# A building's entrance code given for a courier ("Šifra ulaza (za kurira)", "Apartman kapı şifresi (kurye
# için)"): a door word in the field's own texts and a courier word in the form. Never a one-time code.
_DOOR: Final = _Words(_load_common().get("door_context", ()))
_COURIER: Final = _Words(_load_common().get("courier_context", ()))
_DOOR_CATEGORIES: Final = frozenset({"password", "pin", "otp", "secret"})
# What a security question's own title may speak of ("What is your mother's maiden name?").
_KNOWLEDGE: Final = frozenset({"secret", "security_answer"})
# Words that are the password only on a sign-in form (Turkish and Romanian "Parola", Spanish "Clave",
# "Pass"): elsewhere they mean a word, a key, a pass. A sign-in form names signing in or asks who you are.
_SIGN_IN_ONLY: Final = frozenset(normalize_text(w) for w in _load_common().get("password_in_sign_in", ()))
_SIGN_IN: Final = _Words(_load_common().get("sign_in_context", ()))
# Fields whose answer is who or where the user is, never a secret: not receivers for a message's ask.
_IDENTITY: Final = _phrase_matcher(_load_common().get("identity_fields", ()))
# The words for a key, in the labels of a box a key goes into ("Clau", "Klíč").
_KEY_NOUNS: Final = ("clau", "clave", "chave", "chiave", "clé", "schlüssel", "sleutel", "nyckel", "nøkkel", "nøgle",
                     "avain", "klucz", "klíč", "kulcs", "cheie", "ключ", "anahtar", "κλειδί", "مفتاح", "מפתח", "kunci",
                     "khóa", "キー", "鍵", "密钥")
# Folded as labels are (words_of): written as people write them, "Väärtus" and "Τιμή" are read as the
# folded words they become ("vaartus"; the Greek by its Latin skeleton).
_GENERIC_FIELD_WORDS: Final = frozenset(w for entry in (
    "value", "code", "answer", "input", "text", "response", "field", "entry", "data", "it", "string", "digits",
    "here", "reply", "secret", "key", "val", "v", "x", "q", "a", "s", "field1", "field0", "field2", "input1",
    "文字列", "字符串", "字串", "문자열", "строка", "cadena", "chaîne", "zeichenkette",
    "answer1", "content", "credential", "credentials", "auth", "verification", "confirm", "confirmation",
    "current", "new", "old", "again", "repeat", "retype", "re", "enter", "type", "your", "you", "the", "one", "once",
    # ("Your" in more languages: "Uw antwoord", "Ihre Antwort", "Votre réponse" say no more than "Answer".)
    "uw", "jouw", "je", "ihr", "ihre", "dein", "deine", "votre", "ta", "ton", "tu", "su", "seu", "sua", "tua",
    "tuo", "vostra", "vostro", "twoja", "twój", "ваш", "ваша", "ваше", "твой", "твоя", "твій", "din", "ditt", "dit",
    "teie", "sinu", "sizin", "senin", "anda", "kamu", "aapka", "aapki", "آپ", "کا", "کی",
    "f", "wert", "valor", "valeur", "valore", "waarde", "wartość", "значение", "值", "値", "값",
    "codigo", "código", "kod", "kód", "код", "码", "コード", "코드",
    # ("Answer" in more languages: the box a message's security question points at.)
    "respuesta", "réponse", "antwort", "risposta", "resposta", "antwoord", "odpowiedź", "ответ", "відповідь",
    "câu trả lời", "trả lời",
    "cevap", "jawaban", "jawab", "उत्तर", "জবাব", "উত্তর", "பதில்", "సమాధానం", "ಉತ್ತರ", "ഉത്തരം", "ਜਵਾਬ",
    "જવાબ", "ଉତ୍ତର", "جواب", "پاسخ", "תשובה", "απάντηση", "回答", "答案", "답변", "คำตอบ", "svar", "vastaus",
    "válasz", "odpověď", "odgovor", "atsakymas", "atbilde", "vastus", "răspuns", "отговор", "одговор",
    # ("Code" in more languages: the box a message's "we sent you a code" points at.)
    "kods", "kodas", "kood", "koodi", "kode", "koda", "kodi", "kodo", "kóði", "kodu", "codice", "codi", "côd",
    "cód", "κωδικός", "كود", "קוד", "कोड", "কোড", "ኮድ", "کوڈ", "کد", "mã", "ລະຫັດ", "кодът", "кодот",
    "cod", "codul", "ਕੋਡ", "ಕೋಡ್", "కోడ్", "കോഡ്", "કોડ", "କୋଡ୍", "លេខកូដ", "کوډ", "ikhodi", "khodi",
    "érték", "hodnota", "arvo", "vrijednost", "vrednost", "nilai", "værdi", "verdi", "värde", "valoare", "стойност",
    "vērtība", "reikšmė", "väärtus", "τιμή", "değer", "قيمة", "ערך", "مقدار", "मान", "giá trị", "ค่า",
    "inani", "ixabiso", "iye", "thamani", "ƙima", "ዋጋ", "vlera", "вредност", "значення", "qiymət", "gildi",
    "мән", "маани", "dəyər", "qiymat", "утга",
    # "Information" says as little as "Value".
    "information", "info", "informação", "informacao", "información", "informacion", "informations",
    "informazioni", "informatie", "informacja", "informace", "информация", "信息", "情報", "정보", "мэдээлэл",
    # So do "paste", the words for a key, for words and for a file's contents: the box the message's key,
    # recovery words or key file go into ("Paste here", "Clau", "Słowa", "Inhoud van het bestand").
    "paste", *_KEY_NOUNS, "words", "słowa", "palabras", "mots", "wörter", "woorden", "sanat", "слова", "kelimeler",
    # and one of the words, asked by its place ("Word #3", "Wort 7" under "the words of your recovery phrase").
    "word", "wort", "mot", "palabra", "palavra", "parola", "woord", "słowo", "slovo", "слово", "kelime", "sana",
    "sõnad", "sõna", "vārdi", "žodžiai", "szavak", "cuvinte", "думи", "λέξεις", "מילים", "كلمات", "शब्द", "単語",
    "단어", "单词", "單詞", "kata", "maneno", "sözlər", "ord", "orð", "riječi", "reči", "besede", "vārds", "žodis",
    "szó", "cuvânt", "дума", "λέξη", "מילה", "كلمة", "faclan", "facal", "คำ", "คำที่", "کلمې", "کلمات", "واژه‌ها",
    "inhoud", "contents", "file", "bestand", "datei", "inhalt", "fichier", "contenu", "contenido", "archivo",
    "conteúdo", "arquivo", "van", "het", "des", "der", "de", "nyūryoku", "入力", "입력", "输入", "輸入",
    # So do the words for the digits themselves ("अंक" over "the 16 digits printed on the card").
    "ziffern", "dígitos", "digitos", "chiffres", "cifre", "cijfers", "cyfry", "číslice", "цифры", "अंक",
    "अंकों", "数字", "숫자", "ارقام", "أرقام", "ספרות", "rakamlar", "rəqəmlər", "angka", "chữ số", "ตัวเลข",
) for w in words_of(entry))


# Every word of a notes field's label ("Comments", "Anmerkung", "备注"): the user's own remarks, never the
# receiver of a secret the message names.
_NOTE_WORDS: Final = frozenset(w for phrase in _load_common().get("note_fields", ()) for w in words_of(phrase))
# Prepositions and articles a label holds beside its noun ("Code from the text"): they name nothing.
_FUNCTION_WORDS: Final = frozenset(words_of(
    "from with for into onto about below above von aus mit für dem der die das pour avec depuis dans des les "
    "desde para con del los las com dos das per dal della dei van voor met het från med för och dla oraz bez "
    "из от для при под над"))
_NOTE_FILLER: Final = frozenset(words_of("optional facultatif opcional facoltativo opcjonalnie"))


# The secrets a choice of fragments can spell: digits of a PIN, code or card; words of a recovery phrase.
_FRAGMENT_OF: Final = {"pin": frozenset({"pin", "otp", "password", "payment_card", "cvv", DESCRIBED}),
                       "seed_phrase": frozenset({"seed_phrase", "recovery_code", "passphrase", "secret"})}


_KEY_WORDS: Final = frozenset(w for entry in (
    "key", *_KEY_NOUNS, "kľúč", "密鑰", "키", "ključ", "raktas", "atslēga", "võti", "lykill", "kulla", "açar", "kalit",
    "llave", "your", "the") for w in words_of(entry))
_CODE_WORDS: Final = frozenset(w for entry in ("code", "codes", "código", "kód", "kodu", "код", "pin", "otp", "tan",
                                                "码", "コード", "코드", "رمز") for w in words_of(entry))


# Separators between single letters ("c l a v e", "P.A.S.S"): removed to read the word they spell.
_LETTER_GAP: Final = r"[\s.\-_·*/]+"
_SPACED_OUT: Final = re.compile(rf"(?<=\b\w){_LETTER_GAP}(?=\w\b)")
_SPACED_WORD: Final = re.compile(rf"\w(?:{_LETTER_GAP}\w)+")


def _disguised(label: str) -> bool:
    """A label written to get past a word list: letters spaced out, case mixed inside the word, invisible
    characters, or look-alike letters of another script."""
    word = label.strip(" :*")
    letters = [c for c in word if c.isalpha()]
    mixed = any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters) and not word.istitle()
    spaced = len(letters) >= 4 and _SPACED_WORD.fullmatch(word) is not None
    foreign = not word.isascii() and normalize_text(word).isascii()
    return mixed or spaced or foreign or INVISIBLE.search(word) is not None


# Cyrillic and Greek letters as identifiers romanize them, for comparing an identifier with its title.
_CYRILLIC_GREEK: Final = re.compile("[\u0370-\u03ff\u0400-\u04ff]")
_ROMANIZED: Final = str.maketrans({
    **dict(zip("абвгдезийклмнопрстуфхцыэіїєґўјљњћџђ", "abvgdezijklmnoprstufhcyeiiegujlnccd", strict=True)),
    "ж": "zh", "ч": "ch", "ш": "sh", "щ": "sch", "ю": "yu", "я": "ya", "ё": "yo", "ъ": "", "ь": "",
    **dict(zip("αβγδεζηθικλμνξοπρστυφχψωάέήίόύώς", "avgdezitiklmnxoprstyfhpoaeiioyos", strict=True))})


def _names_title(name: str, title: str) -> bool:
    """Whether an identifier abbreviates the title: its first word, the initials of its words (`kp`, "Kode
    pos"), the start of one of its words, two letters at most, or letters taken in order from it, starting
    with its first (`pst`, "Poštna številka")."""
    key, words = words_of(name), words_of(title)
    if not key or not words:
        return False
    if not title.isascii() and key[0].isascii() and _CYRILLIC_GREEK.search(title):
        words = words_of(title.lower().translate(_ROMANIZED))  # `nik` over "Ник", `kodikos` over "Κωδικός"
    if key[-1:] == words[:1] or (len(key) == 1 and len(words) >= 2 and key[0] == "".join(w[0] for w in words)):
        return True
    if len(key) == 1 and len(key[0]) >= 5 and len(words[0]) >= 5 and _common_prefix(key[0], words[0]) >= max(
            5, 2 * min(len(key[0]), len(words[0])) // 3):
        return True  # the title's first word in another form (`skrivnost`, "Skrivna sestavina": a secret ingredient)
    if len(key) == 1 and len(key[0]) >= 2 and key[0].isalpha() and any(
            len(w) >= 2 * len(key[0]) and w.startswith(key[0]) for w in words):
        return True  # the start of a longer title word (`op`, "Número de operación")
    if len(key) != 1 or not key[0].isalpha() or len(key[0]) > 5 or key[0][0] != words[0][0]:
        return False
    letters = iter("".join(words))
    return len(key[0]) <= 2 or all(c in letters for c in key[0])


def _prefix_of_compound(name: str, title: str) -> bool:
    """Whether the identifier is the first part of a title of one word (a remark aside): `geheim` over
    "Geheimzutat (freiwillig)", a compound whose head is something else."""
    key, words = words_of(name), words_of(_REMARK.sub(" ", title))
    return len(key) == 1 and len(words) == 1 and len(words[0]) > len(key[0]) >= 4 and words[0].startswith(key[0])


def _common_prefix(one: str, other: str) -> int:
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


# A cell of a grid card named in a title: a column letter and a row number ("Posição A3", "E4", "A-3"), or a
# Korean security card's numbered cell ("12번").
_GRID_CELL: Final = re.compile(r"(?<![\w])[A-J][-‐ ]?[1-9][0-9]?(?![\w])|[0-9]{1,2}\s*번")
# A description that gives an example of the answer ("e.g. prod-secrets-vault", "जैसे ...", "例：...").
_EXAMPLE: Final = re.compile(r"\s*(?:e\.\s?g\.|eg\b|for example|such as|z\.\s?b\.|zum beispiel|p\.\s?ej\.|ej\."
                             r"|por ejemplo|par ex|exemple|bijv|bv\.|np\.|например|напр\.|例如|例[：:]|예[:：]|예시"
                             r"|जैसे|उदाहरण)", re.IGNORECASE)
# A pattern of one to four digits: a box that takes part of a number ("^[0-9]{2}$", "^\d$").
_FEW_DIGITS: Final = re.compile(r"\^?(?:\\d|\[0-9\])(?:\{[1-4]\})?\$?")


def _postal_pattern(field: _Field) -> bool:
    """Whether the field's `pattern` is an Indian postal PIN code's six digits ("^[1-9][0-9]{5}$")."""
    pattern = field.schema.get("pattern")
    return isinstance(pattern, str) and _POSTAL_PATTERN.fullmatch(pattern) is not None


def _digit_parts(fields: list[_Field], category: str) -> bool:
    """Whether the fields are boxes for parts of one number (a code typed digit by digit, two digits from
    each of two rows of a bank's grid card, "Position A3"): then a number the message asks for goes into
    all of them."""
    if all(isinstance(n := f.schema.get("maxLength"), int) and 0 < n <= 2 for f in fields):
        return True  # boxes of a character or two: "characters 2, 5 and 7 of your memorable word"
    return category in NUMERIC_CATEGORIES and all(
        (isinstance(p := f.schema.get("pattern"), str) and _FEW_DIGITS.fullmatch(p) is not None)
        or _GRID_CELL.search(f.title) is not None for f in fields)


def _place(*texts: str) -> bool:
    """Whether a text names a place field's subject (a house number, a village, a street)."""
    return any(_PLACE_FIELDS.search(normalize_text(text)) for text in texts if text)


def _six_digits(schema: Mapping[str, Any], pattern: str) -> bool:
    """Whether a field takes exactly six characters: a pattern of six digits, or a length of six."""
    return _SIX_DIGITS.fullmatch(pattern) is not None or schema.get("minLength") == schema.get("maxLength") == 6


def _api_key_box(field: _Field) -> bool:
    """A field titled only "Key" whose description points at an API ("Find it under Settings → API"): the API
    key, named by where it is kept."""
    title = words_of(field.title)
    return 0 < len(title) <= 2 and all(w in _KEY_WORDS for w in title) and "api" in words_of(field.description)


def _says_motto(fields: list[_Field], message: str) -> bool:
    """Whether a field's own texts, or the message in its longer words, give the password word its other
    sense: a slogan, a motto, a dictionary's headword ("A dictionary: propose a new entry" over "Heslo")."""
    return any(_MOTTO.search(normalize_text(t)) for f in fields for t in (f.name, f.title, f.description) if t) \
        or _MOTTO_SAID.search(normalize_text(message))


def _for_courier(field: _Field, message: str) -> bool:
    """Whether the field asks for a building's door or entrance code for a courier."""
    own = normalize_text(" ".join((field.name, field.title, field.description)))
    return _DOOR.search(own) and _COURIER.search(own + " " + normalize_text(message))


def _pin_word(text: str) -> bool:
    """Whether `text` has the word "PIN" itself, as written or with separators gone ("प ि न कोड")."""
    folded = normalize_text(text)
    return _PIN_WORD.search(folded) or _PIN_WORD.search(squash(folded))


def _indian_pin_code(title: str) -> bool:
    """A title that is only "PIN code" written in an Indian script ("पिन कोड", "ಪಿನ್ ಕೋಡ್", "ਪਿੰਨ ਕੋਡ"): India's
    name for its postal code."""
    words = words_of(title)
    return len(words) == 2 and _INDIAN_SCRIPT.search(title) is not None and bool(_pin_word(words[0])) \
        and _CODE_WORD.search(words[1])


_INDIAN_SCRIPT: Final = re.compile("[\u0900-\u0d7f]")
_CODE_WORD: Final = _Words(("कोड", "কোড", "ক'ড", "ਕੋਡ", "કોડ", "କୋଡ", "కోడ్", "ಕೋಡ್", "கோட்", "കോഡ്", "code"))
# Words of a form about a bank card, beside the description concepts for a cash machine or card terminal.
_BANKING: Final = _Words(("bank", "बैंक", "ব্যাংক", "ব্যাঙ্ক", "ਬੈਂਕ", "બેંક", "ବ୍ୟାଙ୍କ", "బ్యాంక్", "ಬ್ಯಾಂಕ್", "வங்கி",
                          "ബാങ്ക്", "upi", "यूपीआई", "debit", "डेबिट", "credit", "क्रेडिट", "transaction", "लेनदेन"))


def _postal(*texts: str) -> bool:
    """Whether the PIN the texts name is a postal PIN code or a pin on a map: the word "PIN" itself (a bank's
    "secret number" is never postal) beside a place word (address, delivery, map, area...)."""
    return any(_pin_word(text) for text in texts if text) and any(
        _POSTAL.search(normalize_text(text)) for text in texts if text)


def _as_stored(text: str) -> str:
    """`text` in its stored order, override controls dropped (how an assistant reading it gets it)."""
    return text.replace("\u202d", "").replace("\u202e", "")


def _union(one: TextScan, other: TextScan) -> TextScan:
    if other is NOTHING:
        return one
    if one is NOTHING:
        return other
    return TextScan(one.asked | other.asked, (one.about | other.about) - (one.asked | other.asked),
                    one.governed or other.governed, one.sense | other.sense)


def _options(schema: Mapping[str, Any]) -> str | None:
    """The kind of secret fragment a choice's options are (`fragment_kind`), if any."""
    options = schema.get("enum")
    if not isinstance(options, list):
        one_of = schema.get("oneOf")
        if not isinstance(one_of, list):
            items = schema.get("items")
            return _options(items) if isinstance(items, Mapping) and items is not schema else None
        options = [o.get("const") for o in one_of if isinstance(o, Mapping)]
    return fragment_kind(options) if len(options) >= 4 else None


def _option_texts(schema: Mapping[str, Any]) -> str:
    """What a choice shows that may ask something: its options' values and display names of several words
    ("Mother's maiden name")."""
    shown: list[object] = []
    for key in ("enum", "enumNames"):
        if isinstance(values := schema.get(key), list):
            shown += values
    if isinstance(one_of := schema.get("oneOf"), list):
        shown += [o.get(k) for o in one_of if isinstance(o, Mapping) for k in ("const", "title")]
    # (Phrases, and any text of scripts written without spaces: a single Latin word, "indoor", asks nothing.)
    return "\n".join(v for v in shown if isinstance(v, str) and (" " in v.strip() or not v.isascii()))


# The message's last word or two when it ends in letters (marks count: vowel signs and viramas are not
# letters to `str.isalpha`, "டோக்"); in a script without spaces, its last run of letters ("...和身份").
_CUT_TAIL: Final = re.compile(rf"(?:(?:[^\W\d_]|[{_MARKS}])+[ \t]+)?(?:[^\W\d_]|[{_MARKS}])+$")


def _seams(message: str, labels: list[str]) -> str:
    """For the form-level pre-check: a message cut mid-word glued to every label after the first (the first
    is beside it in the joined texts already), so that "... hes" + "lo" shows there too; with the word before
    it, for a noun of two words ("... அணுகல் டோக்" + "கன்": access token)."""
    if len(labels) < 3 or not message or message.rstrip().endswith(_SENTENCE_ENDS):
        return ""
    tail = _CUT_TAIL.search(message.rstrip())
    if tail is None:
        return ""  # a word cut in two ends in letters ("hes"); "#123" or "2." cut nothing
    return "".join("\n" + tail.group(0) + label for label in labels[2:])


def _setting(schema: Mapping[str, Any]) -> bool:
    default = schema.get("default")
    return isinstance(default, int | float) and not isinstance(default, bool)


class _Field(NamedTuple):
    name: str  # decoded (`decode_escapes`): what the detector reads
    schema: Mapping[str, Any]
    kind: str
    key: str  # the property name as sent: what a finding's location names
    offered: str  # a choice's option texts that may ask something (`_option_texts`); "" for other fields

    @property
    def path(self) -> str:
        return f"requestedSchema.properties.{self.key}"

    @property
    def title(self) -> str:
        return _text(self.schema.get("title"))

    @property
    def description(self) -> str:
        return _text(self.schema.get("description"))


class SensitiveFieldDetector:
    """Finds secret asks in `elicitation/create` form params.

    `extra_terms` are operator words treated as secret nouns (category
    "custom"); `allowed_fields` are property names never flagged.
    """

    def __init__(self, extra_terms: Sequence[str] = (), allowed_fields: Collection[str] = ()) -> None:
        custom = tuple(t for t in extra_terms if isinstance(t, str) and t.strip())
        # The bundled lexicon is built once per process and shared; operator terms get a small one of their own.
        self._lexicon: Lexicon = load_builtin_lexicon()
        self._custom: Lexicon | None = Lexicon((), custom) if custom else None
        self._allowed = frozenset(allowed_fields)
        self._quiet: dict[str, bool] = {}  # a form's joined texts -> whether nothing in them names a secret

    def find(self, params: Mapping[str, Any]) -> list[SensitiveFinding]:
        """Every secret ask in `params`, in document order; [] when there is none.

        Fails closed: input it cannot read is reported as an ask rather than raising.
        """
        try:
            return self._find(params)
        except (RecursionError, ValueError, TypeError, AttributeError, KeyError):  # pragma: no cover - junk
            return [SensitiveFinding("custom", "requestedSchema")]

    # -- internals ---------------------------------------------------------

    def _scan(self, text: str, prose: bool) -> TextScan:
        if not text:
            return NOTHING
        text = _without_urls(text)
        found = self._lexicon.scan(text, prose)
        if "\u202d" in text:
            # A left-to-right override shows a Hebrew or Arabic run reversed; an assistant reading the text gets it
            # as stored, in reading order. Both count. (A right-to-left override stores the run reversed on
            # purpose: only its display is a word.)
            found = _union(found, self._lexicon.scan(_as_stored(text), prose))
        if self._custom is None:
            return found
        return _union(found, self._custom.scan(text, prose))

    def _find(self, params: Mapping[str, Any], rot13: bool = False) -> list[SensitiveFinding]:
        if not (type(params) is dict or isinstance(params, Mapping)):
            return []
        message = _text(params.get("message"))
        findings: dict[SensitiveFinding, None] = {}

        def add(category: str, location: str) -> None:
            findings.setdefault(SensitiveFinding(category, location), None)

        schema = params.get("requestedSchema")
        properties = schema.get("properties") if type(schema) is dict or isinstance(schema, Mapping) else None
        if not (type(properties) is dict or isinstance(properties, Mapping)):
            properties = {}
        fields, labels, rest, misspelt = self._collect(properties, message, False)
        joined = "\n".join(labels) + "\n\n" + "\n".join(rest) + _seams(message, labels)
        if "&" in joined or "%" in joined or "\\" in joined or has_encoded_run(joined):
            # Every text is read as a user agent would render it: HTML references and percent-escapes
            # decoded, and as a reader told "this label is base64" would: backslash escapes, base64 and hex
            # runs that spell words (rarely needed: the check above is all the common path pays).
            message = decode_escapes(message)
            fields, labels, rest, misspelt = self._collect(properties, message, True)
            joined = "\n".join(labels) + "\n\n" + "\n".join(rest) + _seams(message, labels)
        if not rot13 and "13" in joined and _ROT13_NAMED.search(joined):
            # Read as written and with ROT13 undone ("inserisci la puvnir znfgre (ROT13)").
            return list(dict.fromkeys(self._find(params, True) + self._find(_rot13_params(params), True)))
        self._sign_in_asks(message, fields, add)
        quiet = self._quiet.get(joined)
        if quiet is None:
            plain = _as_stored(joined) if "\u202d" in joined else joined
            native = native_capitals(joined)  # ("KΩΔIKOΣ": Latin capitals in a Greek word)
            quiet = not self._lexicon.may_name_secret(joined) and (
                plain == joined or not self._lexicon.may_name_secret(plain)) and (
                native == joined or not self._lexicon.may_name_secret(native)) and not (
                self._custom is not None and self._custom.may_name_secret(joined)) and not (
                misspelt and any(self._lexicon.label_misspelt(label) for label in misspelt))
            if len(self._quiet) >= _QUIET_CACHE:
                self._quiet.clear()
            self._quiet[joined] = quiet
        if quiet:
            # No text of the form can name a secret (the common case): only the markers and values remain.
            shows = text_shows_secret(joined, "")
            for field in fields:
                if field.kind in _TYPED and (shows or not _MARKER_KEYS.isdisjoint(field.schema)):
                    self._marker_asks(field, add, shows)
            return list(findings)
        governed: dict[str, bool] = {}
        for field in fields:
            if field.kind != _OTHER:
                governed[field.name] = self._field_asks(field, message, add, fields)
        # A notes field takes no answer to the message, unless the message names it ("put the key in the 'Note' box").
        receivers = [f for f in fields if f.kind != _OTHER and not governed.get(f.name, False)
                     and (not self._note(f) or self._quoted(message, [f]))]
        # A title that is a security question of its own ("What was the name of your first pet?", "Name of your
        # first teacher") under a message asking for the answer to one is where that answer goes, though the
        # question names a name (read only when the message asks for such an answer).
        questions = [f for f in fields if f.kind is _FREE and governed.get(f.name, False) and f.title]
        if message and (receivers or (questions and self._lexicon.may_name_secret(message))):
            self._message_asks(message, fields, receivers, add, questions)
        if receivers and len(fields) > 1:
            self._chosen_question(fields, receivers, add)
            self._offered_asks(fields, receivers, add)
        self._split_words(message, fields, add)
        self._fragment_asks(message, fields, add)
        if not findings:
            self._joined_asks(message, receivers, add)
        return list(findings)

    def _collect(self, properties: Mapping[Any, Any], message: str, decode: bool
                 ) -> tuple[list[_Field], list[str], list[str], list[str]]:
        """One pass over the fields: their kinds, and all texts in an order that puts every pair a word can
        be split across side by side (message + first label, label + next label, title + description):
        separators vanish when the matcher squashes the joined string, so a split noun shows too."""
        allowed = self._allowed
        fields: list[_Field] = []
        labels = [message]
        rest: list[str] = []
        misspelt: list[str] = []  # short titles of several words that may misspell a secret noun as a whole
        heads = self._lexicon.phrase_heads
        for key, prop in properties.items():
            if not isinstance(key, str) or key in allowed:
                continue
            prop_schema: Mapping[str, Any] = prop if type(prop) is dict or isinstance(prop, Mapping) else {}
            name = key
            if decode:
                prop_schema = _decoded_schema(prop_schema)
                name = decode_escapes(key)
            kind = _field_kind(prop_schema)
            choice = kind is _OTHER and ("enum" in prop_schema or "oneOf" in prop_schema or "items" in prop_schema)
            offered = _option_texts(prop_schema) if choice else ""
            fields.append(_Field(name, prop_schema, kind, key, offered))
            if kind is not _OTHER:
                title, description = prop_schema.get("title"), prop_schema.get("description")
                title = title if isinstance(title, str) else ""
                labels.append(title or name)
                if " " in title and len(title) - title.count(" ") in heads.get(
                        title[:5].replace(" ", "")[:4].lower(), ()) and _DIGIT.search(title) is None:
                    misspelt.append(title)  # (a label with a digit is never one noun misspelt)
                elif "." in title:
                    misspelt.append(title)  # cut words ("Súkr. kľúč") may spell a secret noun
                if isinstance(description, str) and description:
                    rest += (title, description, name, "")
                else:
                    rest += (name, "")  # the title is among the labels already
                if isinstance(shown := prop_schema.get("default"), str) and " " in shown.strip():
                    rest += (shown, "")  # a question shown pre-filled (`_chosen_question`)
            elif choice:
                # A choice of secret fragments is read too (`_fragment_asks`), and one that offers security
                # questions (`_chosen_question`): its title, and what it offers.
                if offered or _options(prop_schema) is not None:
                    rest += (_text(prop_schema.get("title")), _text(prop_schema.get("description")), name, offered, "")
        return fields, labels, rest, misspelt

    def _sign_in_asks(self, message: str, fields: list[_Field], add: Callable[[str, str], None]) -> None:
        """A field labelled only "Parola" / "Clave" / "Pass" on a sign-in form asks for the password."""
        for field in fields:
            if field.kind is not _FREE:
                continue
            label = field.title or field.name
            bracket = "(" in label or "（" in label
            if len(label) > 24 and not bracket:
                continue  # every form pays this loop: a long label is no single word, spaced out or not
            if bracket:
                # A remark in brackets says how, not what: "Parola (kakto pri vlizane)" is the word "Parola".
                label = _REMARK.sub("", label).strip() or label
            if normalize_text(_SPACED_OUT.sub("", label)).strip(" :*") not in _SIGN_IN_ONLY:
                continue
            if _disguised(label):
                # "PaRoLa", "c l a v e", "Раrola" in Cyrillic: nobody disguises a word for a motto or a key.
                add("password", field.path + (".title" if field.title else ""))
                continue
            if len(label) > 16 or normalize_text(label).strip(" :*") not in _SIGN_IN_ONLY:
                continue
            # Who you are: a username, phone or e-mail field (an e-mail field is `format: email`, a choice kind);
            # or a message that asks for the password itself ("vavedete parolata si").
            if _SIGN_IN.search(normalize_text(message)) or "password" in self._scan(message, True).asked or any(
                    self._identity(other) for other in fields if other is not field
                    and (other.kind is _FREE or other.schema.get("format") in ("email", "idn-email"))):
                add("password", field.path + (".title" if field.title else ""))

    def _fragment_asks(self, message: str, fields: list[_Field], add: Callable[[str, str], None]) -> None:
        """A choice whose options are pieces of a secret ("Select word #3 of your recovery phrase" over
        BIP-39 words, "Last digit of your PIN" over 0-9), on a form that names that kind of secret."""
        for field in fields:
            if field.kind is not _OTHER:
                continue
            kind = _options(field.schema)
            if kind is None:
                continue
            wanted = _FRAGMENT_OF[kind]
            for text in (field.title, field.description, field.name, message):
                # Word by word too: "the second digit of your PIN" names the PIN even where the whole text
                # reads as a description of something else.
                scans = [self._scan(text, True), *(self._scan(w, False) for w in text.split() if len(w) >= 3)]
                if any(not wanted.isdisjoint(scan.asked | scan.about) for scan in scans):
                    add(kind, field.path)
                    break

    def _joined_asks(self, message: str, receivers: list[_Field], add: Callable[[str, str], None]) -> None:
        """An ask spread over two texts: message + the field it points at, or a title + its description
        ("Type the three digits on the" + "back of your card", "paste your private" + "key (PEM)")."""
        pointed = len(receivers) == 1 or any(self._generic(f) for f in receivers)
        for field in receivers:
            label = field.title or field.name
            pairs = [(field.title, field.description)] if field.title and field.description else []
            # (A phone or e-mail field takes no secret the message and its label describe together: "Choose
            # a two-step method" + "Phone number" describes where a code goes, not the code. A label that only
            # mentions a phone, "What you type to unlock your phone", is no such field: identity labels are short.)
            if message and label and (pointed and (len(receivers) == 1 or self._generic(field))) \
                    and not (self._identity(field) and len(words_of(label)) <= 3):
                message = self._live_message(message)
                pairs.append((message, label))
                if field.description:
                    pairs.append((message, label + ". " + field.description))
            for before, after in pairs:
                # A text that ends its sentence does not run on into the next one as words ("... log in." +
                # "Details" is no "login details"); a description spread over both still counts.
                glue = "\n" if before.rstrip().endswith(_SENTENCE_ENDS) else " "
                joined = self._scan(before + glue + after, True).asked
                if not joined:
                    continue
                # What either text names on its own, asked or only mentioned ("... numarası gerekmez": not
                # needed), is no ask the joining made.
                first, second = self._scan(before, True), self._scan(after, True)
                alone = first.asked | first.about | second.asked | second.about
                for category in sorted(joined - alone):
                    if category in ("pin", "otp") and _pin_word(label) and _postal(message, field.name, label,
                                                                                    field.description):
                        continue  # ("Courier bhejna hai?" + "Pin code": a postal code, not a code sent)
                    if _receives(category, field.kind):
                        add(category, field.path)

    def _field_asks(self, field: _Field, message: str, add: Callable[[str, str], None], fields: list[_Field]) -> bool:
        """Adds the field's own asks; returns whether the field is *about* a secret (governed)."""
        path = field.path
        if field.kind in (_NUMBER, _SMALL_NUMBER) and _setting(field.schema):
            # A number the form fills in for the user ("OTP validity (seconds)", default 120; "PIN length",
            # default 4) is a setting: a PIN or a code is never pre-filled.
            return True
        if field.kind in _TYPED:
            self._marker_asks(field, add)
        title, description = field.title, field.description
        name_scan = self._scan(field.name, False)
        # A title of a sentence's length is read as prose: its negations count ("don't include passwords").
        title_scan = self._scan(title, title.count(" ") >= _PROSE_SPACES)
        desc_scan = self._scan(description, True)
        if title_scan.asked and ("(" in title or "（" in title):
            head = _REMARK.sub(" ", title).strip()
            if head and not self._scan(head, False).asked and self._identity_text(head):
                # "Mobile number (we'll send sign-in codes here)": the remark says what the number is for;
                # the field asks for the number.
                title_scan = NOTHING
                if not (name_scan.asked or desc_scan.asked):
                    return False
        if not (name_scan.asked or title_scan.asked or desc_scan.asked):
            if field.kind is _FREE and title and description and title_scan.governed \
                    and description.count(" ") <= 2 and self._lexicon.may_name_secret(title + " " + description):
                # A noun that runs on from the title into a short description ("Nome de solteira" + "da sua mãe"):
                # read as one, a name the title seemed to ask for is the secret it names. (A description of
                # several words is a sentence of its own, read on its own.)
                joined = self._scan(title + " " + description, True).asked - title_scan.about - desc_scan.about
                for category in sorted(joined):
                    add(category, path + ".title")
                if joined:
                    return False
            if field.kind is _FREE and _api_key_box(field) and not title_scan.governed \
                    and not self._lexicon.may_name_secret(description):  # ("Public key of the API": another key)
                add("api_key", path + ".title")
                return False
            return title_scan.governed or bool(title_scan.about) or (not title and name_scan.governed) \
                or (bool(name_scan.about) and not title)
        # A title that only names, counts or chooses governs the whole field ("Label" for `api_key_label`).
        if title_scan.governed and not title_scan.asked and (not desc_scan.asked or _EXAMPLE.match(description)):
            # (A description that asks outright still asks: "Opmerking" over "Hier je wachtwoord"; one that
            # gives an example does not: "Key vault name" over "e.g. prod-secrets-vault".)
            return True
        if name_scan.governed and not name_scan.asked and not desc_scan.asked and (
                name_scan.about or self._lexicon.head_governs(field.name)):
            # The identifier says what the answer is: a name, label or count of a secret (`api_key_name`,
            # `recovery_codes_count`), whatever language the title is in.
            return True
        if not title and name_scan.governed and not name_scan.asked and not self._generic(field):
            return True
        if name_scan.asked and title and not (title_scan.asked or title_scan.about) and not self._generic(field) \
                and (not self._lexicon.head_is_secret(field.name) or _names_title(field.name, title)
                     or (len(words_of(field.name)) == 1 and words_of(field.name)[0] in _GENERIC_FIELD_WORDS)):
            # A human title that names no secret, and an identifier whose head noun is something else
            # (`password_issue`, `secret_masala`): the secret word only modifies the head. An identifier that
            # is the title's first word or its initials is read as the title reads it (`pis`, "Pis i porta": a
            # floor; `kp`, "Kode pos": a postal code), and so is one generic word (`secret` over "What is the
            # secret ingredient of your dish?"; two, `key_secret`, make a noun of their own).
            name_scan = NOTHING
            if not (title_scan.asked or desc_scan.asked):
                return False
        postal: bool | None = None
        # A word used in another sense anywhere in the field ("Hasło reklamowe", name `haslo`) keeps that sense.
        other_sense = name_scan.sense | title_scan.sense | desc_scan.sense
        for suffix, scan, source in (("", name_scan, field.name), (".title", title_scan, title),
                                     (".description", desc_scan, description)):
            for category in sorted(scan.asked):
                if not _receives(category, field.kind) or category in other_sense:
                    continue
                if not suffix and category in title_scan.about and not title_scan.asked and (
                        field.kind is not _FREE or title_scan.governed or _prefix_of_compound(field.name, title)):
                    # The title only mentions what the identifier names: a number counting it ("Ile kodów
                    # zapasowych Ci zostało?"), a text naming or describing it. ("Choose the password you
                    # want to use" over `wachtwoord` still asks: choosing a secret is setting one. An identifier
                    # that starts a one-word title reads as the title does: `geheim` over "Geheimzutat".)
                    continue
                if category in _MOTTO_CATEGORIES and _says_motto([field], message):
                    continue
                if category == "pin" or (category == "otp" and _pin_word(source)):  # ("Pin code": a code)
                    if postal is None:
                        pattern = field.schema.get("pattern")
                        pattern = pattern if isinstance(pattern, str) else ""
                        # Four digits are a bank PIN whatever the place words say: no postal PIN code has four
                        # (a pattern of four digits, or a `maxLength` of four).
                        postal = not _FOUR_DIGITS.fullmatch(pattern) and field.schema.get("maxLength") != 4 and (
                            _postal(field.name, title, description, message) or _postal_pattern(field)
                            # A place word in the field's own texts ("ગામનો પિન કોડ", the village's PIN code),
                            # or six digits beside a place field ("House number"), make it a postal code.
                            or (_pin_word(title or field.name) and (
                                _place(title, description) or (_six_digits(field.schema, pattern) and _place(
                                    *(f.title for f in fields if f is not field)))))
                            # "पिन कोड" alone, in an Indian script, is the postal code, unless the form is about
                            # a bank card ("एटीएम", "UPI", "डेबिट कार्ड").
                            or (_indian_pin_code(title) and not self._banking(message, fields)))
                    # Only the word "PIN" itself can be postal: a title saying "secret number" never is.
                    if postal and _pin_word(source):
                        continue
                if category in _DOOR_CATEGORIES and _for_courier(field, message):
                    continue
                add(category, path + suffix)
        return False

    def _marker_asks(self, field: _Field, add: Callable[[str, str], None], texts_may_show: bool = True) -> None:
        """`format: password`, `writeOnly` and credential-shaped values on a free-text field."""
        schema = field.schema
        if schema.get("format") == "password":
            add("password", f"{field.path}.format")
        if schema.get("writeOnly") is True:
            add("password", f"{field.path}.writeOnly")
        if texts_may_show or not _VALUE_KEYS.isdisjoint(schema):
            self._value_asks(field, add)
        default = schema.get("default")
        if not isinstance(default, str):
            return
        if _WORD_TEMPLATE.search(default):
            add("seed_phrase", f"{field.path}.default")  # "word1 word2 … word12": the words to fill in
            return
        placeholder = _PLACEHOLDER.fullmatch(default)
        # A default that is an instruction shows in the box as its label does: in brackets ("<paste the root
        # master key here>"), or a sentence under a bare "Code" ("Write the confirmation code from the SMS here";
        # a notice under "Information" only informs).
        bare = not field.title or set(words_of(field.title)) <= _CODE_WORDS
        text = placeholder.group(1) if placeholder is not None else \
            default if bare and default.count(" ") >= 3 else ""
        if not text:
            # So does a prompt awaiting its value ("Karta PIN-kodi: ") and a sentence telling what to put in the
            # box ("paste your 24 wallet recovery words here", "paste_your_live_secret_key_here").
            spaced = default.replace("_", " ") if " " not in default and default.count("_") >= 3 else default
            if default.rstrip() != default and default.rstrip().endswith((":", "：")):
                text = default.rstrip()[:-1]
            elif spaced.count(" ") >= 3 and not spaced.rstrip().endswith((".", "。", "!")):
                # (A placeholder is a bare instruction; a finished sentence in a box is a notice: "The CVC is
                # never stored and must be entered at every purchase.")
                text = spaced
        if text and self._lexicon.may_name_secret(text):
            for category in sorted(self._scan(text, True).asked):
                if _receives(category, field.kind):
                    add(category, f"{field.path}.default")

    @staticmethod
    def _value_asks(field: _Field, add: Callable[[str, str], None]) -> None:
        schema = field.schema
        path = field.path
        default = schema.get("default")
        values = [default] if isinstance(default, str) else list(default) if isinstance(default, list) else []
        examples = schema.get("examples")
        if isinstance(examples, list):
            values.extend(examples)
        for key in ("example", "placeholder"):
            if isinstance(schema.get(key), str):
                values.append(schema[key])
        context = " ".join((field.name, field.title, field.description))
        values = [decode_escapes(v) if isinstance(v, str) else v for v in values]
        for value in values:
            kind = value_secret_kind(value, context) if isinstance(value, str) else None
            if kind is not None:
                add(kind, f"{path}.default")
                break
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern_asks_for_secret(pattern):
            add("secret_value", f"{path}.pattern")
        for key in ("title", "description"):
            text = schema.get(key)
            if isinstance(text, str) and text_shows_secret(text, context):
                add("secret_value", f"{path}.{key}")

    def _live_message(self, message: str, labels: Collection[str] = ()) -> str:
        """The part of the message still asking: a later question about something else supersedes what
        came before ("Your PIN was reset. How did we do?"); one that names the field it points at does not
        ("We texted you a code. What is the code?")."""
        if "?" not in message and "？" not in message:
            return message
        sentences = [m.group(0) for m in _SENTENCE.finditer(message)]
        label_words = {w for label in labels for w in words_of(label) if len(w) >= 3}
        for index in range(len(sentences) - 1, 0, -1):
            sentence = sentences[index]
            if ("?" in sentence or "？" in sentence) and not self._scan(sentence, True).asked \
                    and not self._lexicon.may_name_secret(sentence) and label_words.isdisjoint(words_of(sentence)):
                return "".join(sentences[index:])
        return message

    def _message_asks(self, message: str, fields: list[_Field], receivers: list[_Field],
                      add: Callable[[str, str], None], questions: Sequence[_Field] = ()) -> None:
        scan = self._scan(self._live_message(message, [f.title or f.name for f in receivers]), True)
        if not scan.asked:
            return
        # (Beside fields that take other answers, only a title that is a question is one: "Policy number"
        # and "What was your first pet's name?"; beside a phone or e-mail field, any such title.)
        if questions and "security_answer" in scan.asked and any(
                self._scan(f.title, True).about <= _KNOWLEDGE
                and (f.title.rstrip().endswith(_QUESTION_ENDS) or all(self._identity(r) for r in receivers))
                for f in questions) and not self._yes_no_question(message, "security_answer", fields):
            add("security_answer", "message")
            if scan.asked <= _KNOWLEDGE:
                return
        for category in sorted(scan.asked):
            # A number or URL field answers a message's ask only when its label says nothing of its own:
            # "Annual income", "Copies", "Limit" are amounts and "Callback URL" a place, whatever the message
            # names (a token in a URL is read from the field's own texts and values).
            # (A security question as the title names a name and still takes the answer.)
            able = [f for f in receivers if _receives(category, f.kind)
                    and (not self._identity(f) or (category == "security_answer"
                                                   and f.title.rstrip().endswith(_QUESTION_ENDS)))
                    and (f.kind is _FREE or self._generic(f))]
            # The message points at the one field that can take the answer, or at a field whose label
            # says nothing of its own ("Value", "Type it here").
            if able and len(able) == 1 and not self._generic(able[0]) and self._claimed(message, able[0], category) \
                    and not (category == "security_answer" and able[0].title.rstrip().endswith(_QUESTION_ENDS)):
                continue  # (a question as the title is the security question asked, whatever words it shares)
            if not able or (len(able) > 1 and not any(self._generic(f) for f in able)
                            and not self._quoted(message, able) and not _digit_parts(able, category)
                            and not self._echoed(message, able, category)
                            # (a security question as one field's title: that field takes its answer)
                            and not (category == "security_answer" and sum(
                                f.title.rstrip().endswith(_QUESTION_ENDS) for f in able) == 1)):
                continue
            if category in ("pin", "otp") and (
                    _postal(message, *(f.name + " " + f.title + " " + f.description for f in fields))
                    or any(_postal_pattern(f) for f in fields)) and (category == "pin" or _pin_word(message)):
                continue  # (the "code" of a postal "PIN code" is no one-time code)
            if category == "pin" and any(_indian_pin_code(f.title) and f.schema.get("maxLength") != 4 for f in fields) \
                    and not self._banking(message, fields):
                continue  # "तुमचा पिन कोड सांगा" over a field "पिन कोड": India's postal code, as the field reads alone
            if category in _MOTTO_CATEGORIES and _says_motto(able, message):
                continue  # "Navrhnite heslo plesu" over "Heslo plesu (motto)": a motto, not a password
            if category in _DOOR_CATEGORIES and all(_for_courier(f, message) for f in able):
                continue
            if self._yes_no_question(message, category, fields):
                continue
            add(category, "message")

    def _chosen_question(self, fields: list[_Field], receivers: list[_Field], add: Callable[[str, str], None]) -> None:
        """A field that offers security questions to choose from ("Kontrolní otázka" over the questions), or
        shows the question as its pre-filled value ("Pytanie", default "Nazwisko panieńskie matki"), and a
        free field beside it: that field takes the answer."""
        def offers(field: _Field) -> bool:
            default = field.schema.get("default")
            if field.kind is _OTHER:
                shown = field.offered
            elif field.kind is _FREE and isinstance(default, str) and default.strip():
                shown = default
            else:
                return False
            text = "\n".join((field.title, field.description, shown))
            if not self._lexicon.may_name_secret(text):
                return False  # (the common case: a choice of seats, sizes, dates)
            scan = self._scan(text, True)
            return "security_answer" in scan.asked | scan.about

        if offering := [f for f in fields if offers(f)]:
            for f in receivers:
                if f.kind is _FREE and f not in offering and not self._identity(f):
                    add("security_answer", f.path)
                    return

    def _offered_asks(self, fields: list[_Field], receivers: list[_Field], add: Callable[[str, str], None]) -> None:
        """An option that says the secret is typed in another field ("Escribo o código de seguridade (CVV) no
        campo seguinte", then a field "Código"): the first field after the choice that can take it does."""
        for index, field in enumerate(fields):
            for option in field.offered.split("\n") if field.offered else ():
                if not self._lexicon.may_name_secret(option) or "type_in" not in self._lexicon.concepts_in(option):
                    continue
                for category in sorted(self._scan(option, True).asked):
                    taker = next((f for f in fields[index + 1:] if f in receivers and _receives(category, f.kind)
                                  and not self._identity(f)), None)
                    if taker is not None:
                        add(category, taker.path)

    def _echoed(self, message: str, able: list[_Field], category: str) -> bool:
        """Whether exactly one field's label repeats a word of the sentence that asks ("Enter your unseal key
        share" over "Key share" and "Initials"): that field is the one the sentence points at."""
        if category in _LONG_NUMBER_CATEGORIES:
            return False  # "the address to send your renewed ID card to": a document named, not asked for
        asking = [words_of(m.group(0)) for m in _MESSAGE_SENTENCE.finditer(message)
                  if m.group(0).strip() and category in self._scan(m.group(0), True).asked]
        # (No one sentence may ask on its own: "The vault is sealed. Enter your unsealing share." asks as a whole.)
        said = {w for ws in (asking or [words_of(message)]) for w in ws if len(w) >= 4}
        if not said:
            return False

        def echoes(field: _Field) -> bool:
            # The shared word is the field's own ("share", "Anteil"), not the secret's noun: a label naming the
            # secret and still asking nothing uses it in another sense ("Heslo (slovníkové)", a headword).
            own = [w for w in words_of(field.title or field.name) if len(w) >= 4 and w not in _GENERIC_FIELD_WORDS
                   and not self._names_secret(w)]
            # (In a script written without spaces between words, a run holds several: the label's word
            # anywhere in it is repeated, "အဖြေ" in "အဖြေကို".)
            return any(w == m or (len(w) >= 5 and len(m) >= 5 and (w.endswith(m) or m.endswith(w)))
                       or (w in m and UNSPACED.match(w) is not None) for w in own for m in said)

        return sum(echoes(f) for f in able) == 1

    def _names_secret(self, word: str) -> bool:
        """Whether one word names a secret or speaks of one (the pre-check alone is wider: "lesegerät" may
        be a misspelling, and is not)."""
        if not self._lexicon.may_name_secret(word):
            return False
        scan = self._scan(word, False)
        return bool(scan.asked or scan.about)

    def _claimed(self, message: str, field: _Field, category: str) -> bool:
        """Whether another sentence of the message asks for what the field's own label names ("Enter the
        delivery address. We never ask for your PIN." over a field "Address"): the label's word stands in
        a sentence that names no secret, and the rest of the message still names the secret, so the field
        answers that sentence, not the one naming the secret."""
        label = field.title or field.name
        if self._lexicon.may_name_secret(label):
            return False
        own = [w for w in words_of(label) if len(w) >= 3 and w not in _GENERIC_FIELD_WORDS and w not in _FUNCTION_WORDS]
        if not own:
            return False
        for match in _MESSAGE_SENTENCE.finditer(message):
            sentence = match.group(0)
            if not sentence.strip() or self._lexicon.may_name_secret(sentence):
                continue
            # A word of the label, or the label's word with an ending ("Cinwaan" in "Cinwaanka gaarsiinta").
            if any(w == o or (len(o) >= 4 and w.startswith(o)) for w in words_of(sentence) for o in own):
                rest = message[:match.start()] + " " + message[match.end():]
                return category in self._scan(rest, True).asked
        return False

    def _yes_no_question(self, message: str, category: str, fields: list[_Field]) -> bool:
        """Whether the message only asks *whether* something came ("Did you get the code?", "¿No te llegó el
        código?") and the form has a yes/no or choice field to answer it: the secret is named only in
        questions, and no other sentence tells the user to type, enter or paste anything."""
        if not any(f.kind is _OTHER and (f.schema.get("type") == "boolean" or "enum" in f.schema
                                         or "oneOf" in f.schema) for f in fields):
            return False
        sentences = [m.group(0) for m in _MESSAGE_SENTENCE.finditer(message) if m.group(0).strip()]
        questions = [s for s in sentences if s.rstrip().endswith(_QUESTION_ENDS)]
        if not questions:
            return False
        # What leads into a question is no question ("We ask the security question you chose: What was your
        # first pet's name?"): it is read with the other sentences.
        rest = " ".join([*(s for s in sentences if s not in questions),
                         *(q[:q.rindex(":")] for q in questions if ":" in q)])
        if not rest.strip():
            return True
        said = self._scan(rest, True)
        if category == "security_answer" and category in said.about | said.asked:
            return False  # (the question after it is that security question)
        return category not in said.asked and "type_in" not in self._lexicon.concepts_in(rest)

    @staticmethod
    def _quoted(message: str, able: list[_Field]) -> bool:
        """Whether the message names one of the fields by its label in quotes ("type it in the 「入力欄」
        field", "in the box "Value""): that field is the one it points at."""
        if not _QUOTE_OPEN.search(message):
            return False
        quoted = {normalize_text(q).strip() for q in _QUOTED.findall(message)}
        return sum(normalize_text(f.title or f.name).strip() in quoted for f in able) == 1

    def _banking(self, message: str, fields: list[_Field]) -> bool:
        texts = [message, *(t for f in fields for t in (f.title, f.description) if t)]
        return any(_BANKING.search(normalize_text(t)) or not {"atm", "card_terminal"}.isdisjoint(
            self._lexicon.concepts_in(t)) for t in texts)

    @staticmethod
    def _note(field: _Field) -> bool:
        """A notes field ("Comments (optional)", "Poznámka"): free remarks, not an answer to the message.
        A label of generic words only ("Information", "Value") is no notes field: it says nothing."""
        words = words_of(_REMARK.sub(" ", field.title or field.name))
        return bool(words) and all(w in _NOTE_WORDS or w in _NOTE_FILLER for w in words) and any(
            w in _NOTE_WORDS and w not in _GENERIC_FIELD_WORDS for w in words)

    @staticmethod
    def _identity(field: _Field) -> bool:
        return SensitiveFieldDetector._identity_text(field.title or field.name)

    @staticmethod
    def _identity_text(text: str) -> bool:
        squashed = squash(normalize_text(text))
        matches = _IDENTITY.find_matches_as_indexes(squashed, overlapping=True)
        if not matches:
            return False
        if not UNSPACED.search(squashed):
            # A short Latin identity word counts only as a word of its own ("nom", a name, is not in
            # "nọmba", a number); a longer one also at the start of a word ("E-mail-Adresse"). (Arabic and
            # Hebrew attach articles in front: "الموبايل".)
            starts = {0, *accumulate(len(w) for w in words_of(text))}
            if not any(not squashed[start:end].isascii() or (start in starts and (end in starts or end - start >= 5))
                       for _, start, end in matches):
                return False
        # "Code from the email", "SMS-Code": the channel a code came by, not the user's address.
        return _CODE_WORDS.isdisjoint(words_of(text))

    @staticmethod
    def _generic(field: _Field) -> bool:
        """A field whose label says nothing of its own ("Value", "field1", "Type it here")."""
        words = [w.rstrip("0123456789") for w in words_of(field.title or field.name)]
        return all(not w or w in _GENERIC_FIELD_WORDS for w in words)

    def _split_words(self, message: str, fields: list[_Field], add: Callable[[str, str], None]) -> None:
        """A secret noun cut in two across neighbouring texts: message "Enter your pass" + title "word"."""
        previous = message
        # A message that stops mid-sentence ("..., please enter your pass") may be cut before any field's label.
        # An ellipsis ends no sentence: it says the text goes on in the next one ("وشەی..." + "...نهێنی").
        cut = bool(message) and (not message.rstrip().endswith(_SENTENCE_ENDS)
                                 or message.rstrip().endswith(("...", "…")))
        for field in fields:
            title = field.title
            current = title or field.name
            if field.kind != _OTHER and current:
                pairs = [(previous, current, previous is message and cut)] if previous else []
                if cut and previous is not message:
                    pairs.append((message, current, True))
                description = field.description
                if description and title:
                    pairs.append((title, description, False))
                for before, after, open_end in pairs:
                    category = self._joined(before, after, open_end)
                    if category is not None and _receives(category, field.kind):
                        add(category, field.path)
            previous = current

    def _joined(self, before: str, after: str, open_end: bool = False) -> str | None:
        if " " in before.strip() and " " in after.strip() and not open_end:
            return None  # two texts of several words each: not a word cut in two
        left = words_of(before)
        right = words_of(after)
        if not left or not right or (len(left) != 1 and len(right) != 1 and not open_end):
            return None
        found = self._joined_category(left[-1], right[0])
        if found is None and UNSPACED.search(left[-1][-1:] + right[0][:1]):
            # Scripts without spaces run a whole clause as one "word": the noun is the last few characters
            # of one text and the first few of the next ("...您收到的验" + "证码").
            found = next((category for tail in (1, 2, 3) for head in (1, 2, 3, 4)
                          if (category := self._joined_category(left[-1][-tail:], right[0][:head])) is not None),
                         None)
        if found is None and open_end and len(left) >= 2:
            # A noun of several words cut after its second-last ("Social Security" + "number").
            found = self._joined_category(left[-2] + left[-1], right[0])
        if found is None and open_end and len(right[0]) > 4:
            # The second half may carry an ending ("titkos" + "kulcsot": the key, accusative).
            for cut in (1, 2):
                found = self._joined_category(left[-1], right[0][:-cut])
                if found is not None:
                    break
        return found

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one detector per policy, kept for the process
    def _joined_category(self, last: str, first: str) -> str | None:
        found = self._lexicon.term_category(last + first)
        if found is None and self._custom is not None:
            found = self._custom.term_category(last + first)
        return found


