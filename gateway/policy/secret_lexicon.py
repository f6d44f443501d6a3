"""The multilingual secret lexicon and the one-pass matcher over it.

Data: one JSON file per language under `gateway/policy/data/lexicon/`, each with

- `families`: secret nouns per family (password, pin, otp, api_key, ...);
- `ask_by_description`: phrases that ask for a secret without naming it
  ("the code we just texted you");
- `benign_ask`: words that turn a mention into a question *about* a secret,
  per class (`name`, `count`, `choose`, `confirm`, `describe`);
- `benign_senses`: phrases where a secret noun has another sense
  ("secret ingredient", "boarding pass");
- optional `negation`: words that negate a clause ("never", "do not"), read before the noun they
  negate (and after it in Japanese, Korean and Indic scripts, whose verbs come last);
- optional `negation_after`: negations that follow the noun in their language ("PIN nahi maangte",
  "kart numarası gerekmez", "የሚስጥር ቁጥር አንጠይቅም"), read on either side of it.

Every phrase is folded with `normalize_text` and *squashed* (separators
removed), and all of them go into one Aho-Corasick automaton. A text is folded
and squashed the same way and scanned once; each hit is then checked against
the text's word boundaries, so "mot de passe", "mot-de-passe", "MotDePasse",
"p.a.s.s.w.o.r.d" and "pass word" all meet the same entry, while "compass
wording" does not. Typos are caught with a symmetric-delete index on the
longer single-word terms.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from itertools import accumulate, pairwise
from typing import Any, Final, NamedTuple

import ahocorasick_rs
from rapidfuzz.distance import OSA

from gateway.policy.lexicon_cache import cached_lexicon
from gateway.policy.text_normalization import (
    CAMEL_MARK,
    PICTOGRAPH,
    ascii_capitals,
    camel_marked,
    native_capitals,
    normalize_text,
    undo_overrides,
)

__all__ = [
    "DESCRIBED",
    "FAMILY_CATEGORY",
    "INVISIBLE",
    "NUMERIC_CATEGORIES",
    "UNSPACED",
    "Lexicon",
    "TextScan",
    "load_builtin_lexicon",
    "squash",
    "words_of",
]

# Families of the lexicon files, and the category a finding reports for each.
FAMILY_CATEGORY: Final[Mapping[str, str]] = {
    "password": "password", "passphrase": "passphrase", "pin": "pin", "puk": "pin", "otp": "otp",
    "tan": "otp", "api_key": "api_key", "access_token": "token", "bearer_token": "token",
    "refresh_token": "token", "token": "token", "private_key": "private_key", "ssh_key": "private_key",
    "recovery_code": "recovery_code", "seed_phrase": "seed_phrase", "card_number": "payment_card",
    "cvv": "cvv", "national_id": "national_id", "vault_key": "vault_key", "secret_generic": "secret",
    "security_answer": "security_answer",
}
DESCRIBED: Final = "described_secret"
"""Category of an ask made by description ("the code we texted you")."""
# Secrets often typed as a number: a number/integer field can receive them.
NUMERIC_CATEGORIES: Final[frozenset[str]] = frozenset(
    {"pin", "otp", "payment_card", "cvv", "national_id", "recovery_code", DESCRIBED}
)

# Entry kinds in the automaton.
TERM, REVERSED, BENIGN, GOVERNOR, NEGATION, CUE, PHRASE, CONCEPT = range(8)

# Characters kept inside a word: \w plus the vowel signs and marks of Indic and
# South-East Asian scripts (Python's \w leaves them out).
_MARK_BLOCKS: Final = (
    "\u0900-\u0963\u0966-\u0dff\u0e00-\u0e4e\u0e50-\u0fff\u1000-\u109f\u1780-\u17ff\u1a00-\u1aff"
    "\u1b00-\u1bff\u3099\u309a\u302a-\u302f\ua8e0-\ua8ff\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
)
_SEPARATORS: Final = re.compile(rf"[^\w{_MARK_BLOCKS}]+|_+")
# Scripts written without spaces between words: every position is a word boundary.
_UNSPACED_CHARS: Final = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u31f0-\u31ff\uff66-\uff9f"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u0f00-\u0fff"
)
# Scripts written without spaces between words (CJK, Thai, Lao, Burmese, Khmer, Tibetan).
UNSPACED: Final = re.compile(f"[{_UNSPACED_CHARS}]")
# A colon before a quoted label does not end the clause: "Never type here: "PIN"" negates the PIN.
# A colon after a vowel sign ends a clause too ("ଦିଅନ୍ତୁ: ...", though "ୁ" is no word character). Commas and
# question marks there do not: "ओटीपी, एटीएम पिन या पासवर्ड नहीं माँगते" is one list under its closing negation.
_CLAUSES: Final = re.compile(r"(?<=[^\W_]{4})(?:[.!?;|,]|:(?!\s*[\"„“«「『]))(?:\s+|$)"
                             r"|(?<=[^\W_]{2})(?:[!?;|,]|:(?!\s*[\"„“«「『]))(?:\s+|$)|[。！？；，、\n։።፣۔।॥؟؛،။၊។།]"
                             rf"|(?<=[{_MARK_BLOCKS}]):(?!\s*[\"„“«「『])(?:\s+|$)"
                             r"|(?<=[^\W_]) [–—] (?=[^\W_])")  # (a spaced dash: "... жазбаңыз – оны ...")
_LIST_COMMAS: Final = frozenset({",", "،", "、", "，"})
_PARENS: Final = re.compile(r"[(（\[]([^()（）\[\]]*)[)）\]]")
_LEET_WORD: Final = re.compile(r"(?=[\w@$!|]*[a-z])(?=[\w@$!|]*[0134578@$!|])(?<![\w@$!|])[\w@$!|]+")
_LEET_FAST: Final = re.compile(r"[a-z][0134578@$!|]|[0134578@$!|][a-z]")
_LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                              "@": "a", "$": "s", "!": "i", "|": "l"})
_LEET_L: Final = str.maketrans({"1": "l"})

_LATIN_LETTER: Final = re.compile("[A-Za-z]")
_VERB_FINAL: Final = re.compile("[\u3040-\u30ff\uac00-\ud7af\u0900-\u0dff]")
_ATTACHED: Final = 2
_SECRET_KINDS: Final = frozenset({TERM, REVERSED, PHRASE})
_STRONG, _WEAK, _CONCEPTS_ONLY = 3, 2, 1
_INDIC_MARK: Final = re.compile("[\u093c-\u094d\u09bc-\u09cd\u0a3c-\u0a4d\u0abc-\u0acd\u0b3c-\u0b4d"
                                "\u0bbe-\u0bcd\u0c3e-\u0c4d\u0cbc-\u0ccd\u0d3e-\u0d4d\u0dca-\u0ddf]")
# Letters, and the marks inside Indic and South-East Asian words (vowel signs, viramas).
_WORD_RUN: Final = re.compile(rf"(?:[^\W\d_]|[\u0300-\u036f{_MARK_BLOCKS}]){{3,}}")
_GOVERNOR_GAP: Final = 11
_AFTER_GAP: Final = 3
_CLAUSE_WIDE: Final = 40  # "why", "how many": their question covers the clause that follows
"""How far (in squashed characters) a governor word may stand from the secret noun it governs."""
_UNSPACED_GOVERNOR_GAP: Final = 8
_QUALIFIER_GAP: Final = 5  # squashed characters between a description's first word and a blocker that qualifies it
_DOT_BEFORE: Final = re.compile(r"[^\W\d_]\.\s+(\w)")


def _cuts_words(text: str) -> bool:
    """Whether a sentence holds two dots that cut words short, not sentences: each followed by a small letter
    ("Resp. a su preg. de seg.": a description; "Enter the code. Then press OK" ends a sentence)."""
    return sum(bool(m.group(1).islower()) for m in _DOT_BEFORE.finditer(text)) >= 2


_UNDOT_CLAUSES: Final = re.compile(r"[:;!?¿¡|\n]\s*")  # clauses of a label with cut words (a dot there cuts a word)
# A word, with the dot that cuts it short (not a domain's). Digits may stand inside it: the confusables skeleton
# folds Cyrillic "з" and "б" to "3" and "6" ("закр." is "3akp.", and the noun it cuts is "3akpыtыи kлюч").
_DOTTED_TOKEN: Final = re.compile(r"[^\W_]*[^\W\d_][^\W_]*(?:\.(?!\w))?")
# The secret nouns that begin with one word: those of one word, those of more by their second word, and those
# second words sorted (for the cut words of `Lexicon._undot`).
_PhrasesOf = tuple[list[tuple[str, ...]], dict[str, list[tuple[str, ...]]], list[str]]
_TYPO_MIN: Final = 6
_GOVERNOR_TYPO_MIN: Final = 5
_TYPO2_MIN: Final = 8  # words this long may be two edits away from a secret noun
# A pronoun handed over right after a verb of giving or typing ("paste it", "pégalo", "collez-le"): the
# secret the clause speaks of is the one asked for, even if the clause also made it ("generate").
_HANDED_OVER: Final = re.compile(
    r"\b(?:(?:paste|enter|drop|put|type|send|share|give|insert|add|provide|submit|copy)\s+(?:it|them)"
    r"|(?:peg|introduc|ingres|envi|escrib|copi|pon)(?:a|e)?l[oa]s?"
    r"|(?:collez|colle|saisissez|entrez|envoyez|copiez|inscrivez)[- ]l[ae]"
    r"|(?:cole|insira|envie|digite|copie|informe)[- ][oa]"
    r"|(?:incolla|inserisci|invia|scrivi|copia)l[oa]"
    r"|(?:fuge|fugen sie|gib|geben sie|trage|tragen sie|kopiere|kopieren sie)\s+(?:ihn|es|sie)"
    r"|(?:plak|geef|voer|vul)\s+(?:hem|het|deze)"
    r"|(?:wpisz|wklej|podaj|zadejte|zadajte|vlozte)\s+(?:go|ho|je)"
    r"|(?:введите|вставьте|введіть|вставте|укажите|вкажіть)\s+(?:его|його)"
    r")\b")
_KEY_KINDS: Final = r"(?:gpg|pgp|openpgp|ssh|rsa|dsa|ecdsa|ed25519|ssl|tls)"
_KEY_KIND_INSIDE: Final = re.compile(rf"(?<=[^\W\d_])\s+{_KEY_KINDS}\s+(?=[^\W\d_])")
# What every match of `_KEY_KIND_INSIDE` holds, without the lookbehind that pattern tries at every position
# (a fourth of its cost): tried first, as every form pays this check.
_KEY_KIND_SPACED: Final = re.compile(rf"\s{_KEY_KINDS}\s")


def _key_kind_inside(folded: str) -> bool:
    """Whether a key's kind stands between two words ("soukromý gpg klíč", "private pgp key")."""
    return _KEY_KIND_SPACED.search(folded) is not None and _KEY_KIND_INSIDE.search(folded) is not None

_COMPOUND_MIN: Final = 11  # a compound word this long may end in a misspelt secret noun
_COMPOUND_TAIL_MIN: Final = 7
_COMPACT_MIN: Final = 6
_WHOLE_LABEL_MAX: Final = 24  # a label this short may be one secret noun misspelt across its words


_ASCII_SEPARATORS: Final = bytes(c for c in range(128) if not chr(c).isalnum())


# ASCII bytes tables (C-speed translate + split instead of a regex pass): separators to spaces, and
# separators and digits to spaces; letters to "L" and leetspeak characters to "D".
_ASCII_SPACED: Final = bytes(c if chr(c).isalnum() else 32 for c in range(256))
_ASCII_LETTERS_ONLY: Final = bytes(c if chr(c).isalpha() and c < 128 else 32 for c in range(256))
_ASCII_LEET_CLASSES: Final = bytes(
    ord("L") if chr(c).isalpha() and c < 128 else ord("D") if chr(c) in "0134578@$!|" else 32 for c in range(256))


def split_words(folded: str) -> list[str]:
    """The words of folded text, separators dropped (a fast path for ASCII text)."""
    if folded.isascii():
        return folded.encode("ascii").translate(_ASCII_SPACED).decode("ascii").split()
    return [w for w in _SEPARATORS.split(folded) if w]


