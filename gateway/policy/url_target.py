"""Decide whether a URL-mode elicitation may send the user to its `url`.

The URL is parsed the way a browser would read it (WHATWG URL rules for the
`https` scheme), so that what we judge is the host the browser will really
open. The URL itself is never rewritten: this module only decides.

Blocked, in order of checking (the `reason` of the verdict):

- `unparsable`: not a string, empty, malformed authority, bad port, empty
  label, invalid IDNA/punycode, an IPv4-looking host that browsers reject.
- `too_long`: longer than `max_length` characters.
- `whitespace_or_control`: any whitespace, control, format (bidi, zero-width),
  private-use, surrogate or unassigned character anywhere. Browsers silently
  drop tabs/newlines and trim spaces, so the text shown is not what is opened.
- `backslash`: browsers read `\\` as `/` in https URLs
  (`https://evil.com\\@good.com` opens evil.com); a legitimate server never
  needs a raw backslash, so any is refused.
- `scheme_not_https`: `javascript:`, `data:`, `file:`, `http:`, relative URLs...
  Also `https:` not followed by exactly `//` (browsers accept `https:evil.com`
  and `https:////evil.com`; we refuse the ambiguity).
- `userinfo`: any `@` in the authority (`user:pass@host`, `good.com@evil.com`).
- `noncanonical_host`: the host is not written in its canonical form:
  percent-escapes, fullwidth letters or dots (`ｅｘａｍｐｌｅ．com`,
  `example。com`), mathematical or other compatibility letters, non-NFC text.
  Browsers map all of these to a plain host, so the displayed text disguises it.
- `ip_literal`: IPv6 `[...]` or IPv4 in any form browsers accept (decimal
  `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, short `127.1`), unless
  `allow_ip_literals`.
- `punycode`: an internationalized host (`xn--` label or non-ASCII), unless
  `allow_punycode`. With it, IDN labels are still checked for:
- `mixed_script`: letters of more than one script in one label (Latin +
  Cyrillic), except the combinations Unicode UTS #39 calls "highly
  restrictive" (Latin with Han and Japanese kana, Bopomofo or Hangul).
- `confusable_host`: a non-ASCII label made only of look-alikes of ASCII
  characters (all-Cyrillic `раура`), or a host whose look-alike skeleton equals
  an allowed host's without being it (`раураl.com`, `paypa1.com`, `g00gle.com`
  when `paypal.com` / `google.com` are allowed).
- `local_host`: a single-label host (`localhost`, `intranet`) or one under a
  special-use name (`.localhost`, `.local`, `.internal`, `.home.arpa`): the
  user's browser would reach the user's own machine or network. Unless
  `allow_local_hosts`.
- `host_not_allowed`: `allowed_hosts` is non-empty and no entry matches.

Allowed hosts: entries are lower-cased, a trailing dot is stripped and they are
IDNA-encoded. `auth.example.com` matches exactly that host. `*.example.org`
matches any subdomain at any depth (`a.example.org`, `a.b.example.org`) but not
`example.org` itself (list both when both are meant). Ports never matter. An
entry matching the host exactly (not by wildcard) is the operator's explicit
choice and skips the punycode / script / look-alike / local checks; scheme,
userinfo, IP and form checks still apply. Malformed entries match nothing
(`allowed_host_entry_problem` tells the config layer why). An empty list means
any https host that passes the other checks.

Digits as letters (`g00gle`): ASCII hosts are only compared with allowed hosts,
where `0`~`o`, `1`~`l`, `rn`~`m`, `vv`~`w` count as look-alikes. With an empty
allow-list there is nothing to compare with, and blocking every digit would
block legitimate hosts, so ASCII hosts are never judged look-alikes then.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from dataclasses import dataclass

import idna
from confusable_homoglyphs import categories as script_categories
from confusable_homoglyphs import confusables as confusable_data


@dataclass(frozen=True, slots=True)
class UrlTargetRules:
    allowed_hosts: tuple[str, ...] = ()
    allow_ip_literals: bool = False
    allow_punycode: bool = False
    max_length: int = 2048
    allow_local_hosts: bool = False


@dataclass(frozen=True, slots=True)
class UrlTargetVerdict:
    allowed: bool
    reason: str
    """`ok` when allowed, else one of the reasons in the module docstring."""
    host: str | None
    """The normalized (ASCII, IDNA-encoded) host when parseable: the server's URL, safe to log."""


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_ASCII_LABEL = re.compile(r"[a-z0-9_\-]+")
_DIGITS = re.compile(r"[0-9]+")
_HEX_NUMBER = re.compile(r"0x[0-9a-f]*")
# Unicode categories that never belong in a URL a user is asked to open.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zs", "Zl", "Zp"})
_LOCAL_SUFFIXES = ("localhost", "local", "internal", "home.arpa")
# UTS #39 "highly restrictive": the only script mixes allowed inside one label.
_ALLOWED_SCRIPT_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
_NEUTRAL_SCRIPTS = frozenset({"COMMON", "INHERITED"})
# ASCII look-alikes inside ASCII itself (hosts are lower-case, so `I` is moot).
_ASCII_CANONICAL = {"0": "o", "1": "l"}
_ASCII_SEQUENCES = (("rn", "m"), ("vv", "w"))


