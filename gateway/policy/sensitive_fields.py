"""Stage 2 of the policy engine: does a form-mode elicitation ask for a secret?

A form *asks* for a secret when a field that would receive free input is
named, titled or described as one (passwords, API keys, card numbers, ...),
when a string field is marked `format: password` or `writeOnly: true`, or when
the top-level message names a secret and the form has a free-text field to
receive it.  Fields that only ask *about* a secret (a boolean "did you reset
your password?", an enum, an integer "token count") are not asks.  Matching
runs on text folded by `normalize_text`, so homoglyphs, zero-width
characters, fullwidth forms, accents, spaced letters and leetspeak do not
hide a term.  See docs/sensitive-fields.md.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, NamedTuple

from gateway.policy.text_normalization import (
    camel_split,
    collapse_spaced_letters,
    leet_variants,
    normalize_text,
)

__all__ = ["CATEGORIES", "SensitiveFieldDetector", "SensitiveFinding"]


@dataclass(frozen=True, slots=True)
class SensitiveFinding:
    """One secret ask: its category and where it was seen (a path, never a value)."""

    category: str
    location: str


_LEXICON: Final[dict[str, Any]] = json.loads(
    resources.files("gateway.policy").joinpath("data/sensitive_terms.json").read_text(encoding="utf-8")
)
CATEGORIES: Final[tuple[str, ...]] = (*_LEXICON["categories"], "custom")
# Categories whose secret is often typed as a number (PIN 1234, CVV, card, OTP, SSN).
_NUMERIC_CATEGORIES: Final[frozenset[str]] = frozenset(
    name for name, spec in _LEXICON["categories"].items() if spec["numeric"]
)

# ---------------------------------------------------------------------------
# Term compilation: every lexicon term becomes a path in a character trie, and
# the trie one regex, so a scan costs one pass whatever the lexicon size.

_SEP: Final = "\x00sep"
_WILD: Final = "\x00wild"
_WORD_CHAR = r"[^\W_]"
_UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")
_COMPACT_MIN_LENGTH = 6
# Compact (inside-a-word) forms that occur in ordinary words.
_COMPACT_DENY = frozenset({"secret", "idtoken", "pinnumber"})
_PLURAL = r"(?:e?s)?"


def _is_unspaced(term: str) -> bool:
    return any(unicodedata.name(ch, "").startswith(_UNSPACED_SCRIPTS) for ch in term)


@dataclass(frozen=True, slots=True)
class _Term:
    atoms: tuple[str, ...]
    infix: bool
    compact: str | None  # letters-only form safe to find inside a longer word


def _parse_term(raw: str) -> _Term | None:
    infix = raw.startswith("~")
    text = normalize_text(raw.lstrip("~"))
    infix = infix or _is_unspaced(text)
    atoms: list[str] = []
    for ch in text:
        if ch == "*":
            atoms.append(_WILD)
        elif ch.isalnum() or unicodedata.category(ch) == "Mc":
            atoms.append(ch)
        elif atoms and atoms[-1] != _SEP:
            atoms.append(_SEP)
    while atoms and atoms[-1] == _SEP:
        atoms.pop()
    if not any(len(atom) == 1 for atom in atoms):
        return None
    letters = "".join(a for a in atoms if a not in (_SEP, _WILD))
    has_inner_wild = _WILD in atoms[:-1]
    compact = None
    if (not infix and not has_inner_wild and letters.isascii() and len(letters) >= _COMPACT_MIN_LENGTH
            and letters not in _COMPACT_DENY):
        compact = letters
    return _Term(tuple(atoms), infix, compact)


def _atom_pattern(atom: str, infix: bool) -> str:
    if atom == _SEP:
        return r"[\W_]{0,3}" if infix else r"[\W_]{1,3}"
    if atom == _WILD:
        return _WORD_CHAR + "*"
    return re.escape(atom)


def _trie_pattern(paths: Iterable[tuple[str, ...]], infix: bool) -> str:
    """A regex matching exactly the given atom paths, sharing common prefixes."""
    trie: dict[str, Any] = {}
    for path in paths:
        node = trie
        for atom in path:
            node = node.setdefault(atom, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        ends_here = "" in node
        branches = [_atom_pattern(atom, infix) + emit(child) for atom, child in node.items() if atom]
        if not branches:
            return ""
        # Longer branches first so the longest term wins at one position.
        branches.sort(key=len, reverse=True)
        body = branches[0] if len(branches) == 1 and not ends_here else "(?:" + "|".join(branches) + ")"
        return body + "?" if ends_here else body

    return emit(trie)


class _TermMatcher:
    """Finds lexicon terms in folded text and tells which category each belongs to."""

    def __init__(self, terms_by_category: Mapping[str, Iterable[str]]) -> None:
        bounded: list[tuple[str, ...]] = []
        infix: list[tuple[str, ...]] = []
        compact: list[tuple[str, ...]] = []
        per_category: list[tuple[str, re.Pattern[str]]] = []
        self.compact_category: dict[str, str] = {}
        for category, raw_terms in terms_by_category.items():
            parsed = [t for t in (_parse_term(raw) for raw in raw_terms) if t is not None]
            if not parsed:
                continue
            per_category.append((category, re.compile(
                "|".join(_trie_pattern([t.atoms], t.infix) for t in parsed))))
            for term in parsed:
                (infix if term.infix else bounded).append(term.atoms)
                if term.compact is not None:
                    compact.append(tuple(term.compact))
                    self.compact_category.setdefault(term.compact, category)
        self.pattern: re.Pattern[str] | None = (
            re.compile(rf"(?<!{_WORD_CHAR})({_trie_pattern(bounded, False)}){_PLURAL}(?!{_WORD_CHAR})")
            if bounded else None
        )
        # Infix terms are tried at every position, which is slow; they are
        # CJK / Hangul words, so they only run on text written in those scripts.
        self.infix_pattern: re.Pattern[str] | None = (
            re.compile(f"({_trie_pattern(infix, True)})") if infix else None
        )
        self.compact_pattern: re.Pattern[str] | None = (
            re.compile(f"({_trie_pattern(compact, True)})") if compact else None
        )
        self._per_category = per_category

    def category_of(self, core: str) -> str:
        for category, pattern in self._per_category:
            if pattern.fullmatch(core):
                return category
        return self._per_category[0][0]  # unreachable: every core comes from some category


# ---------------------------------------------------------------------------
# Context: words that turn a secret noun into a question *about* the secret.

def _phrase_alternation(phrases: Iterable[str]) -> str:
    folded = sorted({normalize_text(p).strip() for p in phrases if p.strip()}, key=len, reverse=True)
    return "|".join(r"[\W_]+".join(re.escape(w) for w in re.split(r"[\W_]+", p) if w) for p in folded)


def _meta_after_pattern(words: Iterable[str]) -> re.Pattern[str]:
    short = [w for w in words if len(normalize_text(w)) <= 2]
    long = [w for w in words if len(normalize_text(w)) > 2]
    # Short words ("id", "数") must end there, long ones may run on ("policyack").
    return re.compile(
        rf"[\s_\-./]*(?:(?:{_phrase_alternation(long)})|(?:{_phrase_alternation(short)})(?!{_WORD_CHAR}))"
    )


_FILLERS = "your|the|my|a|an|of|this|that|his|her|their|its|de|la|le|del|da|della|des|du"
_META_AFTER: Final = _meta_after_pattern(_LEXICON["meta_after"])
_META_BEFORE: Final = re.compile(
    rf"(?<!{_WORD_CHAR})(?:{_phrase_alternation(_LEXICON['meta_before'])})"
    rf"(?:[\W_]+(?:{_FILLERS}))*[\W_]*$"
)
_META_BEFORE_COMPACT: Final = re.compile(
    rf"(?:{_phrase_alternation(_LEXICON['meta_before'])})(?:{_FILLERS})*$"
)
_NEGATION: Final = re.compile(
    rf"(?<!{_WORD_CHAR})(?:{_phrase_alternation(_LEXICON['negation'])})[\W_]+"
    rf"(?:{_WORD_CHAR}+[\W_]+){{0,2}}?(?:{_phrase_alternation(_LEXICON['negated_verbs'])})(?!{_WORD_CHAR})"
)
_CLAUSE_BREAK: Final = re.compile(r".*(?:[.!?;:\n。！？；]|\b(?:but|instead|just|however|now)\b)", re.DOTALL)
_POSTAL_CONTEXT: Final = re.compile(
    rf"(?<!{_WORD_CHAR})(?:{_phrase_alternation(_LEXICON['pin_postal_context'])})|"
    rf"(?:{_phrase_alternation(w for w in _LEXICON['pin_postal_context'] if _is_unspaced(w) or not w.isascii())})"
)
_META_WINDOW = 48
_WORD_BREAK: Final = re.compile(r"[\W_]")
_UNSPACED_TEXT: Final = re.compile("[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_STRIP_PUNCTUATION: Final = re.compile(r"[^\w\s]|_")
# The ASCII characters `_STRIP_PUNCTUATION` removes (taken from the regex itself), for a bytes fast path.
_ASCII_PUNCTUATION: Final = bytes(code for code in range(128) if _STRIP_PUNCTUATION.fullmatch(chr(code)))


# A wildcard term swallows the rest of its word ("passwort*" in
# "passwortrichtlinie"), so long meta words are also looked for inside it.
_META_INSIDE: Final = re.compile(
    _phrase_alternation(w for w in _LEXICON["meta_after"] if len(normalize_text(w)) >= 4))
_INSIDE_OFFSET = 4


def _is_meta(text: str, start: int, end: int, compact: bool) -> bool:
    if _META_AFTER.match(text, end):
        return True
    if not compact and end - start > 2 * _INSIDE_OFFSET and _WORD_BREAK.search(text, start, end) is None \
            and _META_INSIDE.search(text, start + _INSIDE_OFFSET, end):
        return True
    before = text[max(0, start - _META_WINDOW):start]
    pattern = _META_BEFORE_COMPACT if compact else _META_BEFORE
    return pattern.search(before) is not None


def _is_negated(text: str, start: int) -> bool:
    clause = text[:start]
    cut = _CLAUSE_BREAK.match(clause)
    if cut is not None:
        clause = clause[cut.end():]
    return _NEGATION.search(clause) is not None


@functools.lru_cache(maxsize=8192)
def _readings(text: str) -> tuple[str, ...]:
    """Folded readings of `text` (camel case left alone): as written, and with leetspeak undone."""
    folded = collapse_spaced_letters(normalize_text(text))
    return (folded, *leet_variants(folded))


@functools.lru_cache(maxsize=4096)
def _prepare(text: str) -> tuple[str, ...]:
    """Folded readings of `text` split at camelCase boundaries."""
    return _readings(camel_split(text))


def _compact_readings(text: str) -> list[str]:
    # Camel splitting would break alternating case ("PaSsWoRd"), so the
    # inside-a-word pass reads the unsplit text. Most texts have no camel
    # boundary, and then `_readings` already holds this fold (cache hit).
    return [r.encode("ascii").translate(None, _ASCII_PUNCTUATION).decode("ascii") if r.isascii()
            else _STRIP_PUNCTUATION.sub("", r) for r in _readings(text)]


def _scan(matcher: _TermMatcher, text: str, prose: bool) -> tuple[frozenset[str], frozenset[str]]:
    """Categories `text` names as a secret, and those it only mentions in passing ("token count")."""
    asked: set[str] = set()
    about: set[str] = set()
    pattern = matcher.pattern
    infix_pattern = matcher.infix_pattern
    for reading in _prepare(text):
        # Most readings hold no term: one search, no iterator or list to build.
        if pattern is not None and pattern.search(reading) is not None:
            matches = list(pattern.finditer(reading))
        else:
            matches = []
        if infix_pattern is not None and not reading.isascii() and _UNSPACED_TEXT.search(reading):
            matches.extend(infix_pattern.finditer(reading))
        for match in matches:
            category = matcher.category_of(match.group(1))
            passing = _is_meta(reading, match.start(), match.end(), compact=False) or (
                prose and _is_negated(reading, match.start()))
            (about if passing else asked).add(category)
    compact_pattern = matcher.compact_pattern
    if compact_pattern is not None:
        for reading in _compact_readings(text):
            if compact_pattern.search(reading) is None:
                continue
            for match in compact_pattern.finditer(reading):
                category = matcher.compact_category[match.group(1)]
                passing = _is_meta(reading, match.start(), match.end(), compact=True) or (
                    prose and _is_negated(reading, match.start()))
                (about if passing else asked).add(category)
    return frozenset(asked), frozenset(about)


_WORDS: Final = re.compile(rf"{_WORD_CHAR}+")
_Edges = tuple[tuple[str, ...], tuple[str, ...], int]


def _edge_tokens(text: str) -> _Edges:
    """First and last word of each reading of `text`, and its word count (for split-word checks)."""
    readings = _prepare(text)
    if len(readings) == 1:  # the common case, without the de-duplication below
        words = _WORDS.findall(readings[0])
        return ((words[0],), (words[-1],), len(words)) if words else ((), (), 0)
    firsts: list[str] = []
    lasts: list[str] = []
    count = 0
    for reading in readings:
        words = _WORDS.findall(reading)
        if words:
            firsts.append(words[0])
            lasts.append(words[-1])
            count = max(count, len(words))
    return tuple(dict.fromkeys(firsts)), tuple(dict.fromkeys(lasts)), count


_BUILTIN: Final = _TermMatcher(
    {name: [t for terms in spec["terms"].values() for t in terms] for name, spec in _LEXICON["categories"].items()}
)

# ---------------------------------------------------------------------------
# Field kinds: only free input fields can receive a secret.

_NOTHING: Final[tuple[frozenset[str], frozenset[str]]] = (frozenset(), frozenset())
_FREE_STRING, _NUMBER, _OTHER = "string", "number", "other"
_CONSTRAINED_FORMATS = frozenset({"email", "uri", "date", "date-time", "time"})


def _field_kind(schema: Mapping[str, Any]) -> str:
    if "enum" in schema or "oneOf" in schema or "anyOf" in schema or "const" in schema:
        return _OTHER  # picking an option never transmits a secret
    declared = schema.get("type")
    if declared in ("number", "integer"):
        return _NUMBER
    if declared == "string" or declared is None:
        # An untyped field is read as text: fail closed.
        return _OTHER if schema.get("format") in _CONSTRAINED_FORMATS else _FREE_STRING
    return _OTHER


def _receives(category: str, kind: str) -> bool:
    return kind == _FREE_STRING or (kind == _NUMBER and category in _NUMERIC_CATEGORIES)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class _Field(NamedTuple):  # a NamedTuple: built for every field of every form, and cheap to build
    name: str
    schema: Mapping[str, Any]
    kind: str

    @property
    def path(self) -> str:  # only needed for a finding, so not built for every field
        return f"requestedSchema.properties.{self.name}"


class SensitiveFieldDetector:
    """Finds secret asks in `elicitation/create` form params.

    `extra_terms` are operator words treated as secret nouns (category
    "custom"); `allowed_fields` are property names never flagged.
    """

    _CACHE_LIMIT = 4096

    def __init__(self, extra_terms: Sequence[str] = (), allowed_fields: Collection[str] = ()) -> None:
        custom = [t for t in extra_terms if isinstance(t, str) and t.strip()]
        self._matchers: tuple[_TermMatcher, ...] = (_BUILTIN,)
        if custom:
            self._matchers = (_BUILTIN, _TermMatcher({"custom": custom}))
        self._allowed = frozenset(allowed_fields)
        self._scan_cache: dict[tuple[str, bool], tuple[frozenset[str], frozenset[str]]] = {}
        self._edge_cache: dict[str, _Edges] = {}
        self._compact_terms = frozenset(
            term for matcher in self._matchers for term in matcher.compact_category
        )

    def find(self, params: Mapping[str, Any]) -> list[SensitiveFinding]:
        """Every secret ask in `params`, in document order; [] when there is none. Never raises."""
        try:
            return self._find(params)
        except RecursionError:  # pragma: no cover - absurdly nested junk
            return [SensitiveFinding("custom", "requestedSchema")]

    # -- internals ---------------------------------------------------------

    def _scan_text(self, text: str, prose: bool) -> tuple[frozenset[str], frozenset[str]]:
        if not text:
            return _NOTHING
        key = (text, prose)
        cached = self._scan_cache.get(key)
        if cached is None:
            if len(self._matchers) == 1:
                cached = _scan(self._matchers[0], text, prose)
            else:
                results = [_scan(m, text, prose) for m in self._matchers]
                cached = (frozenset().union(*(r[0] for r in results)), frozenset().union(*(r[1] for r in results)))
            if len(self._scan_cache) >= self._CACHE_LIMIT:
                self._scan_cache.clear()
            self._scan_cache[key] = cached
        return cached

    def _categories(self, text: str, prose: bool) -> frozenset[str]:
        return self._scan_text(text, prose)[0]

    def _mentioned_in_passing(self, field: _Field) -> frozenset[str]:
        """Categories a field only talks about: it will not receive that secret from the message."""
        schema = field.schema
        return frozenset().union(
            self._scan_text(field.name, False)[1], self._scan_text(_text(schema.get("title")), False)[1],
            self._scan_text(_text(schema.get("description")), True)[1])

    def _fields(self, params: Mapping[str, Any]) -> list[_Field]:
        schema = params.get("requestedSchema")
        # dict first: the ABC check behind isinstance(x, Mapping) is several times slower.
        properties = schema.get("properties") if type(schema) is dict or isinstance(schema, Mapping) else None
        if not (type(properties) is dict or isinstance(properties, Mapping)):
            return []
        fields = []
        allowed = self._allowed
        for name, prop in properties.items():
            if not isinstance(name, str) or name in allowed:
                continue
            # dict first: the ABC check behind isinstance(prop, Mapping) is several times slower.
            prop_schema: Mapping[str, Any] = prop if type(prop) is dict or isinstance(prop, Mapping) else {}
            fields.append(_Field(name, prop_schema, _field_kind(prop_schema)))
        return fields

    def _find(self, params: Mapping[str, Any]) -> list[SensitiveFinding]:
        if not (type(params) is dict or isinstance(params, Mapping)):
            return []
        fields = self._fields(params)
        message = _text(params.get("message"))
        findings: dict[SensitiveFinding, None] = {}

        def add(category: str, location: str) -> None:
            findings.setdefault(SensitiveFinding(category, location), None)

        cache_get = self._scan_cache.get
        scan = self._scan_text
        for field in fields:
            kind = field.kind
            if kind == _OTHER:
                continue  # `_field_asks` adds nothing for it
            schema = field.schema
            if kind == _FREE_STRING and (schema.get("format") == "password" or schema.get("writeOnly") is True):
                self._field_asks(field, message, add)
                continue
            # Most fields name no secret: look their texts up in the scan cache before the full check.
            name = field.name
            title = schema.get("title")
            description = schema.get("description")
            if ((name and (cache_get((name, False)) or scan(name, False))[0])
                    or (isinstance(title, str) and title and (cache_get((title, False)) or scan(title, False))[0])
                    or (isinstance(description, str) and description
                        and (cache_get((description, True)) or scan(description, True))[0])):
                self._field_asks(field, message, add)
        receivers = [f for f in fields if f.kind != _OTHER]
        if receivers and message:
            for category in sorted(self._categories(message, prose=True)):
                if any(_receives(category, f.kind) and category not in self._mentioned_in_passing(f)
                       for f in receivers) and not (
                    category == "pin" and self._postal(message, *(self._field_texts(f) for f in fields))
                ):
                    add(category, "message")
        self._split_words(message, fields, add)
        return list(findings)

    @staticmethod
    def _field_texts(field: _Field) -> str:
        return " ".join((field.name, _text(field.schema.get("title")), _text(field.schema.get("description"))))

    @staticmethod
    def _postal(*texts: str) -> bool:
        return any(_POSTAL_CONTEXT.search(normalize_text(camel_split(t))) for t in texts if t)

    def _field_asks(self, field: _Field, message: str, add: Any) -> None:
        if field.kind == _OTHER:
            return
        schema = field.schema
        if field.kind == _FREE_STRING:
            if schema.get("format") == "password":
                add("password", f"{field.path}.format")
            if schema.get("writeOnly") is True:
                add("password", f"{field.path}.writeOnly")
        parts = (("", field.name, False), (".title", _text(schema.get("title")), False),
                 (".description", _text(schema.get("description")), True))
        for suffix, text, prose in parts:
            categories = self._categories(text, prose)
            if not categories:
                continue
            for category in sorted(categories):
                if not _receives(category, field.kind):
                    continue
                if category == "pin" and self._postal(self._field_texts(field), message):
                    continue
                add(category, field.path + suffix)

    def _split_words(self, message: str, fields: list[_Field], add: Any) -> None:
        """A term cut in two across neighbours: message "Enter your pass" + field "word"."""
        # `_joined_category` inlined (this runs for every pair of neighbouring texts of every form).
        edge_get = self._edge_cache.get
        compact_terms = self._compact_terms
        edges = self._edges
        previous: list[str] = [message] if message else []
        for field in fields:
            title = field.schema.get("title")
            current = [field.name, title if isinstance(title, str) else ""]
            if field.kind != _OTHER:
                for before in previous:
                    if not before:
                        continue
                    before_edges: _Edges | None = None
                    for after in current:
                        if not after:
                            continue
                        if before_edges is None:
                            before_edges = edge_get(before) or edges(before)
                        after_edges = edge_get(after) or edges(after)
                        # Only a fragment standing alone on one side counts: "Boarding pass" +
                        # "Word count" is two ordinary labels, not "password".
                        if before_edges[2] != 1 and after_edges[2] != 1:
                            continue
                        for last in before_edges[1]:
                            for first in after_edges[0]:
                                if last + first in compact_terms:
                                    break
                            else:
                                continue
                            break
                        else:
                            continue  # no joined pair is a term: the common case
                        category = self._joined_edges(before_edges[1], after_edges[0])
                        if category is not None and _receives(category, field.kind):
                            add(category, field.path)
            previous = current

    def _edges(self, text: str) -> _Edges:
        cached = self._edge_cache.get(text)
        if cached is None:
            cached = _edge_tokens(text)
            if len(self._edge_cache) >= self._CACHE_LIMIT:
                self._edge_cache.clear()
            self._edge_cache[text] = cached
        return cached

    def _joined_category(self, before: str, after: str) -> str | None:
        if not before or not after:
            return None
        _, lasts, before_count = self._edges(before)
        firsts, _, after_count = self._edges(after)
        # Only a fragment standing alone on one side counts: "Boarding pass" +
        # "Word count" is two ordinary labels, not "password".
        if before_count != 1 and after_count != 1:
            return None
        return self._joined_edges(lasts, firsts)

    def _joined_edges(self, lasts: tuple[str, ...], firsts: tuple[str, ...]) -> str | None:
        for last in lasts:
            for first in firsts:
                joined = last + first
                if joined in self._compact_terms:
                    for matcher in self._matchers:
                        if joined in matcher.compact_category:
                            return matcher.compact_category[joined]
        return None