def _letter_runs(folded: str) -> list[str]:
    """Runs of three letters or more (the words a misspelling can hide in)."""
    if folded.isascii():
        return [w for w in folded.encode("ascii").translate(_ASCII_LETTERS_ONLY).decode("ascii").split()
                if len(w) >= 3]
    return _WORD_RUN.findall(folded)


def _may_be_leet(folded: str) -> bool:
    if folded.isascii():
        classes = folded.encode("ascii").translate(_ASCII_LEET_CLASSES)
        return b"LD" in classes or b"DL" in classes
    return _LEET_FAST.search(folded) is not None


def squash(folded: str) -> str:
    """`folded` without its separators (what the automaton reads)."""
    if folded.isascii():  # the common case, far cheaper than the regex
        return folded.encode("ascii").translate(None, _ASCII_SEPARATORS).decode("ascii")
    return _SEPARATORS.sub("", folded)


# A genitive ending between a noun and the governor after it is the noun's own ("Tokenin adı", "API-nyckelns
# namn", "Token-ийн нэр": the token's name): the governor stands right beside the noun.
_GENITIVE: Final = frozenset(squash(normalize_text(e)) for e in (
    "s", "es", "ns", "ens", "ets", "n", "in", "ın", "un", "ün", "nin", "nın", "nun", "nün", "yn", "ийн", "ын", "ий"))


def _wordlike(word: str) -> bool:
    """Letters only; folded Cyrillic and Greek may hold a skeleton digit ("з" looks like "3"); Indic and
    South-East Asian words hold vowel signs and viramas (marks, not letters, to `str.isalpha`)."""
    if word.isalpha():
        return True
    if word.isascii():
        return False
    return (word.isalnum() and not word.isdigit()) or (
        any(c.isalpha() for c in word) and all(c.isalnum() or unicodedata.category(c) in ("Mn", "Mc") for c in word))


class _Entry(NamedTuple):  # a NamedTuple: about 45 000 are built when the lexicon loads
    kind: int
    label: str  # category for TERM/REVERSED, class for GOVERNOR, phrase id for CUE
    length: int
    internal: frozenset[int]  # word breaks inside the phrase (squashed offsets)
    stem: bool  # may continue inside the word ("passwort*", inflections)
    infix: bool  # may start inside a word (compounds, identifiers)
    unspaced: bool
    weak: bool = False  # a short acronym that is also an ordinary word somewhere ("tan", "sin", "dni")
    short_word: bool = False  # a phrase with a word of one or two letters ("o PIN"): its breaks must show
    exact: str | None = None  # written form required in the text (diacritics kept), if any


@dataclass(frozen=True, slots=True)
class TextScan:
    """What one text says about secrets."""

    asked: frozenset[str] = frozenset()
    """Categories the text names as the thing to give."""
    about: frozenset[str] = frozenset()
    """Categories it only talks about (named with a governor, negated, or in another sense)."""
    governed: bool = False
    """The text carries a governor word (name, count, choose, confirm, describe), secret or not."""
    sense: frozenset[str] = frozenset()
    """Categories whose word the text uses in another sense ("secret ingredient", "Hasło reklamowe")."""


NOTHING: Final = TextScan()
_GOVERNED: Final = TextScan(governed=True)


@dataclass
class _Builder:
    entries: dict[str, list[_Entry]] = field(default_factory=dict)
    typo_terms: dict[str, str] = field(default_factory=dict)  # squashed single word -> category
    known_words: set[str] = field(default_factory=set)
    term_words: set[str] = field(default_factory=set)  # words of secret nouns, targets of spelling fixes
    cues: dict[str, tuple[str, ...]] = field(default_factory=dict)  # phrase id -> cue words
    generic_words: set[str] = field(default_factory=set)  # one-word terms of the generic "secret" family

    def _acronyms(self, phrase: str, label: str) -> None:
        """"tu DNI", "número de DNI": the capitalised acronym of a phrase is a (weak) term on its own."""
        if phrase == phrase.lower():
            return
        raw = [w for w in _PHRASE_WORDS.split(phrase) if w]
        caps = [w for w in raw if 2 <= len(w) <= 6 and w.isupper() and w.isalpha()]
        if len(caps) != 1 or len(raw) < 2 or caps[0].casefold() in _NOT_SECRET_ACRONYMS:
            return
        rest = [normalize_text(w) for w in raw if w != caps[0]]
        if all(len(w) <= 3 or w in _NUMBER_WORDS for w in rest):
            self.add(caps[0], TERM, label)

    def add(self, phrase: str, kind: int, label: str, min_len: int = 1) -> None:
        inner = _INNER_STAR.search(phrase) if "*" in phrase else None
        if inner is not None:
            # An inflected word inside a phrase ("парольн* фраз*"): its common endings.
            for ending in _INFLECTIONS:
                self.add(phrase[:inner.start()] + ending + phrase[inner.end():], kind, label, min_len)
            return
        exact = None
        if phrase.startswith("="):
            # "=parolă": only as written, diacritics included (its folded form is a word elsewhere).
            phrase = phrase[1:]
            exact = unicodedata.normalize("NFC", phrase.strip("*~ ")).casefold()
        stem = phrase.endswith("*")
        infix = phrase.startswith(("~", "*"))
        folded = normalize_text(phrase.strip("*~ "))
        words = split_words(folded)
        key = "".join(words)
        if len(key) < min_len or not key:
            return
        internal = frozenset(list(accumulate(len(w) for w in words))[:-1]) if len(words) > 1 else _NO_BREAKS
        unspaced = not key.isascii() and UNSPACED.search(key) is not None
        if not key.isascii() and _HANGUL_WORD.fullmatch(words[-1]):
            stem = True  # Korean particles attach to the noun ("비밀번호를")
        if kind == GOVERNOR and len(key) <= 4 and key.isascii() and not phrase.strip("*~ ").isascii():
            # A short governor that folding strips of its diacritics ("tên": a name) would meet ordinary
            # words of other languages ("ten"): it counts only as written.
            exact = unicodedata.normalize("NFC", phrase.strip("*~ ")).casefold()
        # A short term is weak (it counts in capitals, or as a whole label): a Latin one of four letters, and
        # one of another script listed in capitals ("ЖИН", an ID in Kyrgyz, is "Жин" in Mongolian: weight).
        written = phrase.strip("*~= ")
        weak = kind == TERM and len(key) <= 4 and key not in _STRONG_SHORT and (
            (key.isascii() and key.isalpha()) or (not unspaced and written.isupper() and written.isalpha()))
        entry = _Entry(kind, label, len(key), internal, stem, infix, unspaced, weak,
                       len(words) > 1 and not unspaced and any(len(w) <= 2 for w in words), exact)
        if kind == TERM and exact is None:
            self._acronyms(phrase, label)
        if kind == TERM and label == "secret" and len(words) == 1:
            self.generic_words.add(key)
        known = self.entries.setdefault(key, [])
        if entry not in known:  # the same word in several languages is one entry
            known.append(entry)
        for word in words:
            self.known_words.add(word)
        if kind == TERM and len(words) == 1 and len(key) >= _TYPO_MIN and _wordlike(key) and not unspaced:
            self.typo_terms.setdefault(key, label)
        if kind == TERM and not unspaced:
            for word in words:
                if len(word) >= 4 and _wordlike(word):
                    self.term_words.add(word)
        if kind == TERM and len(key) >= 5 and key.isascii() and key.isalpha() and not internal:
            reversed_entry = _Entry(REVERSED, label, len(key), frozenset(), False, False, False)
            known = self.entries.setdefault(key[::-1], [])
            if reversed_entry not in known:
                known.append(reversed_entry)


# Endings tried for a word marked "*" inside a phrase (Slavic, Baltic, Romance, Germanic cases).
_INFLECTIONS: Final = (
    "", "a", "e", "i", "o", "u", "y", "s", "es", "en", "er", "n", "ы", "й", "ый", "ой", "ий", "ая", "яя", "ое",
    "ее", "ые", "ие", "ого", "его", "ую", "юю", "ом", "ем", "ым", "им", "у", "ю", "а", "я", "и", "е", "ов", "ей",
    "ам", "ами", "ах", "ę", "ą", "ów", "ego", "ej", "em", "ie", "om", "ami", "ach", "ą", "ых", "их", "ої", "ий",
)
# Words that ask for input; a drafted governor list that borrows one of them ("type") is not followed.
_ASK_VERBS: Final = frozenset({"type", "enter", "input", "provide", "write", "fill", "paste", "give", "send", "share",
                               "submit", "key in", "tell"})
# Short secret words that mean nothing else in the covered languages; other short ASCII terms are
# acronyms that are also ordinary words ("tan", "sin", "nie", "dni") and count only when written in
# capitals or standing as a label of their own.
_STRONG_SHORT: Final = frozenset({"pin", "pins", "puk", "otp", "otps", "cvv", "cvc", "pwd", "pw", "totp", "hotp", "jwt",
                                  "ssn", "psw", "mdp", "mfa", "passw", "pswd", "pword", "mpin", "tpin",
                                  "mtan", "cvn", "csc", "nric", "cpf", "aadhaar", "ppsn", "nino", "hkid", "xprv",
                                  "ghp", "xoxb", "bsn", "curp", "nir", "cnic", "npwp", "svnr", "idnr", "pesel"})
# Ordinary words never "corrected" into a secret noun, on top of every word of the lexicon files.
_COMMON_WORDS: Final = frozenset(
    "the to you your we a an of and in on for is it please enter type here this that with from at by be are "
    "was have has not no yes our us my me its as or if so do can will all any new old one two three four five "
    "six seven eight nine ten hello world name email phone address city state country date time first last "
    "full user users login logout sign account number code value field form data text note notes comment "
    "message title label description details booking order ticket guest guests seat seating plan option "
    "options choice select submit confirm cancel save update delete remove passport pasta paste passage "
    "passer passed passes person personal post posted poster secretary secrets pinned pinning tokens token "
    "keyword keywords keyboard monkey donkey turkey hockey jockey honey money".split())
_NUMBER_ABBREVIATIONS: Final = (
    ("nr", ("nummer", "number", "numer")), ("no", ("number", "numero", "nummer")),
    ("num", ("number", "numero", "nummer")), ("nro", ("numero",)),
)
_ABBREVIATED_CATEGORIES: Final = frozenset({"password", "token", "secret", "passphrase", "api_key", "seed_phrase"})
_VOWELS: Final = frozenset("aeiouy")
# Secrets a service issues: "create an API key" is about the key it will make, not one the user gives.
_ISSUED: Final = frozenset({"api_key", "token", "recovery_code", "vault_key", "secret"})
_NO_BREAKS: Final[frozenset[int]] = frozenset()
_INNER_STAR: Final = re.compile(r"\*(?=[\s\-'’]+\S)")
_PHRASE_WORDS: Final = re.compile(r"[\s/().,'’\-]+")
_HANGUL_WORD: Final = re.compile("[\uac00-\ud7af]+")
_NOT_SECRET_ACRONYMS: Final = frozenset({"sms", "atm", "id", "api", "sim", "iban", "pdf", "url", "app", "usb", "qr",
                                         "ssh", "pgp", "gpg", "rsa", "pem", "csr", "cli", "ci", "ip", "dns", "vpn",
                                         "pc", "tv", "nfc", "emv", "kyc", "upi", "bic", "swift", "eu", "uk", "us",
                                         "wifi", "wlan", "nr", "no", "nº", "otp", "pin", "tan",
                                         # brands, protocols and card schemes named beside a secret
                                         "fb", "ig", "qq", "rest", "jwt", "wep", "wpa", "chi", "dl", "kis", "aya",
                                         "jcb", "visa", "лк", "商户api", "aba", "sgk"})
_NUMBER_WORDS: Final = frozenset({"number", "numero", "nummer", "numer", "cislo", "szam", "numar", "numri", "no",
                                  "nr", "nº", "n", "num", "nombor", "nomor", "code", "codigo", "kod", "kode"})
# Words an identifier ends with that say nothing of what it holds (`pin_code`, `password_value`).
_HEAD_TAILS: Final = frozenset(
    "value val input field entry text data string str txt code number no nr num confirm confirmation again "
    "repeat retype new old current here 1 2 plain raw".split())
_CUE_STOP: Final = frozenset(
    "your you the that this what with from have when into which code codes number were there they them "
    "their will would should could please enter type here just also then than been just only more".split())