def _verdict(reason: str, host: str | None = None) -> UrlTargetVerdict:
    return UrlTargetVerdict(allowed=reason == "ok", reason=reason, host=host)


def check_url_target(url: object, rules: UrlTargetRules) -> UrlTargetVerdict:
    """Decide whether `url` is an acceptable URL-mode target. Never raises (fails closed)."""
    try:
        return _check(url, rules)
    except Exception:  # any surprise in a parser is a refusal, never a crash
        return _verdict("unparsable")


def _check(url: object, rules: UrlTargetRules) -> UrlTargetVerdict:
    if not isinstance(url, str) or not url:
        return _verdict("unparsable")
    if len(url) > rules.max_length:
        return _verdict("too_long")
    if any(ch.isspace() or unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in url):
        return _verdict("whitespace_or_control")
    if "\\" in url:
        return _verdict("backslash")
    scheme = _SCHEME.match(url)
    if scheme is None or scheme.group().lower() != "https:":
        return _verdict("scheme_not_https")
    rest = url[scheme.end() :]
    if not rest.startswith("//") or rest.startswith("///"):
        return _verdict("unparsable")
    authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
    if "@" in authority:
        return _verdict("userinfo")
    raw_host = _split_host_port(authority)
    if raw_host is None:
        return _verdict("unparsable")
    if raw_host.startswith("["):
        return _check_ipv6(raw_host, rules)
    return _check_host(raw_host, rules)


