"""Stage 3 of the policy engine (`form_urls: strip`): remove clickable URLs from human-visible text.

Detection runs on a *skeleton* of the text: zero-width and other format characters dropped, compatibility
forms folded (NFKC: fullwidth letters, fullwidth dots and slashes), HTML entities, percent escapes of
URL punctuation, markdown backslash escapes and defanged forms (`hxxp`, `[.]`, `(dot)`) undone. Each
skeleton character remembers the span of the original it came from, so a link found in the skeleton
is cut out of the original text, disguise included, and replaced by `LINK_MARKER`.

What counts as a link is decided by linkify-it-py (the linkifier behind markdown-it), loaded with every
top-level domain of the bundled public-suffix list, plus our own patterns for markdown / HTML links,
any `scheme://`, dangerous schemes without `//` and IPv4 literals with a port or a path.
See docs/link-stripping.md for the decisions (e-mail addresses, file names, defanged forms).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Final

from linkify_it import LinkifyIt
from linkify_it.tlds import TLDS as _LINKIFY_TLDS

LINK_MARKER: Final = "[link removed]"

# Stripping repeats until nothing is found (the kept text of `[evil.com](https://x)` is itself a link).
# Past this many passes the whole string becomes the marker: fail closed, still idempotent.
_MAX_PASSES: Final = 6


# --- what is a top-level domain -----------------------------------------------------------------


def _public_suffix_tlds() -> set[str]:
    """Last labels of the ICANN section of the public-suffix list bundled with `publicsuffixlist`."""
    data = resources.files("publicsuffixlist").joinpath("public_suffix_list.dat").read_text("utf-8")
    tlds: set[str] = set()
    in_icann = False
    for raw_line in data.splitlines():
        line = raw_line.strip()
        if "===BEGIN ICANN DOMAINS===" in line:
            in_icann = True
        elif "===END ICANN DOMAINS===" in line:
            break
        elif in_icann and line and not line.startswith("//"):
            tlds.add(line.lstrip("*!.").rsplit(".", 1)[-1].lower())
    return tlds


_TLDS: Final = frozenset({t.lower() for t in _LINKIFY_TLDS} | _public_suffix_tlds())

# File extensions that are also TLDs. A bare `main.py` is kept (see docs); large ccTLDs with real
# traffic (.in, .ai, .io, .co ...) and the abuse-prone gTLDs .zip / .mov are deliberately absent.
FILE_EXTENSION_TLDS: Final = frozenset({"py", "md", "sh", "rs", "pl", "pm", "java", "cc", "mk", "ml", "tf"} & _TLDS)

_LINKIFY: Final = LinkifyIt(options={"fuzzy_link": True, "fuzzy_email": False, "fuzzy_ip": False}).tlds(
    sorted(_TLDS, reverse=True), keep_old=False
)


# --- skeleton: the text as a renderer / browser would read it ------------------------------------

_IDEOGRAPHIC_STOP: Final = "\u3002"  # NFKC also folds the halfwidth ｡ (U+FF61) into it
_DOT_LIKE: Final = frozenset("\uff0e\ufe52\u2024")  # fullwidth, small and one-dot-leader full stops
# Invisible characters that are not category Cf but render as nothing inside a word.
_INVISIBLE_EXTRA: Final = frozenset(
    "\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5" + "".join(chr(c) for c in range(0xFE00, 0xFE10))
)
# Cheap "is there any invisible character" test for the fast path (Cf ranges of Unicode 14/15 + extras).
_INVISIBLE_RE: Final = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
    "\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5\ufe00-\ufe0f]"
)

# Multi-character disguises, undone in the skeleton.
_DISGUISE_RE: Final = re.compile(
    r"(?P<entity>&(?:\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)"
    r"|(?P<percent>%[0-9A-Fa-f]{2})"
    r"|(?P<escape>\\[.:/@])"
    r"|(?P<defang_dot>[ \t]?[\[({][ \t]?(?:\.|dot)[ \t]?[\])}][ \t]?)"
    r"|(?P<defang_colon>\[:\]|\[://\])"
    r"|(?P<hxxp>\bh[xX]{2}p(?=s?(?::|\[:)))",
    re.IGNORECASE,
)
_PERCENT_DECODABLE: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:/@-")


@lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    """What one non-ASCII character reads as inside a URL ('' when it is invisible)."""
    if ch in _INVISIBLE_EXTRA or unicodedata.category(ch) == "Cf":
        return ""
    if ch in _DOT_LIKE:
        return "."
    return unicodedata.normalize("NFKC", ch)


def _undo_disguise(kind: str | None, token: str) -> str:
    if kind == "entity":
        return html.unescape(token)
    if kind == "percent":
        decoded = chr(int(token[1:], 16))
        return decoded if decoded in _PERCENT_DECODABLE else token
    if kind == "escape":
        return token[1:]
    if kind == "defang_dot":
        return "."
    if kind == "defang_colon":
        return token[1:-1]
    if kind == "hxxp":
        return "http"
    return token


@dataclass(frozen=True, slots=True)
class _Skeleton:
    text: str
    # Original span of each skeleton character; None means the skeleton is the original itself.
    starts: list[int] | None
    ends: list[int] | None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if self.starts is None or self.ends is None:
            return start, end
        if start >= end:
            at = self.starts[start] if start < len(self.starts) else (self.ends[-1] if self.ends else 0)
            return at, at
        return self.starts[start], self.ends[end - 1]


def _build_skeleton(text: str) -> _Skeleton:
    if text.isascii() and _DISGUISE_RE.search(text) is None:
        return _Skeleton(text, None, None)
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def emit(folded: str, start: int, end: int) -> None:
        for c in folded:
            out = c if c < "\x80" else _fold_char(c)
            for o in out:
                chars.append(o)
                starts.append(start)
                ends.append(end)

    pos = 0
    for match in _DISGUISE_RE.finditer(text):
        for i in range(pos, match.start()):
            emit(text[i], i, i + 1)
        emit(_undo_disguise(match.lastgroup, match.group()), match.start(), match.end())
        pos = match.end()
    for i in range(pos, len(text)):
        emit(text[i], i, i + 1)
    # An ideographic full stop acts as a dot only between a label and an ASCII letter or digit
    # (`example。com`); in CJK prose it ends a sentence and must not glue two words into a domain.
    for i, c in enumerate(chars):
        if c == _IDEOGRAPHIC_STOP and i + 1 < len(chars) and chars[i + 1].isascii() and chars[i + 1].isalnum():
            chars[i] = "."
    return _Skeleton("".join(chars), starts, ends)


# --- fast path -----------------------------------------------------------------------------------

# True for every text in which some detector below could fire (checked by a property test);
# plain sentences ("Your name.", "Pick one: a or b") do not match it.
_MAYBE_LINK_RE: Final = re.compile(
    # Every alternative starts with one of these characters; the lookahead lets `re` skip to them fast.
    r"(?=[.\u3002:/@\]<&%\\\[({])(?:"
    r"(?<=[^\s.])[.\u3002][^\W\d_]{2}"  # label.tld (a TLD starts with two letters; not "e.g." nor "3.14")
    r"|(?<=\d)\.\d[\d.]*[:/]"  # IPv4 with a port or a path
    r"|(?<=[A-Za-z]):\S"  # scheme:
    r"|//|(?<=\S)@\S|\][(:\[]|<[A-Za-z]"  # //host, e-mail, markdown links, HTML and autolinks
    r"|&[#A-Za-z0-9]+;|%[0-9A-Fa-f]{2}|\\[.:/@]"  # entities, percent escapes, markdown escapes
    r"|[\[({][ \t]?(?:\.|[dD][oO][tT])[ \t]?[\])}]|\[:\])"  # defanged dots and colons
)


def _may_contain_link(text: str) -> bool:
    if text.isascii():
        return _MAYBE_LINK_RE.search(text) is not None
    if _INVISIBLE_RE.search(text) is not None:
        return True
    return _MAYBE_LINK_RE.search(unicodedata.normalize("NFKC", text)) is not None


# --- detectors (all on the skeleton) -------------------------------------------------------------

_REF_DEFINITION_RE: Final = re.compile(
    r"^[ \t]{0,3}\[(?P<label>[^\[\]\n]{1,999})\]:[ \t]*\n?[ \t]*(?:<[^<>\n]*>|\S+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*(?:\n|$)",
    re.MULTILINE,
)
_LINK_TEXT: Final = r"(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*"
_MD_INLINE_LINK_RE: Final = re.compile(
    r"!?\[(?P<text>" + _LINK_TEXT + r")\]\(\s*(?:<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)",
    re.DOTALL,
)
_MD_REF_USE_RE: Final = re.compile(r"!?\[(?P<text>" + _LINK_TEXT + r")\](?:\[(?P<label>[^\[\]]*)\])?", re.DOTALL)
_HTML_ANCHOR_RE: Final = re.compile(r"<a\b[^<>]*\bhref\s*=[^<>]*>(?P<text>.*?)</a\s*>", re.IGNORECASE | re.DOTALL)
_HTML_URL_TAG_RE: Final = re.compile(
    r"<[A-Za-z][\w:-]*\b[^<>]*?\b(?:href|src|srcset|action|formaction|poster|background|data|ping|cite"
    r"|longdesc|manifest|codebase)\s*=[^<>]*>",
    re.IGNORECASE,
)
_AUTOLINK_RE: Final = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*|[^\s<>@]+@[^\s<>@]+)>")
_URL_TAIL: Final = r"[^\s<>\"'`]*"
_SCHEME_URL_RE: Final = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?:"
    + "|".join(
        [
            r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s<>\"'`]",  # any scheme://
            r"(?:https?|ftps?|wss?|sftp):[/\\]*[A-Za-z0-9\[]",  # http:evil.com, https:/evil.com
            r"(?:javascript|vbscript|livescript):[^\s<>]+",  # script: quotes and all, up to a space
            r"(?:mailto|sms|smsto|callto|facetime(?:-audio)?|skype|intent|blob|view-source|ms-[a-z\-]+"
            r"|search-ms|itms-services|jar|mhtml):[^\s<>\"'`]",
            r"file:[/\\]",
            r"tel:\+?[\d(][\d\s().\-]{2,}\d",
            r"data:(?:[\w.+\-]+/[\w.+\-]+)?(?:;[\w=.+\-]+)*[;,]",
            r"www\.[\w\-]",
        ]
    )
    + r")"
    + _URL_TAIL,
    re.IGNORECASE,
)
_IPV4_URL_RE: Final = re.compile(
    r"(?<![\w.])(?P<ip>(?:\d{1,3}\.){3}\d{1,3})(?=:\d|/(?!\d{1,2}(?![^\s,;)])))(?::\d{1,5})?(?:/[^\s<>\"'`]*)?"
    r"|(?<![\w.\-])localhost:\d{2,5}\b(?:/[^\s<>\"'`]*)?",
    re.IGNORECASE,
)
_FILE_NAME_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]*\.(?P<ext>[A-Za-z]{2,4})")
_EMAIL_RE: Final = re.compile(r"[\w.!#$%&'*+/=?^`{|}~\-]+@[\w\-]+(?:\.[\w\-]+)+")
_LINKIFY_PRECHECK_RE: Final = re.compile(r"[^\s.]\.[^\s.]|@|//")
_COLON_BEFORE_HOST_RE: Final = re.compile(r":(?=[^\d/\s])")
_TRAILING_PUNCT: Final = frozenset(".,;:!?'\"”’»›」』】）。、，")
_CLOSERS: Final = {")": "(", "]": "[", "}": "{", ">": "<"}


def _trim_url_end(text: str, start: int, end: int) -> int:
    """Drop sentence punctuation and unbalanced closing brackets that follow a URL."""
    while end > start:
        last = text[end - 1]
        if last in _TRAILING_PUNCT:
            end -= 1
        elif last in _CLOSERS and text.count(_CLOSERS[last], start, end) < text.count(last, start, end):
            end -= 1
        else:
            break
    return end


def _label_key(label: str) -> str:
    return " ".join(label.split()).casefold()


@dataclass(frozen=True, slots=True)
class _Hit:
    """A link found in the skeleton; `keep` is the part of it (link text) that stays visible."""

    start: int
    end: int
    keep: tuple[int, int] | None = None
    marker: bool = True  # False: a used reference definition, deleted without a marker


class _Scan:
    """Collects non-overlapping hits; detectors run on a copy with earlier hits blanked out."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.masked = text
        self.hits: list[_Hit] = []

    def add(self, hit: _Hit) -> bool:
        if hit.end <= hit.start or any(h.start < hit.end and hit.start < h.end for h in self.hits):
            return False
        self.hits.append(hit)
        return True

    def commit(self) -> None:
        """Blank out the hits so later detectors cannot re-match inside them."""
        if self.hits:
            self.masked = _blank(self.text, [(h.start, h.end) for h in self.hits])