def _cue_stem(word: str) -> str:
    """A cue word without its last letters, so that other inflections still meet it."""
    return word[:-2] if len(word) >= 8 else word[:-1] if len(word) >= 6 else word


def _cue_words(phrase: str) -> tuple[str, ...]:
    folded = normalize_text(phrase)
    words = [w for w in _SEPARATORS.split(folded) if len(w) >= 4 and w not in _CUE_STOP and not w.isdigit()]
    words.sort(key=len, reverse=True)
    return tuple(dict.fromkeys(words[:3]))


class Lexicon:
    """All languages' phrases in one automaton; `scan` reads one text."""

    def __init__(self, languages: Iterable[Mapping[str, Any]], extra_terms: Iterable[str] = (),
                 concepts: Mapping[str, Any] | None = None, real_words: Iterable[str] = ()) -> None:
        b = _Builder()
        self.languages: tuple[str, ...] = ()
        langs = []
        governor_langs: dict[str, set[str]] = {}
        lang_words: dict[str, set[str]] = {}
        for data in languages:
            lang = str(data.get("lang", "?"))
            langs.append(lang)
            for phrase in (*data.get("identity_fields", ()), *data.get("note_fields", ())):
                # Everyday labels (a phone, a company, notes) are words as written, never a misspelt secret
                # noun ("الجوال", the mobile, is not "الجواز", the passport).
                b.known_words.update(w for w in _SEPARATORS.split(normalize_text(phrase)) if w)
            words_here = lang_words.setdefault(lang, set())
            # Romanized languages ("fa-Latn") mix in English words ("name karbari"): their words do not make an
            # English governor another language's ordinary word.
            texts = [] if lang.endswith("-Latn") else [
                *data.get("ask_by_description", ()), *(t for ts in data.get("families", {}).values() for t in ts)]
            for text in texts:
                words_here.update(w for w in _SEPARATORS.split(normalize_text(str(text).strip("*~="))) if w)
            for words in data.get("benign_ask", {}).values():
                for word in words:
                    key = squash(normalize_text(word))
                    if " " not in word.strip():
                        governor_langs.setdefault(key, set()).add(lang)
            for family, terms in data.get("families", {}).items():
                category = FAMILY_CATEGORY.get(family, "secret")
                for term in terms:
                    b.add(term, TERM, category)
            for i, phrase in enumerate(data.get("ask_by_description", ())):
                pid = f"{lang}:{i}"
                if UNSPACED.search(normalize_text(phrase)) or " " not in phrase.strip():
                    b.add(phrase, PHRASE, DESCRIBED, min_len=3)
                    continue
                cues = _cue_words(phrase)
                if len(cues) >= 3:  # two common words alone ("điện thoại": phone) say too little
                    b.cues[pid] = cues
                    b.cues[pid] = tuple(_cue_stem(c) for c in cues)
                    for cue in b.cues[pid]:
                        b.add(cue + "*", CUE, pid, min_len=4)
                else:
                    b.add(phrase, PHRASE, DESCRIBED, min_len=3)
            for cls, words in data.get("benign_ask", {}).items():
                if cls == "confirm":
                    # "Did you ...?", "is your ..." questions take yes or no: booleans and enums, which
                    # never receive a secret anyway. In a free-text field they also precede real asks
                    # ("Have you got the code? Type it here"), so they do not govern.
                    continue
                for word in words:
                    if normalize_text(word).strip() not in _ASK_VERBS:
                        # One Hangul syllable is a word ("왜": why, "몇": how many); one Latin letter is not.
                        b.add(word, GOVERNOR, cls, min_len=1 if _HANGUL_WORD.fullmatch(word.strip()) else 2)
            for phrase in data.get("benign_senses", ()):
                b.add(phrase, BENIGN, "benign", min_len=3)
            for word in data.get("negation", ()):
                b.add(word, NEGATION, "negation", min_len=2)
            for word in data.get("negation_after", ()):
                b.add(word, NEGATION, "after", min_len=3)
        for term in extra_terms:
            if isinstance(term, str) and term.strip():
                b.add(term, TERM, "custom")
        self._rules: tuple[tuple[str, tuple[frozenset[str], ...], frozenset[str]], ...] = ()
        if concepts:
            for name, words in concepts.get("concepts", {}).items():
                for word in words:
                    b.add(word, CONCEPT, name, min_len=2)
            self._rules = tuple(
                (str(rule["category"]), tuple(frozenset(alt) for alt in rule["all"]), frozenset(rule.get("none", ())))
                for rule in concepts.get("rules", ()))
        self.languages = tuple(langs)
        # A governor word that is an ordinary word of another language ("ile": how many in Polish, with in
        # Turkish) governs only the noun right next to it.
        word_langs: dict[str, set[str]] = {}
        for lang, words in lang_words.items():
            for word in words:
                word_langs.setdefault(word, set()).add(lang)
        weak_governors = {key for key, owners in governor_langs.items() if word_langs.get(key, owners) - owners}
        for key in weak_governors:
            if key in b.entries:
                b.entries[key] = [e if e.kind != GOVERNOR else e._replace(weak=True) for e in b.entries[key]]
        payloads: dict[str, tuple[Any, ...]] = {}
        concept_bits: dict[str, int] = {}
        term_keys = {k for k, es in b.entries.items() if any(e.kind == TERM and e.exact is None for e in es)}
        for key, entries in b.entries.items():
            if key in term_keys:
                # A phrase that is a secret noun somewhere stays one: its other senses are told
                # apart by context (governors, postal words), not by dropping it.
                entries = [e for e in entries if e.kind not in (BENIGN, GOVERNOR)]
            # The flag says whether the key can name a secret at all (most hits in ordinary text cannot).
            # How much a hit on this key can matter: most keys found in ordinary text name nothing secret.
            # Concepts count only together (a rule needs two or more): the pre-check tests the rules itself.
            strong = any(e.kind in _SECRET_KINDS and not e.weak for e in entries)
            weak = any(e.kind == TERM and e.weak for e in entries)
            concept = any(e.kind in (CONCEPT, CUE) for e in entries)
            flag = _STRONG if strong else _WEAK if weak else _CONCEPTS_ONLY if concept else 0
            # Nouns of CJK and Hangul are short: three characters are a word ("호번밀비" is "비밀번호" backwards).
            backwards = any(e.kind in (TERM, PHRASE) and not e.weak
                            and (e.length >= 5 or (e.length >= 3 and _CJK_OR_HANGUL.fullmatch(key) is not None))
                            for e in entries)
            labels = 0  # the concepts of the key, one bit each (the pre-check tests rules on bits)
            for e in entries:
                if e.kind == CONCEPT:
                    labels |= concept_bits.setdefault(e.label, 1 << len(concept_bits))
            cue_phrases = tuple(e.label for e in entries if e.kind == CUE)
            payloads[key] = (flag, tuple(entries), backwards, labels, cue_phrases, key)
        self._payload_of = payloads
        rule_masks = [
            tuple(sum(concept_bits.get(c, 0) for c in alt) for alt in needs) for _, needs, _ in self._rules]
        # Every rule needs one of its rarer concepts: without any of them, no rule can fire. The rules are
        # filed under each bit of that anchor, so a text's concepts lead only to the rules they can fire.
        self._anchor_mask = 0
        self._rules_by_bit: dict[int, list[tuple[int, ...]]] = {}
        for masks in rule_masks:
            anchor = min(masks, key=lambda m: (bin(m).count("1"), m)) if masks else 0
            self._anchor_mask |= anchor
            while anchor:
                bit = anchor & -anchor
                anchor ^= bit
                self._rules_by_bit.setdefault(bit, []).append(masks)
        self._index()
        self._cues = b.cues
        self._typo_terms = b.typo_terms
        self._typo_term_set = frozenset(b.typo_terms)
        # Words people really write are read as themselves, never as a misspelt secret noun (`real_words`:
        # generated from word-frequency lists, see scripts/lexicon_real_words.py).
        # ("~team": a short real word, read as itself only beside the other words of a noun of several words,
        # where short words are corrected too; elsewhere short words are left to the spelling readings.)
        real = frozenset(real_words)
        self._known = frozenset(b.known_words | _COMMON_WORDS | {w for w in real if not w.startswith("~")})
        self._short_real = frozenset(w[1:] for w in real if w.startswith("~"))
        self._term_words = frozenset(b.term_words)
        word_deletes: dict[str, str] = {}
        for word in sorted(b.term_words):
            for i in range(len(word)):
                word_deletes.setdefault(word[:i] + word[i + 1:], word)
        self._word_deletes = word_deletes
        self._long_by_first: dict[tuple[str, int], list[str]] = {}
        for word in sorted(b.term_words):
            if len(word) >= _TYPO2_MIN or (len(word) >= _TYPO_MIN - 1 and _INDIC_MARK.search(word) is not None):
                self._long_by_first.setdefault((word[0], len(word)), []).append(word)
        self._concepts_by_first: dict[tuple[str, int], list[str]] = {}
        for key, entries in b.entries.items():
            if len(key) >= _GOVERNOR_TYPO_MIN and _wordlike(key) and any(
                    e.kind == CONCEPT and not e.internal for e in entries):
                self._concepts_by_first.setdefault((key[0], len(key)), []).append(key)
        self._concept_fix_cache: dict[str, str | None] = {}
        self._phrases_by_first: tuple[Mapping[str, _PhrasesOf], list[str]] | None = None
        # The secret nouns of several words ("nomor kartu") by each word and the word beside it ("kartu<nomor"),
        # with the word's place in the noun: a label that holds all of a noun's words, one misspelt ("nomor
        # krtu", "mot de pasee"), is that noun; the misspelt word is looked up with its neighbour as written.
        beside: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for key, entries in b.entries.items():
            term = next((e for e in entries if e.kind == TERM and not e.weak and e.exact is None and e.internal), None)
            if term is None or not key.isalpha():
                continue
            phrase = _key_words(key, term.internal)
            for place, word in enumerate(phrase):
                entry = (phrase, place)
                if place:
                    beside.setdefault(f"{word}<{phrase[place - 1]}", []).append(entry)
                if place + 1 < len(phrase):
                    beside.setdefault(f"{word}>{phrase[place + 1]}", []).append(entry)
        self._phrase_beside: dict[str, tuple[tuple[tuple[str, ...], int], ...]] = {
            k: tuple(v) for k, v in beside.items()}
        self._phrase_near = _near_index(self._phrase_beside)
        self._undotted_cache: dict[str, str | None] = {}
        self._phrase_typo_cache: dict[str, str | None] = {}
        # First four letters of the secret nouns of several words: a whole label is only checked against them.
        heads: dict[str, set[int]] = {}
        for key, es in b.entries.items():
            if any(e.kind == TERM and e.internal for e in es):
                heads.setdefault(key[:4], set()).update(range(len(key) - 2, len(key) + 3))
        self.phrase_heads: Mapping[str, frozenset[int]] = {h: frozenset(n) for h, n in heads.items()}
        self._concept_stems: dict[str, list[str]] = {}
        for key, entries in b.entries.items():
            if len(key) >= _TYPO_MIN and _wordlike(key) and any(
                    e.kind == CONCEPT and e.stem and not e.internal for e in entries):
                self._concept_stems.setdefault(key[0], []).append(key)
        self._governors_by_first: dict[tuple[str, int], list[str]] = {}
        for key, entries in b.entries.items():
            if len(key) >= _GOVERNOR_TYPO_MIN and _wordlike(key) and key not in self._term_words and any(
                    (e.kind == BENIGN or (e.kind == GOVERNOR and e.label in ("name", "count", "describe")))
                    and not e.weak and not e.internal for e in entries):
                self._governors_by_first.setdefault((key[0], len(key)), []).append(key)
        self._word_edges = frozenset(w[:2] for w in b.term_words) | frozenset(w[-2:] for w in b.term_words)
        self._abbreviable = tuple(sorted(
            (k, c) for k, c in b.typo_terms.items() if k.isascii() and c in _ABBREVIATED_CATEGORIES))
        self._correction_cache: dict[str, str | None] = {}
        # Single words of the generic "secret" family ("secret", "geheim", "ರಹಸ್ಯ"): they also qualify nouns.
        self._adjectives = frozenset(b.generic_words)

    def _index(self) -> None:
        """The automata over the payloads' keys (also rebuilt when a lexicon is read back from the cache:
        ahocorasick-rs automata do not pickle, and take a fraction of the build to make)."""
        payloads = self._payload_of
        # One automaton of every key (ahocorasick-rs: measured faster here than pyahocorasick, and a third
        # of its memory); hits come back as indexes into the payload list.
        self._payload_list: list[tuple[Any, ...]] = list(payloads.values())
        self._matcher = ahocorasick_rs.AhoCorasick(list(payloads) or ["\x00"])
        # The pre-check reads with ahocorasick-rs, several times faster on text that holds nothing:
        # one automaton of the keys that always need the full scan, one of the keys that may.
        strong_keys, soft_keys, soft_payloads, backwards_keys = [], [], [], []
        for key, payload in payloads.items():
            flag, _, backwards, _, _, _ = payload
            if flag == _STRONG:
                strong_keys.append(key)
            elif flag:
                soft_keys.append(key)
                soft_payloads.append(payload)
            if backwards:
                backwards_keys.append(key)
        self._soft_payloads: list[Any] = soft_payloads
        # All three in one automaton for the form-level pre-check (backwards keys reversed: a reversed key
        # in the text is the key in the text read backwards): one pass instead of three.
        self._fast_all = ahocorasick_rs.AhoCorasick(
            [*strong_keys, *soft_keys, *(k[::-1] for k in backwards_keys)] or ["\x00"])
        self._fast_soft_from = len(strong_keys)
        self._fast_backwards_from = len(strong_keys) + len(soft_keys)

    _DERIVED: Final = frozenset({"_payload_list", "_matcher", "_soft_payloads", "_fast_all", "_phrase_near"})

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._DERIVED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._index()
        self._phrase_near = _near_index(self._phrase_beside)

    # -- public --------------------------------------------------------------

    def term_category(self, squashed_word: str) -> str | None:
        """Category of a whole squashed word, if it is a term (used to rejoin split words)."""
        for word in dict.fromkeys((squashed_word, squashed_word.translate(_LEET))):
            payload = self._payload_of.get(word)
            if payload:
                for entry in payload[1]:
                    if entry.kind == TERM and not entry.weak and entry.exact is None:
                        return str(entry.label)
        return None

    def head_is_secret(self, identifier: str) -> bool:
        """Whether the head (last) noun of a property name is a secret noun: `new_password`, `pin_code`,
        `apiKeyValue` yes; `password_issue`, `psk_city` no (the secret word only modifies the head)."""
        words = [w for w in words_of(identifier) if not w.isdigit()]
        while len(words) > 1 and words[-1] in _HEAD_TAILS:
            words.pop()
        if len(words) <= 1:
            return True
        squashed = "".join(words)
        for last, (_, entries, *_) in self._hits(squashed):
            if last + 1 == len(squashed) and any(e.kind in (TERM, PHRASE) for e in entries):
                return True
        return self._correct(words[-1], True) is not None

    def correction(self, word: str) -> str | None:
        """The secret noun this folded label word would be read as, if it is misspelt."""
        return self._correct(word, True)

    def misreads(self, word: str) -> bool:
        """Whether the spelling readings would take this folded word for a misspelt secret noun, description word
        or governor ("nedan", below in Swedish, for Turkish "neden", why), or for a misspelt word of a noun of
        several words (scripts/lexicon_real_words.py keeps the real words among them)."""
        return word not in self._known and _wordlike(word) and (
            self._misspelt(word, True) or bool(self._phrase_targets(word)) or self._governor_fixed(word) is not None)

    def near_noun_word(self, word: str) -> bool:
        """Whether this folded word, unknown, is one edit from a word of a secret noun of several words (for
        scripts/lexicon_real_words.py)."""
        return word not in self._known and word not in self._short_real and _wordlike(word) \
            and bool(self._phrase_targets(word))

    def _misspelt(self, word: str, label: bool) -> bool:
        """A word the spelling readings put right into a secret noun or a description word."""
        return self._correct(word, label) is not None or self._concept_fix(word) is not None

    def head_governs(self, identifier: str) -> bool:
        """Whether a property name of several words ends in a governor: `key_label`, `token_nickname`,
        `codes_left_count` hold a name or a count, never the secret itself."""
        words = [w for w in words_of(identifier) if not w.isdigit()]
        while len(words) > 1 and words[-1] in _HEAD_TAILS:
            words.pop()
        return len(words) >= 2 and self.scan(words[-1], False).governed

    def concepts_in(self, text: str) -> frozenset[str]:
        """The description concepts (`_concepts.json`) whose words stand in `text` ("type_in", "sent")."""
        squashed = squash(normalize_text(text))
        return frozenset(entry.label for _, (_, entries, *_) in self._hits(squashed) for entry in entries
                         if entry.kind == CONCEPT)

    def may_name_secret(self, text: str) -> bool:
        """False when no part of `text` can name a secret: no phrase, no misspelt term, no leetspeak,
        nothing reversed. A cheap pre-check over all of a form's texts joined; a True needs the full
        `scan` per text."""
        if not text.isascii():
            capitals = ascii_capitals(text)
            if capitals != text and self.may_name_secret(capitals):
                return True
        folded = normalize_text(text)
        if _may_be_leet(folded) or _key_kind_inside(folded):
            return True
        if "." in folded and _DOT_BEFORE.search(folded) and self._undotted(folded) is not None:
            return True  # words cut short spell a noun ("Resp. a su preg. de seg.")
        squashed = squash(folded)
        soft_from, backwards_from = self._fast_soft_from, self._fast_backwards_from
        payloads = self._soft_payloads
        hits = []
        backwards = False
        for index, _, end in self._fast_all.find_matches_as_indexes(squashed, overlapping=True):
            if index < soft_from:
                return True
            if index < backwards_from:
                hits.append((end - 1, payloads[index - soft_from]))
            else:
                backwards = True
        return self._needs_scan(folded, squashed, hits, True, backwards)

    def label_misspelt(self, label: str) -> bool:
        """Whether a short label of several words may be a secret noun misspelt across them ("mot de
        pase"), or cut short word by word ("Súkr. kľúč"): the form-level pre-check reads all texts joined, so it
        cannot tell."""
        if "." in label and self._undotted(_PARENS.sub(" ", normalize_text(label))) is not None:
            return True
        if not (_TYPO_MIN <= len(label) <= 2 * _WHOLE_LABEL_MAX):
            return False
        if label.isascii() and len(label) - label.count(" ") not in self.phrase_heads.get(
                label[:5].replace(" ", "")[:4].lower(), ()):
            return False  # the common case, ruled out before folding
        folded = normalize_text(label)
        spaceless = folded.replace(" ", "")  # cheaper than `squash`, enough to rule most labels out
        return len(spaceless) in self.phrase_heads.get(spaceless[:4], ()) and self._whole_label_typo(
            folded, squash(folded))

    def _hits(self, squashed: str) -> list[tuple[int, Any]]:
        """(index of the last character, payload) of every key in `squashed`, overlapping ones too."""
        payloads = self._payload_list
        return [(end - 1, payloads[index])
                for index, _, end in self._matcher.find_matches_as_indexes(squashed, overlapping=True)]

    def _reads_backwards(self, squashed: str) -> bool:
        """Whether a secret noun of five letters or more shows in `squashed` read backwards."""
        return any(index >= self._fast_backwards_from
                   for index, _, _ in self._fast_all.find_matches_as_indexes(squashed, overlapping=True))

    def _rule_fires(self, concepts: int) -> bool:
        """Whether some rule has all its concepts (bits; blockers are left to the full scan, text by text)."""
        anchored = concepts & self._anchor_mask
        while anchored:
            bit = anchored & -anchored
            anchored ^= bit
            for needs in self._rules_by_bit[bit]:  # plain loops: this runs on most forms, generators cost 3x
                for alt in needs:
                    if not alt & concepts:
                        break
                else:
                    return True
        return False

    def _needs_scan(self, folded: str, squashed: str, hits: list[tuple[int, Any]], label: bool,
                    backwards: bool | None = None) -> bool:
        bounds: set[int] | None = None
        concepts = 0
        cues: dict[str, set[str]] | None = None
        for last, (flag, entries, _, labels, cue_phrases, key) in hits:
            if flag == _STRONG:
                return True
            concepts |= labels
            if cue_phrases:
                if cues is None:
                    cues = {}
                for pid in cue_phrases:
                    cues.setdefault(pid, set()).add(key)
            if flag == _WEAK:
                # A short acronym ("tin", "ni") is inside many words; only a whole word can be one.
                if bounds is None:
                    bounds = {0, *accumulate(map(len, split_words(folded)))}
                if last + 1 in bounds and last + 1 - entries[0].length in bounds:
                    return True
        if concepts & self._anchor_mask and self._rule_fires(concepts):
            return True  # a description of a secret, loosely spread ("six digits, which we sent you")
        if cues is not None and any(len(keys) >= len(self._cues[pid]) for pid, keys in cues.items()
                                    if len(keys) > 1):
            return True  # a drafted description, by its telling words
        if backwards if backwards is not None else self._reads_backwards(squashed):
            return True  # perhaps written backwards (the full scan decides)
        unknown = set(_letter_runs(folded)) - self._known
        if any(self._misspelt(word, label) for word in unknown):
            return True
        if any(len(word) >= 3 and word not in self._short_real and self._phrase_targets(word) for word in unknown) \
                and self._phrase_typo(folded) is not None:
            return True
        # A label misspelt across its words ("mot de pase"): the whole label against every term.
        return label and self._whole_label_typo(folded, squashed)

    def _whole_label_typo(self, folded: str, squashed: str) -> bool:
        """A short label of several words misspelt as a whole ("mot de pase")."""
        return (_TYPO_MIN <= len(squashed) <= _WHOLE_LABEL_MAX and len(squashed) in self.phrase_heads.get(
            squashed[:4], ())
                and " " in folded.strip() and self._correct(squashed, True) is not None)

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one Lexicon per policy, kept for the process
    def scan(self, text: str, prose: bool) -> TextScan:
        """Categories `text` asks for and those it only mentions. Never raises on str input."""
        folded = normalize_text(camel_marked(undo_overrides(text)))
        readings = [folded]
        # Capital look-alikes inside Latin words read as the capitals they imitate ("PΙΝ"): one more reading.
        capitals = ascii_capitals(text) if not text.isascii() else text
        if capitals is not text and capitals != text:
            capital_reading = normalize_text(camel_marked(capitals))
            if capital_reading != folded and self.may_name_secret(capitals):
                readings.append(capital_reading)
        native = native_capitals(text)
        if native is not text and native != text:  # ("KΩΔIKOΣ ANAKTHΣHΣ": the Latin capitals read as Greek ones)
            native_reading = normalize_text(camel_marked(native))
            if native_reading != folded and self.may_name_secret(native):
                readings.append(native_reading)
        if "." in folded and (not prose or _cuts_words(text)):
            undotted = self._undotted(_PARENS.sub(" ", folded))  # (a parenthesis annotates: read apart)
            if undotted is not None:
                readings.append(undotted)  # "Súkr. kľúč", "Gl. klj.": the cut words put back
        if _key_kind_inside(folded):
            # A key's kind between the words of a noun ("soukromý GPG klíč", "private PGP key").
            readings.append(_KEY_KIND_INSIDE.sub(" ", folded))
        if _may_be_leet(folded):
            leet = _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), folded)
            if leet != folded:
                readings.append(leet)
            if "1" in folded:
                as_l = _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET_L).translate(_LEET), folded)
                readings.append(as_l)
                # "1" for "i" in one word and for "l" in the next ("Pr1vé-s1eut3l", "k1ucz 4P1"): each word as
                # the letter that makes it a word.
                mixed = _LEET_WORD.sub(self._leet_word, folded)
                if mixed != leet and mixed != as_l:
                    readings.append(mixed)
        elif len(readings) == 1:
            squashed = squash(folded)
            hits = self._hits(squashed)
            if not self._needs_scan(folded, squashed, hits, not prose):
                # The common case: nothing in the text can name a secret.
                return _GOVERNED if self._whole_governor(folded, hits, text) else NOTHING
        backwards = self._backwards(folded.replace(CAMEL_MARK, "") if CAMEL_MARK in folded else folded)
        if backwards is not None:
            readings.append(backwards)
        glued_readings = _glued(folded)
        # A word cut by a separator leaves fragments ("סועד-ים"): only the glued readings are spelled right.
        # A text with no Latin letter is never corrected into a Latin word: folding spells "Поле" (a field)
        # "noлe", one letter from Portuguese "nome" (a name), but nobody misspells across scripts.
        latin = text.isascii() or _LATIN_LETTER.search(text) is not None
        corrected = self._corrected(folded, not prose, latin) if not glued_readings else \
            self._phrase_typo(folded)  # ("API-kucs": the words as written)
        if corrected is not None and " " not in corrected.strip():
            readings.append(corrected)  # a whole label spelled right as one noun ("mot de pass")
            corrected = None
        # Readings from here on are judged on their own (a misspelt or cut word says nothing as written).
        first_glued = len(readings)
        if corrected is not None:
            readings.append(corrected)
        for glued in glued_readings:
            # Separators inside words ("pass-word", "p.i.n", "_Sala_uksen **pääa**vain", "リカ-バリー"):
            # the text read with them gone, and spelled right.
            readings.append(glued)
            corrected = self._corrected(glued, not prose, latin)
            if corrected is not None:
                readings.append(corrected)
        original = undo_overrides(text)
        asked: set[str] = set()
        about: set[str] = set()
        governed = False
        concepts: set[str] = set()
        sense: set[str] = set()
        plain_about: set[str] = set()
        unask: set[str] = set()
        for number, reading in enumerate(readings):
            if number > first_glued and glued_readings and reading == glued_readings[-1] and (asked or about):
                continue  # short pieces joined: a last resort, when nothing else was read
            # A parenthesis annotates what stands before it: read on its own, and the rest without it.
            text = _PARENS.sub(" ", reading) if "(" in reading or "（" in reading else reading
            clauses = self._negated_lists(text) if prose and ("," in text or "،" in text or "、" in text) else \
                _CLAUSES.split(text)
            found: set[str] = set()
            is_glued = number >= first_glued
            own_about: set[str] = set() if number > 0 else about
            own_concepts: set[str] = set() if is_glued else concepts
            for clause in clauses:
                if clause:
                    governed |= self._scan_clause(clause, prose, found, own_about, original, own_concepts, sense)
            # A short annotation takes the sense of the noun it annotates: "never type your citizen number (BSN)
            # here", "never write the security code (CVV)" ask for neither. Where the text asks for something
            # else, only an annotation of the same kind follows the noun.
            annotated = own_about - found if found else own_about
            for clause in _PARENS.findall(reading):
                if clause and len(clause.split()) <= 3:  # a noun annotated; a sentence in brackets is read alone
                    inner: set[str] = set()
                    governed |= self._scan_clause(clause, prose, inner, own_about, original, own_concepts, sense)
                    follows = inner if annotated and not found else inner & annotated
                    found |= inner - follows
                    own_about |= follows
                elif clause:
                    governed |= self._scan_clause(clause, prose, found, own_about, original, own_concepts, sense)
            if number == 0:
                plain_about = set(about)
                asked |= found
            elif is_glued:
                # Separators gone, the words read differently: what this reading says about them counts.
                found |= self._described(own_concepts, own_about)
                asked |= found - own_about
                about |= own_about
            else:
                # Another reading (leetspeak undone, backwards) adds asks, but never undoes a mention the text
                # as written makes ("Название ключа API": "з" folds to "3", not leet); what it only mentions
                # ("L4b3l for this API key") is not asked either.
                asked |= found - plain_about
                unask |= own_about - found
                about |= own_about
        if unask & asked:
            unasked = unask & asked
            asked -= unasked
            about |= unasked
        asked |= self._described(concepts, about)
        if asked:
            fixed = self._governor_fixed(folded)
            if fixed is not None:
                # A misspelt governor still governs: what the text with it spelled right only mentions is
                # not asked for.
                fixed_found: set[str] = set()
                fixed_about: set[str] = set()
                for clause in _CLAUSES.split(fixed):
                    if clause:
                        governed |= self._scan_clause(clause, prose, fixed_found, fixed_about, original, set(), set())
                # (Not a security question's answer: the question's own words are read as misspelt governors
                # too easily, "kā sauca" as "saura", a count.)
                unasked = (asked & fixed_about) - fixed_found - {"security_answer"}
                asked -= unasked
                about |= unasked
        if asked or about or governed:
            return TextScan(frozenset(asked), frozenset(about - asked), governed, frozenset(sense))
        return NOTHING

    def _leet_word(self, match: re.Match[str]) -> str:
        as_i = match.group(0).translate(_LEET)
        if as_i in self._known:
            return as_i
        as_l = match.group(0).translate(_LEET_L).translate(_LEET)
        return as_l if as_l in self._known else as_i

    def _negated_lists(self, text: str) -> list[str]:
        """The clauses of `text` (as `_CLAUSES.split`), a list that runs on after a negated clause's comma
        negated too: "we will never ask for your card PIN, security code or card number" negates all three
        (the negation's words are read again before the list). A clause that asks itself ("..., type it
        below") runs on no negation."""
        out: list[str] = []
        negation: str | None = None
        start = 0
        delimiter = ""
        for match in (*_CLAUSES.finditer(text), None):
            clause = text[start:match.start()] if match is not None else text[start:]
            if negation and delimiter in _LIST_COMMAS and clause and not self._word_hit(clause, CONCEPT, "type_in"):
                out.append(negation + " " + clause)
            else:
                out.append(clause)
                negation = self._word_hit(clause, NEGATION, "negation") if clause else None
            if match is not None:
                start, delimiter = match.end(), match.group(0).strip()
        return out

    def _word_hit(self, clause: str, kind: int, label: str) -> str | None:
        """The words of `clause` that hold a key of `kind` and `label`, aligned as the full scan aligns a
        phrase ("go" inside "códigos" is no verb, "a la" is no "ala"); None if there is none."""
        found = [(last + 1 - entry.length, last + 1, entry.internal) for last, (_, entries, *_) in self._hits(
            squash(clause)) for entry in entries if entry.kind == kind and entry.label == label]
        if not found:
            return None
        words = split_words(clause)
        ends = list(accumulate(map(len, words)))
        starts = [0, *ends[:-1]]
        for start, end, internal in found:
            if start in starts and (end in ends or kind == CONCEPT) and {
                    b - start for b in ends if start < b < end} <= internal:
                return " ".join(words[starts.index(start):bisect_right(starts, end - 1)])
        return None

    def _described(self, concepts: set[str], about: set[str]) -> set[str]:
        """A description spread over clauses: "Six digits, which we just sent you by SMS"."""
        if not concepts:
            return set()
        return {category for category, needs, blockers in self._rules
                if all(not alt.isdisjoint(concepts) for alt in needs) and blockers.isdisjoint(concepts)
                and category not in about}

    @staticmethod
    def _whole_governor(folded: str, hits: list[tuple[int, Any]], original: str) -> bool:
        """Whether a strong governor stands as whole words in the text (one that names, counts, chooses)."""
        bounds: list[int] | None = None
        for last, (_, entries, *_, key) in hits:
            for entry in entries:
                if entry.kind == GOVERNOR and not entry.weak and entry.label != "choose" and (
                        entry.exact is None or _written(entry.exact, original)):
                    if bounds is None:
                        bounds = [0, *accumulate(map(len, split_words(folded)))]
                    end = last + 1
                    if entry.unspaced:
                        # A script without spaces has no word bounds to check ("キーの名前"), but a governor
                        # sharing its last letter with a described word is read as that word ("三個數字").
                        start = end - entry.length
                        if not any(start < e_last + 1 - e.length < end <= e_last
                                   for e_last, (_, e_entries, *_) in hits for e in e_entries
                                   if e.kind in (CONCEPT, TERM)):
                            return True
                        continue
                    index = bisect_right(bounds, end - 1)
                    rest = bounds[index] - end if index < len(bounds) else 0
                    # A long governor may take a short ending; outside Latin letters, a one-letter one too
                    # (Kurdish "ناوی": the name of).
                    if end - entry.length in bounds and (rest == 0 or (entry.length >= 5 and rest <= 2) or (
                            entry.length >= 3 and rest == 1 and not key.isascii())):
                        return True
        return False

    def _backwards(self, folded: str) -> str | None:
        """The text read backwards, when that reads as words and the text as written does not."""
        words = _letter_runs(folded)
        if not words:
            return None
        known = self._known
        forward = sum(w in known for w in words)
        backward = sum(w[::-1] in known for w in words)
        if (backward >= 2 and backward > 2 * forward) or (len(words) == 1 and backward and not forward
                                                           and len(words[0]) >= 4):
            return folded[::-1]
        if UNSPACED.search(folded) and not forward:
            # Scripts without spaces have no words to count: reversed if a secret noun reads backwards.
            squashed = squash(folded)
            if self._reads_backwards(squashed) and not any(
                    index < self._fast_soft_from
                    for index, _, _ in self._fast_all.find_matches_as_indexes(squashed, overlapping=True)):
                return folded[::-1]
        return None

    def _concept_fix(self, word: str) -> str | None:
        """The description word (digits, wallet, sent, ...) that `word` misspells, if any: one edit in words of
        five letters or more, two in words of eight or more, the first letter kept."""
        cache = self._concept_fix_cache
        if word in cache:
            return cache[word]
        fix = None
        size = len(word)
        if size >= _GOVERNOR_TYPO_MIN and word not in self._known and _wordlike(word):
            edits = 2 if size >= _TYPO2_MIN else 1
            best = edits + 1  # the nearest word wins: "diigitos" is "digitos" (one edit), not "digitas" (two)
            for length in range(size - edits, size + edits + 1):
                for target in self._concepts_by_first.get((word[0], length), ()):
                    if edits == 1 or target[-1] == word[-1]:
                        distance = OSA.distance(word, target, score_cutoff=best - 1)
                        if distance < best:
                            fix, best = target, distance
                            if best == 1:
                                break  # (nothing nearer: the word itself is no concept word)
                if best == 1:
                    break
            if best > 1:
                # A stem ("geldautomat*", "dígito*"): the word's beginning misspells it ("geldautomaetn", a letter
                # more in "diigitos").
                for target in self._concept_stems.get(word[0], ()):
                    # (A short stem only takes a letter too many: any other edit makes ordinary words of it.)
                    long_stem = len(target) >= _TYPO2_MIN
                    cuts = (len(target), len(target) + 1, len(target) - 1) if long_stem else (len(target) + 1,)
                    for cut in cuts:
                        # (Only an ending may follow: a long tail is another word of a compound, "Bankkonto-passwrt";
                        # after a short stem, a short ending: "dostavljača", a courier, is no misspelt "dostal*".)
                        if cut < size <= cut + (4 if long_stem else 2) \
                                and OSA.distance(word[:cut], target, score_cutoff=1) <= 1:
                            fix, best = target + word[cut:], 1
                            break
                    if best == 1:
                        break
        if len(cache) > 50000:
            cache.clear()
        cache[word] = fix
        return fix

    def _governor_fixed(self, folded: str) -> str | None:
        """The text with misspelt governor and other-sense words put right ("Lbael for this API key",
        "Pubilc key"), or None: a misspelt "label" still asks for a label."""
        changed = False
        out = []
        for word in _SEPARATORS.split(folded):
            fix = None
            if len(word) >= _GOVERNOR_TYPO_MIN and word not in self._known and _wordlike(word):
                for length in (len(word) - 1, len(word), len(word) + 1):
                    for target in self._governors_by_first.get((word[0], length), ()):
                        if OSA.distance(word, target, score_cutoff=1) <= 1:
                            fix = target
                            break
                    if fix is not None:
                        break
            changed |= fix is not None
            out.append(fix or word)
        return " ".join(out) if changed else None

    def _corrected(self, folded: str, label: bool, latin: bool = True) -> str | None:
        """The text with misspelt or abbreviated words of secret nouns put right ("pasword", "pswd")."""
        fixed = self._phrase_typo(folded)  # (in prose too: the noun's other words stand beside it)
        if fixed is not None:
            return fixed
        changed = False
        out = []
        for word in _SEPARATORS.split(folded):
            fix = (self._correct(word, label) or self._concept_fix(word)
                   or (self._compound_tail(word) if label else None)) if word else None
            if fix is not None and _across_scripts(word, fix, latin):
                fix = None
            if fix is not None:
                changed = True
                out.append(fix)
            else:
                out.append(word)
        if label and not changed:
            # A label misspelt across its words ("mot de pass"): the whole label against every term.
            squashed = _SEPARATORS.sub("", folded)
            fix = self._correct(squashed, label) if len(squashed) >= _TYPO_MIN else None
            if fix is not None and not _across_scripts(squashed, fix, latin):
                return self._spaced(fix)
        if not changed:
            return None
        text = " ".join(out)
        # A long word put right may leave a short one misspelt beside it ("obnovitvni stavk").
        return self._phrase_typo(text) or text

    def _phrase_targets(self, word: str) -> tuple[str, ...]:
        """The words of secret nouns of several words that `word` misspells by one edit (answers kept: unknown
        words recur, "indoor", a brand)."""
        cache = self._correction_cache
        key = "\x02" + word
        hit = cache.get(key, "")
        if hit == "":
            near = self._phrase_near
            found = {t for v in (word, *(word[:i] + word[i + 1:] for i in range(len(word))))
                     for t in near.get(v, "").split("\x00") if t and t != word
                     and OSA.distance(word, t, score_cutoff=1) <= 1}
            hit = cache[key] = "\x00".join(sorted(found)) or None
        return tuple(hit.split("\x00")) if hit else ()

    def _phrase_typo(self, folded: str) -> str | None:
        """The text with a misspelt word of a secret noun of several words put right, where the noun's other
        words stand beside it as written, or misspelt too ("nomor krtu", "súkromný kúč", "mot de pasee"): a
        short word is corrected only there (alone, one letter turns too many short words into secret nouns).
        Kept per text: the pre-check and the scan of one text both ask."""
        cache = self._phrase_typo_cache
        if folded in cache:
            return cache[folded]
        if len(cache) > 4096:
            cache.clear()
        cache[folded] = result = self._phrase_typo_uncached(folded)
        return result

    def _phrase_typo_uncached(self, folded: str) -> str | None:
        words = [w for w in _SEPARATORS.split(folded) if w]
        if len(words) < 2:
            return None
        beside, known, short_real = self._phrase_beside, self._known, self._short_real
        for at, word in enumerate(words):
            if len(word) < 3 or word in known or word in short_real or not _wordlike(word):
                continue  # (only a word no dictionary knows can be misspelt: the common case ends here)
            for target in self._phrase_targets(word):
                candidates = [*(beside.get(f"{target}<{words[at - 1]}", ()) if at else ()),
                              *(beside.get(f"{target}>{words[at + 1]}", ()) if at + 1 < len(words) else ())]
                for phrase, place in candidates:
                    start = at - place
                    if start < 0 or start + len(phrase) > len(words):
                        continue
                    exact = 0
                    for written, right in zip(words[start:start + len(phrase)], phrase, strict=True):
                        if written == right:
                            exact += 1
                        elif written is not word and (len(written) < 3 or written in known or written in short_real
                                                      or OSA.distance(written, right, score_cutoff=1) > 1):
                            break
                    else:
                        if exact:
                            return " ".join([*words[:start], *phrase, *words[start + len(phrase):]])
        return None

    def _undotted(self, folded: str) -> str | None:
        """A short label of abbreviations ending in dots ("súkr. kľúč", "api atsl.", "tikl. kodi") with each cut
        word put back, when the words then spell a secret noun of the lexicon word for word."""
        cache = self._undotted_cache
        if folded in cache:
            return cache[folded]
        if len(cache) > 4096:
            cache.clear()
        result = self._undot(folded)
        if result is None and len(_DOTTED_TOKEN.findall(folded)) > 8:
            # A long text: each clause on its own ("Resp. a su preg. de seg.: ¿nombre de su 1ª mascota?").
            clauses = [c for c in _UNDOT_CLAUSES.split(folded) if c.strip()]
            undone = [self._undot(c) for c in clauses] if len(clauses) > 1 else []
            if any(u is not None for u in undone):
                result = ", ".join(u if u is not None else c for u, c in zip(undone, clauses, strict=True))
        cache[folded] = result
        return result

    def _undot(self, folded: str) -> str | None:
        tokens = _DOTTED_TOKEN.findall(folded)
        if not 1 <= len(tokens) <= 8:
            return None
        words = [t.rstrip(".") for t in tokens]
        cut = [t.endswith(".") for t in tokens]
        if not any(cut):
            return None
        by_first, firsts = self._term_phrases()

        def matching(word: str, is_cut: bool, sorted_words: list[str]) -> list[str]:
            # The noun words `word` is, or begins when cut (a sorted range: no scan of the whole lexicon).
            if not is_cut:
                low = bisect_left(sorted_words, word)
                return sorted_words[low:low + 1] if sorted_words[low:low + 1] == [word] else []
            low = bisect_left(sorted_words, word)
            return sorted_words[low:bisect_left(sorted_words, word + "\U0010ffff", low)]

        for start, first in enumerate(words):
            # A noun of one word needs five letters of a cut word ("pass." could be anything).
            one_word = not cut[start] or len(first) >= 5
            if not one_word and start + 1 == len(words):
                continue
            for head in matching(first, cut[start], firsts):
                singles, by_second, seconds = by_first[head]
                candidates = list(singles) if one_word else []
                if start + 1 < len(words):
                    for second in matching(words[start + 1], cut[start + 1], seconds):
                        candidates.extend(by_second[second])
                for phrase in candidates:
                    end = start + len(phrase)
                    if end > len(words) or not any(cut[start:end]):
                        continue
                    # A cut word is the start of the noun's word, two letters or more (five for a noun of one
                    # word: "pass." could be anything).
                    if all(w == p or (c and len(p) > len(w) >= (2 if len(phrase) > 1 else 5) and p.startswith(w))
                           for w, p, c in zip(words[start:end], phrase, cut[start:end], strict=True)):
                        return " ".join([*words[:start], *phrase, *words[end:]])
        return None

    def _term_phrases(self) -> tuple[Mapping[str, _PhrasesOf], list[str]]:
        """The words of every strong secret noun by its first word: the nouns of one word, those of more by their
        second word, and those second words sorted; and the first words sorted (built on first use: labels with
        cut words are rare)."""
        if self._phrases_by_first is None:
            singles: dict[str, list[tuple[str, ...]]] = {}
            longer: dict[str, dict[str, list[tuple[str, ...]]]] = {}
            for key, (_, entries, *_) in self._payload_of.items():
                for e in entries:
                    if e.kind == TERM and not e.weak and e.exact is None and key.isalnum() and not key.isdigit():
                        phrase = _key_words(key, e.internal)
                        if len(phrase) == 1:
                            singles.setdefault(phrase[0], []).append(phrase)
                        else:
                            longer.setdefault(phrase[0], {}).setdefault(phrase[1], []).append(phrase)
                        break
            index = {head: (singles.get(head, []), longer.get(head, {}), sorted(longer.get(head, {})))
                     for head in singles.keys() | longer.keys()}
            self._phrases_by_first = (index, sorted(index))
        return self._phrases_by_first

    def _spaced(self, key: str) -> str:
        """A squashed lexicon key with its words apart again ("motdepasse" -> "mot de passe"), so that it
        meets its own entry's word bounds."""
        payload = self._payload_of.get(key)
        if payload is None:
            return key
        breaks = next((sorted(e.internal) for e in payload[1] if e.kind == TERM and e.internal), None)
        if not breaks:
            return key
        return " ".join(_key_words(key, breaks))

    def _correct(self, word: str, label: bool) -> str | None:
        """The lexicon word `word` misspells or abbreviates, if any (labels only get the bolder fixes)."""
        key = word if label else "\x00" + word
        cache = self._correction_cache
        if key in cache:
            return cache[key]
        result = None
        # Letters only; a folded Cyrillic word may hold a digit ("з" looks like "3": "pe3epbныи").
        if word not in self._known and _wordlike(word):
            size = len(word)
            if size >= _TYPO_MIN or (label and size >= 4 and not word.isascii()):
                result = self._near_word(word, label)
            elif label and (size >= 4 or not word.isascii()):
                # Short words: only two letters swapped ("sneha", "crad"); one letter more or less
                # turns too many ordinary short words into secret nouns.
                result = self._near_word(word, label, swaps_only=True)
            if result is None and label and 3 <= size <= 6 and word.isascii() and _VOWELS.isdisjoint(word):
                result = self._expand_abbreviation(word)
            if result is None and label and size > 4:
                # A compound with its "number" cut short: "Ausweisnr", "passportno", "cardnum".
                for short, full in _NUMBER_ABBREVIATIONS:
                    if word.endswith(short):
                        stem = word[: -len(short)]
                        for ending in full:
                            payload = self._payload_of.get(stem + ending)
                            if payload is not None and any(e.kind == TERM for e in payload[1]):
                                result = stem + ending
                                break
                    if result is not None:
                        break
        if len(cache) > 50000:
            cache.clear()
        cache[key] = result
        return result

    def _compound_tail(self, word: str) -> str | None:
        """A compound whose last part misspells a secret noun ("Signaturpasswrt"): the compound with that
        part put right. The part must be a long word (seven letters or more) and is fixed by one edit."""
        if len(word) < _COMPOUND_MIN or word in self._known or not _wordlike(word):
            return None
        key = "\x01" + word
        cache = self._correction_cache
        if key not in cache:
            cache[key] = self._fixed_tail(word)
        return cache[key]

    def _fixed_tail(self, word: str) -> str | None:
        for cut in range(3, len(word) - _COMPOUND_TAIL_MIN + 1):
            tail = word[cut:]
            if tail in self._known:
                return None  # an ordinary word ends the compound: it is not a misspelt secret noun
            near = self._one_edit(tail, True, False)
            if near is not None and len(near) >= _COMPOUND_TAIL_MIN:
                return word[:cut] + near
        return None

    def _near_word(self, word: str, label: bool, swaps_only: bool = False) -> str | None:
        near = self._one_edit(word, label, swaps_only)
        # An Indic letter is often two code points (a consonant and its virama, a vowel sign): dropping one
        # letter of a conjunct is two edits, in words shorter than `_TYPO2_MIN` ("पासवड" for "पासवर्ड").
        if near is None and not swaps_only and (len(word) >= _TYPO2_MIN or (
                len(word) >= _TYPO_MIN - 1 and _INDIC_MARK.search(word) is not None)):
            near = self._two_edits(word, label)
        return near

    def _one_edit(self, word: str, label: bool, swaps_only: bool) -> str | None:
        if not (word[:2] in self._word_edges or word[-2:] in self._word_edges):
            return None
        targets = self._term_words if label else self._typo_term_set
        deletes = self._word_deletes
        if swaps_only:
            for i in range(len(word) - 1):
                swapped = word[:i] + word[i + 1] + word[i] + word[i + 2:]
                if swapped in targets:
                    return swapped
            return None
        near = deletes.get(word)  # one letter missing
        if near is not None and near in targets:
            return near
        for i in range(len(word)):
            cut = word[:i] + word[i + 1:]
            if cut in targets:  # one letter too many
                return cut
            near = deletes.get(cut)  # one letter changed, or two swapped
            # (A letter cut from each can also be two edits: only when the word starts as the noun does,
            # "tookne" for "token", never "problem" for "parolem".)
            if near is not None and near in targets and near[0] in (word[0], word[1]) \
                    and (word[:2] == near[:2] or OSA.distance(word, near, score_cutoff=1) <= 1):
                return near
        return None

    def _two_edits(self, word: str, label: bool) -> str | None:
        """A long secret noun within two edits of `word` (letters missing, doubled, changed or swapped:
        "reecuuperacao", "atkmtstoken", "tratlaek"), sharing its first or its last letter with it.
        Long words only: two edits turn too many short ordinary words into secret nouns."""
        size = len(word)
        first, last = word[0], word[-1]
        for length in range(size - 2, size + 3):
            for target in self._long_by_first.get((first, length), ()):
                # The same last letter too: a compound with another last part ("noegleord", a keyword, is
                # not "noeglekort") is another word.
                if target[-1] == last and (label or target in self._typo_term_set) \
                        and OSA.distance(word, target, score_cutoff=2) <= 2:
                    return target
        return None

    def _expand_abbreviation(self, word: str) -> str | None:
        """A vowel-less abbreviation ("pswd", "tkn") of a secret noun: its letters in order, same first
        and last consonant, at least two thirds of the noun's consonants."""
        for term, _ in self._abbreviable:
            if term[0] != word[0]:
                continue
            consonants = [c for c in term if c not in _VOWELS]
            if word[-1] != consonants[-1] or 3 * len(word) < 2 * len(consonants):
                continue
            rest = iter(term)
            if all(c in rest for c in word):
                return term
        return None

    def explain(self, text: str) -> list[tuple[str, str, str]]:
        """Debugging aid for lexicon work: (matched key, kind, label) of every raw hit in `text`."""
        kinds = ("term", "reversed", "benign", "governor", "negation", "cue", "phrase", "concept")
        squashed = squash(normalize_text(camel_marked(text)).replace(CAMEL_MARK, ""))
        return [(squashed[end + 1 - e.length:end + 1], kinds[e.kind], e.label)
                for end, (_, entries, *_) in self._hits(squashed) for e in entries]

    # -- internals -------------------------------------------------------------

    def _scan_clause(self, clause: str, prose: bool, asked: set[str], about: set[str], original: str,
                     concepts: set[str], sense: set[str]) -> bool:
        hard = clause.replace(CAMEL_MARK, "") if CAMEL_MARK in clause else clause
        squashed = _SEPARATORS.sub("", hard)
        if not squashed:
            return False
        hits = self._hits(squashed)
        if not any(payload[0] for _, payload in hits):
            # Governor words alone only mark the text as being about names, counts, choices.
            return self._whole_governor(hard, hits, original)
        words = split_words(hard)
        ends = list(accumulate(len(w) for w in words))
        starts = [0, *ends[:-1]]
        bounds = set(ends)
        bounds.add(0)
        soft: set[int] = set()
        if hard is not clause:
            soft = {0, *accumulate(map(len, split_words(clause)))}
        unspaced = UNSPACED.search(squashed) is not None
        terms: list[tuple[int, int, str]] = []
        spans: dict[int, list[tuple[int, int, str]]] = {}
        attached: list[tuple[int, int, str, bool]] = []
        governor_hits: list[tuple[int, int, str, bool]] = []
        firm: set[tuple[int, int]] = set()
        listed: set[tuple[int, int]] = set()  # the spans of listed secret nouns (a description may share one)
        concept_spans: set[tuple[int, int]] = set()
        concept_words: list[tuple[int, int]] = []  # the words of descriptions found (a governor there is theirs)
        nouns: list[tuple[int, int]] = []  # those naming the thing itself ("key", "code")
        for end_index, (_, entries, *_) in hits:
            end = end_index + 1
            for entry in entries:
                start = end - entry.length
                aligned = self._aligned(entry, start, end, squashed, bounds, soft, starts, ends, words, unspaced)
                if not aligned:
                    continue
                if aligned is _ATTACHED:
                    attached.append((start, end, entry.label, entry.weak))
                    continue
                if entry.kind in (GOVERNOR, BENIGN) and not entry.internal and not unspaced \
                        and self._swallows_term(squashed, start, end, ends):
                    continue
                if entry.kind == GOVERNOR:
                    if entry.exact is None or _written(entry.exact, original):
                        governor_hits.append((start, end, entry.label, entry.weak))
                    continue
                if entry.kind in (TERM, REVERSED):
                    if entry.weak and not _acronym_shown(squashed[start:end], original):
                        continue
                    if entry.exact is not None:
                        if not _written(entry.exact, original):
                            continue
                        firm.add((start, end))  # written exactly so: no other sense applies
                    terms.append((start, end, entry.label))
                    listed.add((start, end))
                elif entry.kind == PHRASE:
                    terms.append((start, end, DESCRIBED))
                else:
                    spans.setdefault(entry.kind, []).append((start, end, entry.label))
        cue_hits = spans.get(CUE)
        if cue_hits:
            seen: dict[str, set[str]] = {}
            for s, e, label in cue_hits:
                seen.setdefault(label, set()).add(squashed[s:e])
            # A drafted description in a clause about another kind of code is none of ours ("if you received
            # a promo code by post", as the concept rules say with their blockers).
            other = any(label == "other_code" for _, _, label in spans.get(CONCEPT, ()))
            for pid, keys in seen.items():
                if keys >= set(self._cues.get(pid, ("\x00",))) and not other:
                    own = [(s, e) for s, e, label in cue_hits if label == pid]
                    terms.append((min(s for s, _ in own), max(e for _, e in own), DESCRIBED))
        concept_hits = spans.get(CONCEPT)
        if concept_hits and BENIGN in spans:
            # A word in its other sense is no part of a description ("kata kunci": a keyword, not a key).
            concept_hits = [c for c in concept_hits
                            if not any(bs <= c[0] and c[1] <= be for bs, be, _ in spans[BENIGN])]
        if concept_hits and len(concept_hits) > 1:
            # A concept word that is the start of a longer one within one word is part of it: Malay "masukkan"
            # (type in) holds "masuk" (log in), and "Masukkan poskod" describes no password.
            # So is one inside a longer word or phrase of the same concept ("maiden" in "maiden name").
            concept_hits = [c for c in concept_hits if not any(
                o[0] <= c[0] and c[1] <= o[1] and o[1] - o[0] > c[1] - c[0]
                and (o[2] == c[2] or (o[0] == c[0] and not any(o[0] < b < o[1] for b in bounds)))
                for o in concept_hits)]
        if concept_hits:
            present = {label for _, _, label in concept_hits}
            begins = min(cs for cs, _, _ in concept_hits)
            if not (prose and any(ne <= begins and label != "after" for _, ne, label in spans.get(NEGATION, ()))):
                concepts |= present  # (a negated clause, "Do not enter any PIN here", describes nothing to the rest)
            for category, needs, blockers in self._rules:
                if not all(not alt.isdisjoint(present) for alt in needs):
                    continue
                used = [(cs, ce) for cs, ce, label in concept_hits if any(label in alt for alt in needs)]
                nouns.extend((cs, ce) for cs, ce, label in concept_hits
                             if label in _NOUN_CONCEPTS and any(label in alt for alt in needs))
                # A blocker asks about something else only when it comes first ("Which email do you use
                # to log in?"), not when it is a landmark ("what you type after your e-mail address"); one that
                # starts where the concept does is a longer phrase of another sense ("BEGIN PGP PUBLIC KEY").
                # So does one right after it, which qualifies it ("Código do cupom ... no verso": a coupon's code).
                first = min(used)
                if not any(label in blockers and ((cs <= first[0] and (cs < first[0] or (cs, ce) > first))
                                                  or (not unspaced and 0 <= cs - first[1] <= _QUALIFIER_GAP))
                           for cs, ce, label in concept_hits):
                    concept_words.extend(used)
                    span = (min(cs for cs, _ in used), max(ce for _, ce in used))
                    concept_spans.add(span)
                    terms.append((*span, category))
        governors = governor_hits
        if attached and terms:
            term_ends = {e for _, e, _ in terms}
            governors = governors + [g for g in attached if g[0] in term_ends]
        if not terms:
            return any(not weak and label != "choose" for _, _, label, weak in governors)
        if len(terms) > 1:
            # The longest noun wins: "client secret" is an API secret, not also a generic secret.
            terms = [t for t in terms if not any(o[0] <= t[0] and t[1] <= o[1] and o[1] - o[0] > t[1] - t[0]
                                                 and (o[0], o[1]) not in concept_spans for o in terms)]
            # A noun listed both as a kind of secret and as a generic one is that kind.
            terms = [t for t in terms if t[2] != "secret" or not any(
                o[:2] == t[:2] and o[2] != "secret" for o in terms)]
        if governors:
            # A governor inside a secret noun is part of it ("time" in "one time code"), and inside a listed
            # description too ("meta", Spanish for a goal, in Yoruba "nọ́mbà mẹ́ta ẹ̀yìn káàdì").
            # A description's span is loose: a governor inside it still governs ("what happened at login").
            governors = [g for g in governors if not any(ts <= g[0] and g[1] <= te and (ts, te) != (g[0], g[1])
                                                         and ((ts, te) not in concept_spans or (ts, te) in listed)
                                                         for ts, te, _ in terms)
                         and not any(cs <= g[0] and g[1] <= ce for cs, ce in concept_words)]
            if _HANDED_OVER.search(clause):
                # "Generate a token and paste it below": what the clause makes, it hands over.
                governors = [g for g in governors if not ("gener" in squashed[g[0]:g[1]]
                                                          or "crea" in squashed[g[0]:g[1]])]
            if unspaced and concept_hits:
                # Unspaced text splits either way: a governor sharing its last letter with a description's
                # word is read as that word ("三個數字": three digits, not "個數", a count).
                governors = [g for g in governors if not any(g[0] < cs < g[1] < ce for cs, ce, _ in concept_hits)]
        benign = spans.get(BENIGN, ())
        negations = spans.get(NEGATION, ()) if prose else ()
        before_gap = _UNSPACED_GOVERNOR_GAP if unspaced else _GOVERNOR_GAP
        after_gap = _UNSPACED_GOVERNOR_GAP if unspaced else _AFTER_GAP
        for start, end, category in terms:
            # A harmless phrase covers a noun it holds, and one that starts at its noun after a qualifier: that
            # noun, named further ("javni ključ SSH za dostop": "ključ SSH", "ključ za dostop" of a public key).
            cover = [(bs, be) for bs, be, _ in benign
                     if bs <= start and (end <= be or (bs < start < be and be in bounds))]
            if not cover and category in ("secret", "api_key") and squashed[start:end] in self._adjectives:
                # "secret" before a noun that names nothing secret qualifies that noun ("secret masala",
                # "secret sauce"): the field asks for a dish or a recipe, not for a credential.
                index = bisect_right(starts, start) - 1
                if starts[index] == start and ends[index] == end and index + 1 < len(words):
                    following = words[index + 1]
                    if len(following) >= 4 and following.isalpha() and following not in self._known \
                            and self._correct(following, True) is None:
                        cover = [(start, ends[index + 1])]
            if (start, end) not in firm and cover:
                about.add(category)
                word_start = starts[bisect_right(starts, start) - 1]
                word_end = ends[bisect_right(starts, end - 1) - 1]
                if any(bs < word_start or be > word_end for bs, be in cover):
                    sense.add(category)  # a phrase gives the word its other sense ("hasło reklamowe")
                continue
            described = (start, end) in concept_spans
            if any(((ge <= start and start - ge <= (1 if weak else _CLAUSE_WIDE if label in ("describe", "count")
                                                   else before_gap)) and label != "after")
                   # A description's first word may hold the governor's last ("is your" + "your mother's ...").
                   or (described and gs < start < ge and label == "before")
                   or ((end <= gs and (0 if squashed[end:gs] in _GENITIVE else gs - end)
                        <= (1 if weak else 0 if described else after_gap))
                       and label not in ("before", "issue", "document"))
                   # A question closing its clause covers the clause (verb-final languages: "... क्या हुआ?").
                   or (end <= gs and label == "describe" and not weak and ge == len(squashed)
                       and gs - end <= _CLAUSE_WIDE)
                   or (gs < end and start < ge and label not in ("before", "after", "issue", "document"))
                   # Inside a description, a governor right after one of its words ("key prefix shown in
                   # the dashboard") is about that word.
                   or (described and label not in ("before", "issue", "choose", "document") and gs < end and start < ge
                       and any(ce <= gs and gs - ce <= (1 if weak else after_gap) for _, ce in nouns))
                   for gs, ge, label, weak in governors
                   if not (described and label == "choose") and (label != "issue" or category in _ISSUED)
                   # (The name of your first pet is the answer itself, not a label for it; and "What is your
                   # mother's maiden name?" asks for it, where "Is your PIN set?" asks whether.)
                   and not (label in ("name", "before") and category == "security_answer")
                   and (label != "document" or category == "national_id")):
                about.add(category)
                continue
            if any(ne <= start and label != "after" for _, ne, label in negations) or (negations and any(
                    ns >= end and (_VERB_FINAL.search(clause) or (label == "after" and _closes(ne, ends)))
                    for ns, ne, label in negations)):
                # Japanese, Korean and Indic languages negate after the noun ("秘密鍵は貼り付けないでください"),
                # and so do the verbs that close a clause elsewhere ("PIN nahi maangte", "... gerekmez"); an
                # adverb further on negates something else ("Enter your PIN, and never share it").
                about.add(category)
                continue
            asked.add(category)
        return any(not weak and label != "choose" for _, _, label, weak in governors)

    def _swallows_term(self, squashed: str, start: int, end: int, ends: list[int]) -> bool:
        """Whether a one-word phrase found across words starts with a whole secret noun ("pinto", a door, in
        "PIN to"): then it is that noun and the next word. (A word cut by a separator, "Geheimz-utat", is not.)"""
        index = bisect_right(ends, start)
        if index >= len(ends) or ends[index] >= end:
            return False
        payload = self._payload_of.get(squashed[start:ends[index]])
        return payload is not None and any(e.kind == TERM and not e.internal for e in payload[1])

    @staticmethod
    def _aligned(entry: _Entry, start: int, end: int, squashed: str, bounds: set[int], soft: set[int],
                 starts: list[int], ends: list[int], words: list[str], unspaced: bool) -> bool | int:
        length = len(squashed)
        if entry.unspaced or unspaced:
            left = start in bounds or start in soft or entry.unspaced or UNSPACED.match(squashed, start) is not None \
                or (start > 0 and UNSPACED.match(squashed, start - 1) is not None) \
                or (start > 0 and squashed[start - 1].isascii() != squashed[start].isascii())
            right = end in bounds or end in soft or entry.unspaced or end == length \
                or UNSPACED.match(squashed, end - 1) is not None \
                or (end < length and squashed[end].isascii() != squashed[end - 1].isascii())
        else:
            left = start in bounds or start in soft
            if not left and start < length and _PROCLITIC_SCRIPT.match(squashed, start):
                # Hebrew and Arabic attach short words in front ("הספרות": the digits, "بالرقم": with the
                # number): after one to three of them, the word starts.
                word_start = starts[bisect_right(starts, start) - 1]
                left = 0 < start - word_start <= 3 and all(c in _PROCLITICS for c in squashed[word_start:start])
            right = end in bounds or end in soft
        kind = entry.kind
        if kind == REVERSED:
            return left and right
        if not left:
            if kind == GOVERNOR and entry.length >= 4:
                return _ATTACHED  # a suffix glued to a secret noun ("tokencount"): checked by the caller
            if not (entry.infix or (kind == TERM and entry.length >= _COMPACT_MIN)):
                return False
        if kind == NEGATION and not (left and right):
            return False
        if not right:
            index = bisect_right(ends, end)
            rest = (ends[index] if index < len(ends) else length) - end
            if kind == GOVERNOR:
                if squashed[end:end + rest] not in ("s", "es") and (entry.length < 5 or rest > 2):
                    return False  # "nume" (a name) is not inside "numero" or "numer"; "etiketi" is "etiket"
            elif not (entry.stem or kind in (BENIGN, CUE)
                      or (kind == TERM and entry.length >= _COMPACT_MIN
                          and (not entry.internal or entry.length - max(entry.internal) >= 4))
                      or (entry.length > 3 and rest <= 3)
                      or (rest <= 2 and not squashed[start:end].isascii())
                      or squashed[end:end + rest] in ("s", "es")):
                return False
        if entry.short_word and not all(start + b in bounds or start + b in soft for b in entry.internal):
            return False  # "o PIN" is two words, never the inside of "opinion"
        # Word breaks inside the hit: the phrase's own, spaced letters, or a split long word.
        first = bisect_right(starts, start) - 1
        last = bisect_right(starts, end - 1) - 1
        if first == last or kind in (GOVERNOR, BENIGN, NEGATION):
            return True
        if not left:
            return False
        inner = {b - start for b in bounds if start < b < end}
        if inner <= entry.internal:
            return True
        pieces = words[first:last + 1]
        if all(len(p) <= 2 for p in pieces):
            # Spaced letters ("p a s s w o r d") spell a secret noun, all of them: "n i r" inside
            # "r e t e n i r" is not one. A description word must be written whole.
            whole = (first == 0 or len(words[first - 1]) > 2) and (last + 1 >= len(words) or len(words[last + 1]) > 2)
            return kind != CONCEPT and whole
        return kind == TERM and entry.length >= _COMPACT_MIN and right and len(pieces) <= 4