def _split_host_port(authority: str) -> str | None:
    """The host part of `authority`, or None when the authority is malformed (bad port, stray colon)."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        host, after = authority[: end + 1], authority[end + 1 :]
        port = after[1:] if after.startswith(":") else None
        if after and port is None:
            return None
    else:
        host, colon, port_text = authority.partition(":")
        port = port_text if colon else None
    if port is not None and port and (not _DIGITS.fullmatch(port) or int(port) > 65535):
        return None
    return host or None


def _check_ipv6(raw_host: str, rules: UrlTargetRules) -> UrlTargetVerdict:
    try:
        address = ipaddress.IPv6Address(raw_host[1:-1])
    except ValueError:
        return _verdict("unparsable")
    host = f"[{address.compressed}]"
    if not rules.allow_ip_literals:
        return _verdict("ip_literal", host)
    return _match_allowed(host, rules, is_idn=False)


def _check_host(raw_host: str, rules: UrlTargetRules) -> UrlTargetVerdict:
    if "%" in raw_host:
        return _verdict("noncanonical_host")
    lowered = raw_host.lower()
    # UTS #46 is what browsers apply: it folds fullwidth forms, ideographic dots
    # and compatibility letters to plain ones. Any change beyond case is a disguise.
    mapped = idna.uts46_remap(lowered, std3_rules=False, transitional=False)
    if mapped != lowered:
        return _verdict("noncanonical_host")
    host = mapped[:-1] if mapped.endswith(".") else mapped
    labels = host.split(".")
    if not host or "" in labels or len(host) > 253:
        return _verdict("unparsable")
    if _ends_in_number(labels[-1]):
        return _check_ipv4(labels, rules)

    ascii_labels: list[str] = []
    unicode_labels: list[str] = []
    for label in labels:
        converted = _convert_label(label)
        if converted is None:
            return _verdict("unparsable")
        ascii_labels.append(converted[0])
        unicode_labels.append(converted[1])
    ascii_host = ".".join(ascii_labels)
    is_idn = ascii_host != ".".join(unicode_labels)

    allowed = _normalized_allowed_hosts(rules.allowed_hosts)
    if ascii_host in allowed.exact:
        return _verdict("ok", ascii_host)
    if is_idn:
        if not rules.allow_punycode:
            return _verdict("punycode", ascii_host)
        for label in unicode_labels:
            if _is_mixed_script(label):
                return _verdict("mixed_script", ascii_host)
            if not label.isascii() and _ASCII_LABEL.fullmatch(_skeleton(label)):
                return _verdict("confusable_host", ascii_host)
    if not rules.allow_local_hosts and _is_local(ascii_host):
        return _verdict("local_host", ascii_host)
    return _match_allowed(ascii_host, rules, is_idn=is_idn, unicode_host=".".join(unicode_labels))


def _convert_label(label: str) -> tuple[str, str] | None:
    """(ASCII form, Unicode form) of one host label, or None when it is not a valid label."""
    if label.isascii():
        if not _ASCII_LABEL.fullmatch(label) or len(label) > 63:
            return None
        if not label.startswith("xn--"):
            return label, label
        decoded = idna.decode(label)
        # Only canonical punycode: a label that does not round-trip is a trick.
        if idna.encode(decoded).decode("ascii") != label:
            return None
        return label, decoded
    return idna.encode(label).decode("ascii"), label


def _ends_in_number(last_label: str) -> bool:
    """WHATWG: a host whose last label is a number is parsed as IPv4 (or rejected)."""
    return bool(_DIGITS.fullmatch(last_label) or _HEX_NUMBER.fullmatch(last_label))


def _parse_ipv4_number(part: str) -> int | None:
    if not part or not part.isascii():
        return None
    if part.startswith("0x"):
        digits, base = part[2:], 16
        if not digits:
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits.isalnum() else None
    except ValueError:
        return None


def _check_ipv4(labels: list[str], rules: UrlTargetRules) -> UrlTargetVerdict:
    """Parse an IPv4 host as browsers do: 1-4 parts, decimal/octal/hex, the last part fills the rest."""
    if len(labels) > 4:
        return _verdict("unparsable")
    numbers = [_parse_ipv4_number(part) for part in labels]
    if any(n is None for n in numbers):
        return _verdict("unparsable")
    values = [n for n in numbers if n is not None]
    *leading, last = values
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(values)):
        return _verdict("unparsable")
    address = last + sum(n * 256 ** (3 - i) for i, n in enumerate(leading))
    host = str(ipaddress.IPv4Address(address))
    if not rules.allow_ip_literals:
        return _verdict("ip_literal", host)
    return _match_allowed(host, rules, is_idn=False)


def _is_mixed_script(label: str) -> bool:
    scripts = {script_categories.alias(ch) for ch in label} - _NEUTRAL_SCRIPTS
    if len(scripts) <= 1:
        return False
    return not any(scripts <= mix for mix in _ALLOWED_SCRIPT_MIXES)


def _is_local(ascii_host: str) -> bool:
    if "." not in ascii_host:
        return True
    return any(ascii_host == s or ascii_host.endswith("." + s) for s in _LOCAL_SUFFIXES)


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each character that looks like an ASCII letter or digit, mapped to that (canonical) character.

    Built lazily from the Unicode confusables data bundled with `confusable-homoglyphs`.
    """
    data: dict[str, list[dict[str, str]]] = confusable_data.confusables_data
    result: dict[str, str] = {}

    def canonical(ascii_char: str) -> str:
        lower = ascii_char.lower()
        return _ASCII_CANONICAL.get(lower, lower)

    for char, homoglyphs in data.items():
        if len(char) != 1:
            continue
        if char.isascii() and char.isalnum():
            for glyph in homoglyphs:
                look_alike = glyph["c"]
                if len(look_alike) == 1 and not look_alike.isascii():
                    result.setdefault(look_alike, canonical(char))
        elif not char.isascii():
            for glyph in homoglyphs:
                look_alike = glyph["c"]
                if len(look_alike) == 1 and look_alike.isascii() and look_alike.isalnum():
                    result.setdefault(char, canonical(look_alike))
                    break
    result.update(_ASCII_CANONICAL)
    return result