def _scan_markdown_and_html(scan: _Scan) -> None:
    masked = scan.masked
    definitions: dict[str, _Hit] = {}
    if "]:" in masked:
        for m in _REF_DEFINITION_RE.finditer(masked):
            definitions.setdefault(_label_key(m.group("label")), _Hit(m.start(), m.end(), marker=False))
    if "<" in masked:
        for m in _HTML_ANCHOR_RE.finditer(masked):
            scan.add(_Hit(m.start(), m.end(), keep=m.span("text")))
        for m in _HTML_URL_TAG_RE.finditer(masked):
            scan.add(_Hit(m.start(), m.end()))
    if "](" in masked:
        for m in _MD_INLINE_LINK_RE.finditer(masked):
            scan.add(_Hit(m.start(), m.end(), keep=m.span("text")))
    used: set[str] = set()
    if definitions:
        for m in _MD_REF_USE_RE.finditer(masked):
            if any(d.start <= m.start() < d.end for d in definitions.values()):
                continue  # the `[label]` of a definition is not a use of it
            key = _label_key(m.group("label") or m.group("text"))
            if key in definitions and scan.add(_Hit(m.start(), m.end(), keep=m.span("text"))):
                used.add(key)
        for key, definition in definitions.items():
            scan.add(definition if key in used else _Hit(definition.start, definition.end))
    scan.commit()