_NON_WORD: Final = re.compile(r"[\W_]+")
_CJK_OR_HANGUL: Final = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_NOUN_CONCEPTS: Final = frozenset({"key_word", "code_word", "codes"})


def _key_words(key: str, internal: Iterable[int]) -> tuple[str, ...]:
    """A squashed lexicon key cut back into its words at its entry's word bounds ("motdepasse" -> mot, de, passe)."""
    edges = [0, *sorted(internal), len(key)]
    return tuple(key[a:z] for a, z in pairwise(edges))


def _near_index(beside: Mapping[str, tuple[tuple[tuple[str, ...], int], ...]]) -> dict[str, str]:
    """The words of the nouns of several words, three letters or more, by themselves and by each of their
    one-letter-less forms (several joined by NUL): a word is one edit from such a word only if it, or itself
    with one letter gone, is a key here. Built with the lexicon and again when it is read back, never stored
    in the cache: unpickling it took three times as long as building it."""
    near: dict[str, str] = {}
    for word in sorted({phrase[place] for entries in beside.values() for phrase, place in entries}):
        if len(word) >= 3:
            for variant in {word, *(word[:i] + word[i + 1:] for i in range(len(word)))}:
                near[variant] = f"{near[variant]}\x00{word}" if variant in near else word
    return near