def _skeleton(text: str) -> str:
    """A UTS #39-style skeleton: look-alike characters collapse to one ASCII representative."""
    prototypes = _prototypes()
    folded = "".join(prototypes.get(ch, ch) for ch in unicodedata.normalize("NFKC", text).lower())
    for sequence, replacement in _ASCII_SEQUENCES:
        folded = folded.replace(sequence, replacement)
    return folded


@dataclass(frozen=True, slots=True)
class _AllowedHosts:
    exact: frozenset[str]
    wildcard_bases: tuple[str, ...]
    """`example.org` for the entry `*.example.org`."""


def _normalize_entry_host(text: str) -> str | None:
    host = text.strip().lower()
    host = host[:-1] if host.endswith(".") else host
    if not host or any(not label for label in host.split(".")):
        return None
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        try:
            # IP literals and underscore labels are not IDNA but are valid hosts.
            return str(ipaddress.ip_address(host.strip("[]"))) if not host.startswith("[") else host
        except ValueError:
            return host if all(_ASCII_LABEL.fullmatch(label) for label in host.split(".")) else None
    return ascii_host


def allowed_host_entry_problem(entry: str) -> str | None:
    """Why an `allowed_hosts` entry can never match (for config validation), or None when it is usable."""
    text = entry.strip()
    if text.startswith("*."):
        text = text[2:]
        if "." not in text.strip("."):
            return "a wildcard needs at least two labels after '*.'"
    if "*" in text:
        return "'*' is only allowed as the whole first label ('*.example.org')"
    if any(c in text for c in "/:@?#\\ "):
        return "expected a bare host name, not a URL"
    if _normalize_entry_host(text) is None:
        return "not a valid host name"
    return None


@functools.lru_cache(maxsize=256)
def _normalized_allowed_hosts(entries: tuple[str, ...]) -> _AllowedHosts:
    exact: set[str] = set()
    bases: list[str] = []
    for entry in entries:
        if allowed_host_entry_problem(entry) is not None:
            continue
        text = entry.strip()
        wildcard = text.startswith("*.")
        host = _normalize_entry_host(text[2:] if wildcard else text)
        if host is None:
            continue
        if wildcard:
            bases.append(host)
        else:
            exact.add(host)
    return _AllowedHosts(frozenset(exact), tuple(bases))


def _matches(host: str, allowed: _AllowedHosts) -> bool:
    return host in allowed.exact or any(host.endswith("." + base) for base in allowed.wildcard_bases)


def _match_allowed(
    host: str, rules: UrlTargetRules, *, is_idn: bool, unicode_host: str | None = None
) -> UrlTargetVerdict:
    if not rules.allowed_hosts:
        return _verdict("ok", host)
    allowed = _normalized_allowed_hosts(rules.allowed_hosts)
    if _matches(host, allowed):
        return _verdict("ok", host)
    skeleton = _skeleton(unicode_host if is_idn and unicode_host else host)
    for exact in allowed.exact:
        if skeleton == _skeleton(_unicode_form(exact)):
            return _verdict("confusable_host", host)
    for base in allowed.wildcard_bases:
        if skeleton.endswith("." + _skeleton(_unicode_form(base))):
            return _verdict("confusable_host", host)
    return _verdict("host_not_allowed", host)


def _unicode_form(ascii_host: str) -> str:
    try:
        return idna.decode(ascii_host)
    except (idna.IDNAError, UnicodeError, ValueError):
        return ascii_host