def _scan_urls(scan: _Scan) -> None:
    masked = scan.masked
    if "<" in masked:
        for m in _AUTOLINK_RE.finditer(masked):
            scan.add(_Hit(m.start(), m.end()))
    if ":" in masked or "www." in masked.lower():
        for m in _SCHEME_URL_RE.finditer(masked):
            scan.add(_Hit(m.start(), _trim_url_end(masked, m.start(), m.end())))
    for m in _IPV4_URL_RE.finditer(masked):
        ip = m.group("ip")
        if ip is None or all(int(octet) <= 255 for octet in ip.split(".")):
            scan.add(_Hit(m.start(), _trim_url_end(masked, m.start(), m.end())))
    scan.commit()


def _is_kept_file_name(raw: str) -> bool:
    m = _FILE_NAME_RE.fullmatch(raw)
    return m is not None and m.group("ext").lower() in FILE_EXTENSION_TLDS and not raw.lower().startswith("www.")


def _linkify_spans(masked: str, original: str, skeleton: _Skeleton) -> list[tuple[int, int]]:
    """What linkify turns into links in `masked`, minus bare file names (see FILE_EXTENSION_TLDS)."""
    if _LINKIFY_PRECHECK_RE.search(masked) is None:
        return []
    # linkify never starts a host right after ':' (it could be a scheme); every scheme is already
    # claimed here, so a colon left before a host is prose ("Info:evil.com", "地址：evil.com").
    masked = _COLON_BEFORE_HOST_RE.sub(" ", masked)
    if "@" in masked:
        # A plain e-mail address is not a link (issue 11): neither its local part ("minji.kim", .kim
        # is a TLD) nor its domain is linkified on its own.
        masked = _EMAIL_RE.sub(lambda m: " " * len(m.group(0)), masked)
    spans: list[tuple[int, int]] = []
    for m in _LINKIFY.match(masked) or ():
        start, end = m.index, m.last_index
        raw = masked[start:end]
        if m.schema == "" and _is_kept_file_name(raw):
            o_start, o_end = skeleton.original_span(start, end)
            if original[o_start:o_end] == raw:  # an undisguised file name; a disguise is never innocent
                continue
        spans.append((start, end))
    return spans


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the spans overwritten by spaces (same length, so positions still hold)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _find_links(text: str) -> list[tuple[int, int, str]]:
    """Edits (start, end, replacement) in original coordinates, sorted, non-overlapping."""
    if not _may_contain_link(text):
        return []
    skeleton = _build_skeleton(text)
    scan = _Scan(skeleton.text)
    _scan_markdown_and_html(scan)
    _scan_urls(scan)
    for start, end in _linkify_spans(scan.masked, text, skeleton):
        scan.add(_Hit(start, end))
    edits: list[tuple[int, int, str]] = []
    for hit in sorted(scan.hits, key=lambda h: h.start):
        start, end = skeleton.original_span(hit.start, hit.end)
        if not hit.marker:
            replacement = ""
        elif hit.keep is not None:
            k_start, k_end = skeleton.original_span(*hit.keep)
            kept = text[k_start:k_end].strip()
            replacement = f"{kept} {LINK_MARKER}" if kept else LINK_MARKER
        else:
            replacement = LINK_MARKER
        if edits and start < edits[-1][1]:
            continue  # two skeleton hits share one original character; the next pass gets it
        edits.append((start, end, replacement))
    if skeleton.starts is not None:
        # Folding can also hide a link: linkify refuses a host right after ':' or '-', so the
        # skeleton of "info：evil.zip" (fullwidth colon) has none, while a chat UI links the original.
        masked_original = _blank(text, [(start, end) for start, end, _ in edits])
        extra = _linkify_spans(masked_original, text, _Skeleton(text, None, None))
        if extra:
            edits = sorted(edits + [(start, end, LINK_MARKER) for start, end in extra])
    return edits


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end, replacement in edits:
        parts.append(text[pos:start])
        parts.append(replacement)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# --- public API ----------------------------------------------------------------------------------