def _written(exact: str, original: str) -> bool:
    """Whether `original` holds `exact` as written (diacritics kept), separators aside."""
    # NFKC keeps diacritics but undoes fullwidth and styled letters; overrides are read as displayed.
    written = unicodedata.normalize("NFKC", INVISIBLE.sub("", undo_overrides(original))).casefold()
    return exact in written or _NON_WORD.sub("", exact) in _NON_WORD.sub("", written)


_PROCLITIC_SCRIPT: Final = re.compile("[\u05d0-\u05ea\u0620-\u064a\u0671-\u06d3]")
_PROCLITICS: Final = frozenset("הבלמשוכ" "والبفكس")
INVISIBLE: Final = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")


_DOTTED_CAPITALS: Final = re.compile(r"(?<=\b[A-Z])\.(?=[A-Z]\b)")
# Capitals spelt one by one with any separator between them ("T_A_N", "C-V-V", "P I N").
_SPELT_CAPITALS: Final = re.compile(r"(?<![A-Za-z])[A-Z](?:[._\-\s/*·|]+[A-Z])+(?![A-Za-z])")


def _across_scripts(word: str, fix: str, latin: bool) -> bool:
    """Whether a spelling fix would turn a word of another script into a Latin one in a text with no Latin
    letter (`latin`): folding spells "Поле" "noлe", one letter from "nome", but nobody misspells across scripts."""
    return not latin and fix.isascii() and not word.isascii()


def _closes(negation_end: int, word_ends: list[int]) -> bool:
    """Whether a negation ending at `negation_end` closes its clause (one word after it at most)."""
    return len(word_ends) - bisect_right(word_ends, negation_end) <= 1


def _acronym_shown(key: str, original: str) -> bool:
    """A weak short term counts when written in capitals ("TAN", "DNI") or when it is the whole label."""
    visible = ascii_capitals(PICTOGRAPH.sub("", INVISIBLE.sub("", original)))
    if "." in visible:
        visible = _DOTTED_CAPITALS.sub("", visible)  # "C.F.", "N.I.F." are capitals too
    visible = _SPELT_CAPITALS.sub(lambda m: _NON_WORD.sub("", m.group(0)).replace("_", ""), visible)
    if re.search(rf"(?<![A-Za-z]){re.escape(key.upper())}(?![a-z])", visible):
        return True
    words = [w for w in _SEPARATORS.split(INVISIBLE.sub("", original).strip()) if w]
    if any(w != w.lower() and w != w.capitalize() and normalize_text(w) == key for w in words):
        return True  # case flipped inside the word to hide it ("NiP", "oIb"): no ordinary word is written so
    if not original.isascii():
        bare = "".join(c for c in unicodedata.normalize("NFD", INVISIBLE.sub("", original))
                       if not unicodedata.combining(c))
        parts = [w for w in _SEPARATORS.split(bare) if w]
        if any(w.isupper() and normalize_text(w) == key for w in parts):
            return True  # capitals of any script or style, marks aside ("EГН" with a Latin E, "ṄȦṠ", "ＴＡＮ")
        spelt = "".join(w for w in parts if len(w) == 1 and w.isupper())
        if len(spelt) >= 2 and normalize_text(spelt) == key:
            return True  # capitals spelt apart ("Ј-М-Б-Г", "Е.М.Б.Г")
    if len(key) == 2:
        return len(words) == 1  # "ww", "mk": only as the whole label
    return len(words) <= (1 if len(key) == 3 else 2)