def contains_link(text: str) -> bool:
    """Whether `text` holds anything `strip_links` would remove. Fails closed (True) on internal error."""
    try:
        return bool(_find_links(text))
    except Exception:
        return True


def strip_links(text: str) -> tuple[str, int]:
    """Replace every link in `text` by LINK_MARKER; returns (new text, number of links removed).

    Never raises; the result never contains a link (by `contains_link`), so stripping is idempotent.
    """
    try:
        current = text
        removed = 0
        for _ in range(_MAX_PASSES):
            edits = _find_links(current)
            if not edits:
                return current, removed
            current = _apply(current, edits)
            removed += sum(1 for edit in edits if edit[2])
        if not _find_links(current):
            return current, removed
    except Exception:  # fail closed below: a detector bug must not let a link through
        removed = 0
    return LINK_MARKER, max(removed, 1)


@dataclass(frozen=True, slots=True)
class LinkStripResult:
    params: dict[str, Any]  # a new params dict; unchanged strings are the same objects; input never mutated
    removed: int  # total links removed
    changes: tuple[str, ...]  # human summaries without values


# Locations, in the order their summaries are listed.
_MESSAGE: Final = "message"
_FORM_TEXT: Final = "form title and description"
_FIELD_TITLES: Final = "field titles"
_FIELD_DESCRIPTIONS: Final = "field descriptions"
_OPTION_TITLES: Final = "option titles"
_DEFAULTS: Final = "default values"
_LOCATIONS: Final = (_MESSAGE, _FORM_TEXT, _FIELD_TITLES, _FIELD_DESCRIPTIONS, _OPTION_TITLES, _DEFAULTS)