# Punctuation that splits a word without ending it: markdown emphasis, hyphens, dots, slashes, middle dots.
_INNER_SEPARATORS: Final = re.compile(r"(?<=\S)[*_\-‐‑‒–—/.·・‧•∙⋅|\\~`'’+]+(?=\S)|[*_~`]+")
_SPACED_LETTERS: Final = re.compile(r"(?<!\S)[^\s\d](?:[ \t][^\s\d]){2,}(?!\S)")
_SPACED_PIECES: Final = re.compile(r"(?<!\S)\S{1,3}(?:\s+\S{1,3}(?!\S))+")


def _glued_pieces(match: re.Match[str]) -> str:
    run = match.group(0)
    pieces = run.split()
    # Letters spaced out in uneven pieces ("Cl av e p r i vad a"): mostly single characters. An Indic
    # syllable is one letter with its vowel sign and virama ("गु प्त क्र मां क": marks are not counted).
    sizes = [sum(not unicodedata.category(c).startswith("M") for c in p) for p in pieces]
    if len(pieces) >= 4 and sum(n <= 2 for n in sizes) * 3 >= len(pieces) * 2 \
            and sum(n == 1 for n in sizes) * 2 > len(pieces):
        return "".join(pieces)
    return run


def _glued(folded: str) -> list[str]:
    """`folded` with the separators inside its words removed: letters spaced one by one joined, and
    (a second reading, when it differs) runs of short pieces joined. Empty when nothing changes."""
    inner = _INNER_SEPARATORS.sub("", folded)
    letters = _SPACED_LETTERS.sub(lambda m: m.group(0).replace(" ", "").replace("\t", ""), inner)
    pieces = _SPACED_PIECES.sub(_glued_pieces, inner)
    return [g for g in dict.fromkeys((letters, pieces)) if g != folded]


@functools.lru_cache(maxsize=16384)
def words_of(text: str) -> tuple[str, ...]:
    """The folded words of `text` (camelCase split), as the matcher sees them."""
    # Overrides first: camelCase is read on the text as displayed, not on a run stored backwards.
    return tuple(split_words(normalize_text(camel_marked(undo_overrides(text)))))


_CONCEPTS_FILE: Final = "_concepts.json"
_REAL_WORDS_FILE: Final = "_real_words.json"


def _lexicon_files() -> Iterator[Mapping[str, Any]]:
    folder = resources.files("gateway.policy").joinpath("data/lexicon")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json") and entry.name not in (_CONCEPTS_FILE, _REAL_WORDS_FILE):
            yield json.loads(entry.read_text(encoding="utf-8"))


def builtin_real_words() -> tuple[str, ...]:
    """Everyday words read as themselves (`_real_words.json`; empty when the file is absent)."""
    entry = resources.files("gateway.policy").joinpath(f"data/lexicon/{_REAL_WORDS_FILE}")
    if not entry.is_file():
        return ()
    return tuple(json.loads(entry.read_text(encoding="utf-8")).get("words", ()))


@functools.lru_cache(maxsize=1)
def builtin_concepts() -> Mapping[str, Any]:
    data: Mapping[str, Any] = json.loads(
        resources.files("gateway.policy").joinpath(f"data/lexicon/{_CONCEPTS_FILE}").read_text(encoding="utf-8"))
    return data


def builtin_language_data() -> tuple[Mapping[str, Any], ...]:
    return tuple(_lexicon_files())


@functools.lru_cache(maxsize=1)
def load_builtin_lexicon() -> Lexicon:
    """The bundled lexicon, built once per process (about a second, before the server listens: every
    policy's detector takes it when the config is loaded), or read from the opt-in cache (lexicon_cache)."""
    return cached_lexicon(
        lambda: Lexicon(builtin_language_data(), (), builtin_concepts(), builtin_real_words()), Lexicon)