# What each key of a schema node holds: a string, a string or list of strings, {const, title} options,
# the `items` of a multi-select, the `properties` map, or an untitled choice's values. Everything else (const,
# type...) is data.
_TEXT, _TEXTS, _OPTIONS, _ITEMS, _PROPERTIES, _ENUM = range(6)
_Handlers = Mapping[str, tuple[int, str]]
_SCHEMA_KEYS: Final[_Handlers] = {
    "title": (_TEXT, _FORM_TEXT),
    "description": (_TEXT, _FORM_TEXT),
    "properties": (_PROPERTIES, ""),
}
_PROPERTY_KEYS: Final[_Handlers] = {
    "title": (_TEXT, _FIELD_TITLES),
    "description": (_TEXT, _FIELD_DESCRIPTIONS),
    "default": (_TEXTS, _DEFAULTS),
    "enumNames": (_TEXTS, _OPTION_TITLES),
    "oneOf": (_OPTIONS, _OPTION_TITLES),
    "anyOf": (_OPTIONS, _OPTION_TITLES),
    "items": (_ITEMS, ""),
    "enum": (_ENUM, _OPTION_TITLES),
}
_ITEMS_KEYS: Final[_Handlers] = {
    "enumNames": (_TEXTS, _OPTION_TITLES),
    "oneOf": (_OPTIONS, _OPTION_TITLES),
    "anyOf": (_OPTIONS, _OPTION_TITLES),
    "enum": (_ENUM, _OPTION_TITLES),
}
_TITLED: Final = ("enumNames", "oneOf", "anyOf")
# A link no reader takes for plain text: a scheme, "www.", "mailto:", a markdown or HTML link.
_EXPLICIT_LINK: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|(?<![\w.])www\.|mailto:|\]\(|<a\s", re.IGNORECASE)
_OPTION_KEYS: Final[_Handlers] = {"title": (_TEXT, _OPTION_TITLES)}


def _untitled(choice: Mapping[str, Any]) -> bool:
    """A choice that shows its `enum` values themselves: no enumNames, oneOf or anyOf titles them."""
    return not any(key in choice for key in _TITLED)


class _Tally:
    """Rewrites a params tree copy-on-write (unchanged nodes are the same objects) and counts removals."""

    def __init__(self) -> None:
        self.by_location: dict[str, int] = dict.fromkeys(_LOCATIONS, 0)

    def text(self, value: Any, location: str) -> Any:
        if not isinstance(value, str) or not _may_contain_link(value):
            return value
        new, removed = strip_links(value)
        if new == value:
            return value
        self.by_location[location] += max(removed, 1)
        return new

    def each(self, values: Any, kind: int, location: str) -> Any:
        """A list rewritten item by item (the same list when no item changed)."""
        if not isinstance(values, list):
            return self.text(values, location) if kind == _TEXTS else values
        if kind == _TEXTS:
            new = [self.text(v, location) for v in values]
        else:
            new = [self.node(v, _OPTION_KEYS) for v in values]
        return new if any(a is not b for a, b in zip(new, values, strict=True)) else values

    def node(self, obj: Any, handlers: _Handlers) -> Any:
        """A schema node with the keys listed in `handlers` rewritten (the same object when unchanged)."""
        if not (isinstance(obj, dict) or isinstance(obj, Mapping)):  # dict first: the ABC check is slow
            return obj
        changed: dict[str, Any] = {}
        # Walk the node's own keys, usually fewer than the handlers; the order of the
        # rewrites does not matter (counts add up, `result` keeps the node's key order).
        for key, old in obj.items():
            handler = handlers.get(key)
            if handler is None:
                continue
            kind, location = handler
            if kind == _ENUM:
                continue  # (below: the values are the answer, only their display can change)
            if kind == _TEXT:
                new = self.text(old, location)
            elif kind == _ITEMS:
                new = self.node(old, _ITEMS_KEYS)
            elif kind == _PROPERTIES:
                new = self.properties(old)
            else:
                new = self.each(old, kind, location)
            if new is not old:
                changed[key] = new
        titles = self.enum_titles(obj) if "enum" in handlers and "enum" in obj else None
        if titles is not None:
            if handlers is _ITEMS_KEYS:  # a multi-select shows titled options as `anyOf` of {const, title}
                changed["anyOf"] = [{"const": v, "title": t} for v, t in zip(obj["enum"], titles, strict=True)]
            else:
                changed["enumNames"] = titles
        if not changed:
            return obj
        result = dict(obj)
        result.update(changed)
        if titles is not None and handlers is _ITEMS_KEYS:
            del result["enum"]
        return result

    def enum_titles(self, obj: Mapping[str, Any]) -> list[Any] | None:
        """Display titles for an untitled choice whose values hold explicit links (`enum`: ["Plans:
        https://x.cn"], "www.", "mailto:", markdown): the value stays what the answer carries, the host shows it
        stripped. A bare domain as an option ("keys.openpgp.org") is a choice's text, not a link to follow,
        and is left as it is. None when nothing changes."""
        values = obj["enum"]
        if not isinstance(values, list) or not _untitled(obj) or not any(
                isinstance(v, str) and shows_explicit_link(v) for v in values):
            return None  # (titled options are stripped as option titles above)
        titles = [self.text(v, _OPTION_TITLES) for v in values]
        return titles if any(t is not v for t, v in zip(titles, values, strict=True)) else None

    def properties(self, props: Any) -> Any:
        if not (isinstance(props, dict) or isinstance(props, Mapping)):
            return props
        new = {name: self.node(prop, _PROPERTY_KEYS) for name, prop in props.items()}
        return new if any(new[name] is not props[name] for name in new) else props

    def summaries(self) -> tuple[str, ...]:
        return tuple(
            f"{n} link{'' if n == 1 else 's'} removed from {location}" for location, n in self.by_location.items() if n
        )

    @property
    def total(self) -> int:
        return sum(self.by_location.values())


def shows_explicit_link(text: str) -> bool:
    """Whether `text` holds a link written as one (a scheme, "www.", "mailto:", markdown), not only a bare
    domain: what an untitled option's value must hold to be shown stripped (see `_Tally.enum_titles`)."""
    return _may_contain_link(text) and _EXPLICIT_LINK.search(_build_skeleton(text).text) is not None


def _collect_texts(obj: Any, handlers: _Handlers, out: list[str]) -> None:
    """The strings `_Tally.node` would pass to `_Tally.text`, in any order."""
    if not (isinstance(obj, dict) or isinstance(obj, Mapping)):
        return
    for key, old in obj.items():
        handler = handlers.get(key)
        if handler is None:
            continue
        kind = handler[0]
        if kind == _TEXT:
            if isinstance(old, str):
                out.append(old)
        elif kind == _ITEMS:
            _collect_texts(old, _ITEMS_KEYS, out)
        elif kind == _PROPERTIES:
            if isinstance(old, dict) or isinstance(old, Mapping):
                for prop in old.values():
                    _collect_texts(prop, _PROPERTY_KEYS, out)
        elif kind == _ENUM:
            if isinstance(old, list) and _untitled(obj):
                out.extend(v for v in old if isinstance(v, str))
        elif not isinstance(old, list):
            if kind == _TEXTS and isinstance(old, str):
                out.append(old)
        elif kind == _TEXTS:
            out.extend(v for v in old if isinstance(v, str))
        else:
            for option in old:
                _collect_texts(option, _OPTION_KEYS, out)


def _form_may_contain_link(params: Mapping[str, Any]) -> bool:
    """False only when no text `strip_form_links` looks at could hold a link (one regex for the form).

    Exact as a pre-check: the texts are joined with newlines, which no alternative of
    `_MAYBE_LINK_RE` can use, so a match in any one text is a match in the joined text.
    """
    try:
        texts: list[str] = []
        message = params.get("message") if "message" in params else None
        if isinstance(message, str):
            texts.append(message)
        if "requestedSchema" in params:
            _collect_texts(params["requestedSchema"], _SCHEMA_KEYS, texts)
        joined = "\n".join(texts)
        if not joined.isascii():
            return True  # the per-text path folds non-ASCII text first
        return _MAYBE_LINK_RE.search(joined) is not None
    except Exception:  # the full walk below decides
        return True


def strip_form_links(params: Mapping[str, Any]) -> LinkStripResult:
    """Form mode: strip the message, schema title/description, field titles and descriptions,
    option titles (`oneOf[].title`, `anyOf[].title`, `items.anyOf[].title`, `enumNames`) and string
    defaults. Enum values, `const` and property names are answers, not text, and are left alone; an
    untitled choice whose values hold links gets titles to show instead (`enumNames`, or `anyOf` for a
    multi-select's items)."""
    if not _form_may_contain_link(params):
        return LinkStripResult(dict(params), 0, ())
    tally = _Tally()
    new_params = dict(params)
    if "message" in params:
        new_params["message"] = tally.text(params["message"], _MESSAGE)
    if "requestedSchema" in params:
        new_params["requestedSchema"] = tally.node(params["requestedSchema"], _SCHEMA_KEYS)
    return LinkStripResult(new_params, tally.total, tally.summaries())


def strip_message_links(params: Mapping[str, Any]) -> LinkStripResult:
    """URL mode: only `message` is text; `url` and `elicitationId` reach the host untouched."""
    tally = _Tally()
    new_params = dict(params)
    if "message" in params:
        new_params["message"] = tally.text(params["message"], _MESSAGE)
    return LinkStripResult(new_params, tally.total, tally.summaries())
