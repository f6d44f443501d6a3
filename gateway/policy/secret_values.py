"""Secret-shaped values: a default, an example or a `pattern` that looks like a real credential.

A field whose default is `sk_live_...`, whose example is a JWT, or whose pattern
is `^ghp_[A-Za-z0-9]{36}$` is a request for that credential, whatever its label
says. The vendor patterns come from the maintained `detect-secrets` plugins
(read once at import, compiled into one alternation); on top of them: PEM and
OpenSSH key blocks, common token prefixes written with placeholders
(`sk-live-xxxxxxxx`), and long high-entropy strings. Values are only tested,
never kept or logged.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import pkgutil
import re
from collections import Counter
from typing import Final

__all__ = ["fragment_kind", "hex_key_shown", "looks_like_secret", "pattern_asks_for_secret", "pattern_sample",
           "text_shows_secret", "value_secret_kind"]


def _detect_secrets_patterns() -> list[str]:
    """The denylist regexes of every regex-based detect-secrets plugin (vendor keys and tokens)."""
    try:
        import detect_secrets.plugins as plugins
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError:  # pragma: no cover - declared dependency
        return []
    skip = {"IPPublicDetector", "BasicAuthDetector", "KeywordDetector"}
    found: list[str] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, RegexBasedDetector) and cls is not RegexBasedDetector
                    and cls.__module__ == module.__name__ and name not in skip):
                for pattern in getattr(cls, "denylist", ()):
                    try:
                        re.compile(pattern.pattern)
                    except re.error:  # pragma: no cover - a plugin regex Python cannot read
                        continue
                    found.append(pattern.pattern)
    return found


# Prefixes of well-known credentials, accepted with placeholder bodies ("sk_live_xxxxxxxx").
_PREFIXES: Final = (
    r"sk[-_](?:live|test|proj|ant|or)?[-_]?", r"rk_(?:live|test)_", r"whsec_", r"gh[pousr]_", r"github_pat_",
    r"glpat-", r"gl(?:dt|ft|soat|rt|cbt)-", r"xox[abposr]-", r"xapp-", r"AKIA", r"ASIA", r"AIza", r"ya29\.",
    r"hf_", r"npm_", r"pypi-", r"dop_v1_", r"shp(?:at|ss|ca|pa)_", r"SG\.", r"sq0(?:atp|csp)-", r"EAA[A-Za-z]",
    r"AccountKey=", r"SharedAccessSignature", r"key-", r"pat_", r"secret_", r"ntn_", r"lin_api_", r"figd_",
    r"atlassian_", r"ATATT", r"dapi", r"xai-", r"gsk_", r"r8_", r"tskey-", r"hvs\.", r"s\.",
    r"[xtyz]prv", r"xpriv", r"(?:SB-)?Mid-server-", r"FLWSECK(?:_TEST)?-",
)
# A distinctive prefix named on its own ("starts with sk-proj-", "xprv…"): the text shows what a
# credential looks like.
_NAMED_PREFIX: Final = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-proj-|sk-ant-|sk_live_|sk_test_|rk_live_|gh[pousr]_|github_pat_|"
    r"gl(?:pat|dt|ft|soat|rt|cbt|ptt|agent|oas)-|xox[bpa]-|xapp-|hf_|npm_|pypi-|dop_v1_|shp(?:at|ss|ca|pa)_|whsec_|"
    r"SB-Mid-server-|Mid-server-|[xtyz]prv|AGE-SECRET-KEY-|FLWSECK(?:_TEST)?-|ya29\.)(?=$|[\s\"'”»)…,;]|\.\.\.)")
_PREFIXED: Final = re.compile(
    rf"(?<![A-Za-z0-9])(?:{'|'.join(_PREFIXES)})[A-Za-z0-9_\-.*x•]{{8,}}"
)
_STRICT_PREFIX: Final = {"key-", "pat_", "secret_", "s.", "dapi", "r8_"}
_PEM: Final = re.compile(r"-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|OPENSSH PRIVATE KEY|PGP PRIVATE KEY BLOCK)-----|"
                         r"PuTTY-User-Key-File|\bAGE-SECRET-KEY-1")
_JWT: Final = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.?[A-Za-z0-9_\-]*")
_VENDOR: Final = re.compile("|".join(f"(?:{p})" for p in _detect_secrets_patterns()) or r"(?!)")
_CANDIDATE: Final = re.compile(r"[A-Za-z0-9+/=_\-.]{24,}")
_HEX: Final = re.compile(r"[0-9a-fA-F\-]+")
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_MIN_ENTROPY: Final = 3.6


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    if _HEX.fullmatch(token) or _UUID.search(token) or "." in token.strip("."):
        return False  # hashes, UUIDs and dotted names are identifiers, not credentials
    classes = sum((any(c.islower() for c in token), any(c.isupper() for c in token), any(c.isdigit() for c in token)))
    return classes >= 3 and _entropy(token) >= _MIN_ENTROPY


def _prefixed(text: str) -> bool:
    for match in _PREFIXED.finditer(text):
        value = match.group(0)
        strict = next((p for p in _STRICT_PREFIX if value.startswith(p)), None)
        body = value[len(strict):] if strict else value
        # Loose prefixes ("key-", "s.") only count with a long, key-like body.
        if strict is None or (len(body) >= 16 and any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
            return True
    return False


_MAYBE: Final = re.compile(r"[A-Za-z0-9+/=_\-.:]{10,}|BEGIN|eyJ")
_DIGITS_AS_ZERO: Final = bytes(48 if 48 <= c <= 57 else c for c in range(256))
_CREDENTIAL_CHARS: Final = bytes(c if chr(c).isalnum() or chr(c) in "+/=_-.:" else 32 for c in range(256))


def text_shows_secret(text: str, hex_context: str | None = None) -> bool:
    """Prose (a description, a title) that shows a credential-shaped example; with `hex_context` (the
    field's texts), a 256-bit hex key too (`hex_key_shown`)."""
    if ":" in text:
        text = _FINGERPRINT.sub(" ", text)  # (a key's fingerprint, "SHA256:q9Yk0pN2…", is published)
    if len(text) < 10:
        return False
    if ("-" in text or "_" in text or "prv" in text or "ya29." in text) and _NAMED_PREFIX.search(text):
        return True
    if text.isascii():
        # Byte-table split instead of a regex pass: tokens of credential characters, ten or longer.
        raw = text.encode("ascii")
        tokens = raw.translate(_CREDENTIAL_CHARS).split()
        if not any(len(t) >= 10 and not t.isalpha() for t in tokens) and b"BEGIN" not in raw \
                and b"0000 0000 0000 0000" not in raw.translate(_DIGITS_AS_ZERO):  # (a card in groups: `_CARD_SHOWN`)
            return False
    else:
        for token in _MAYBE.findall(text):
            if not token.isalpha():
                break
        else:
            return False  # no token a credential could hide in (only plain words)
    return bool(_PEM.search(text) or _JWT.search(text) or _prefixed(text) or _VENDOR.search(text)
                or any(_random_key(m.group(0)) for m in _LONG_TOKEN.finditer(text))
                or any(_luhn(m.group(0).replace(m.group(1), "")) for m in _CARD_SHOWN.finditer(text))
                or (hex_context is not None and hex_key_shown(text, hex_context)))


# A long random string shown as an example in prose ("e.g. XqY/PYkSn+wkndOZ...", an AWS secret access key):
# 32 characters or more of the base64 alphabet, every character class, high entropy. SSH public-key
# blobs ("AAAAC3Nza...") and prefixed identifiers ("pi_3Mtw...", "cus_...") are public, not secrets.
_LONG_TOKEN: Final = re.compile(r"(?<![A-Za-z0-9+/=_\-,])[A-Za-z0-9+/=]{32,}(?![A-Za-z0-9+/=_\-])")


def _random_key(token: str) -> bool:
    return not token.startswith("AAAA") and _high_entropy(token)


_URL_CREDENTIALS: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:[^/\s@<>{}]{3,}@")
_CARD: Final = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
# A card number as cards print it, in four groups of four ("e.g. 4539 1488 0343 6467"): in prose only this
# form counts (a tracking or order number is written in one run, and an IBAN starts with letters).
_CARD_SHOWN: Final = re.compile(r"(?<![\w-])(?<!\d[ -])\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?![\w-])(?![ -]\d)")
# Fingerprints, and OpenSSH public-key lines ("ssh-ed25519 AAAAC3Nza... user@host"): public, never a secret.
_FINGERPRINT: Final = re.compile(r"\b(?:SHA(?:1|256|384|512)|MD5):[A-Za-z0-9+/=:]+|(?<![\w-])(?:ssh-(?:ed25519|rsa|dss)"
                                 r"|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
                                 r"\s+AAAA[A-Za-z0-9+/]+=*", re.IGNORECASE)
_HASH_WORDS: Final = re.compile(r"hash|checksum|sha|md5|digest|commit|fingerprint|etag|uuid|guid|id\b", re.IGNORECASE)
_MNEMONIC_LENGTHS: Final = frozenset({12, 15, 18, 21, 24})


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@functools.lru_cache(maxsize=1)
def _mnemonic_words() -> frozenset[str]:
    """The BIP-39 word lists shipped by the `mnemonic` package (every language it has)."""
    try:
        from mnemonic import Mnemonic
    except ImportError:  # pragma: no cover - declared dependency
        return frozenset()
    words: set[str] = set()
    for language in Mnemonic.list_languages():
        words.update(Mnemonic(language).wordlist)
    return frozenset(words)


def fragment_kind(options: list[object]) -> str | None:
    """The secret a choice's options are pieces of: single digits (one digit of a PIN), or words of the
    BIP-39 lists (one word of a recovery phrase). Picking the right option tells the secret piece by piece."""
    texts = [o.strip().lower() for o in options if isinstance(o, str)]
    if len(texts) < 4 or len(texts) != len(options):
        return None
    if all(len(t) == 1 and t.isdigit() for t in texts) and len(set(texts)) >= 9:
        return "pin"  # (one digit of a PIN is chosen among them all: a lane "1"-"4" is no PIN digit)
    known = _mnemonic_words()
    if sum(t in known for t in texts) * 4 >= len(texts) * 3:
        return "seed_phrase"
    return None


def _seed_phrase(value: str) -> bool:
    words = value.split()
    if len(words) not in _MNEMONIC_LENGTHS:
        return False
    known = _mnemonic_words()
    return sum(w.lower() in known for w in words) >= len(words) - 1


def value_secret_kind(value: str, context: str = "") -> str | None:
    """The kind of credential a default or example value is shaped like, if any.

    `context` is the field's own texts: a hex digest next to "checksum" or "commit" is not a key.
    """
    if len(value) < 10:
        # A distinctive prefix alone ("sk-proj-", "ghp_") is a box pre-filled for the user to complete the key.
        return "secret_value" if _NAMED_PREFIX.fullmatch(value.strip()) else None
    for match in _CARD.finditer(value):
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return "payment_card"
    if text_shows_secret(value) or _URL_CREDENTIALS.search(value):
        return "secret_value"
    if " " in value.strip() and _seed_phrase(value):
        return "seed_phrase"
    for match in _CANDIDATE.finditer(_FINGERPRINT.sub(" ", value)):  # (fingerprints: see above)
        token = match.group(0)
        if _high_entropy(token):
            return "secret_value"
        hex_body = token[2:] if token[:2] in ("0x", "0X") else token
        if len(hex_body) >= 32 and _HEX.fullmatch(hex_body) and not _UUID.search(hex_body) \
                and not _HASH_WORDS.search(context):
            return "secret_value"
    return None


_HEX_RUN: Final = re.compile(r"[0-9a-fA-F]{32,}")
_KEY_WORDS: Final = re.compile(r"key|secret|token|credential|password", re.IGNORECASE)


def hex_key_shown(text: str, context: str) -> bool:
    """Prose that shows a 256-bit hex key ("e.g. 0x4c08...", a wallet's private key), in a field whose
    texts say nothing of hashes, checksums or ids."""
    if len(text) < 32:
        return False
    # 64 hex digits are a 256-bit key; 32 to 63 only in a field that names a key or secret.
    shorter = _KEY_WORDS.search(context) is not None
    for match in _HEX_RUN.finditer(text):
        start, end = match.span()
        length = end - start
        if (length != 64 and not (shorter and 32 <= length < 64)) or (end < len(text) and text[end].isalnum()):
            continue
        if start > 0 and text[start - 1].isalnum() and not (
                text[start - 2:start] in ("0x", "0X") and (start < 3 or not text[start - 3].isalnum())):
            continue
        return not _HASH_WORDS.search(context)
    return False


def looks_like_secret(value: str) -> bool:
    """A default or example value shaped like a real credential."""
    return value_secret_kind(value) is not None


_PATTERN_PREFIX: Final = re.compile(r"^\^?\(?\??:?((?:[A-Za-z0-9_\-]|\\[.\-_])+)")
_PATTERN_LONG_CLASS: Final = re.compile(r"^\^?\[[^\]]*(?:A-Z|a-z)[^\]]*0-9[^\]]*\]\{(\d+)(?:,\d*)?\}\$?$|"
                                        r"^\^?\[[^\]]*0-9[^\]]*(?:A-Z|a-z)[^\]]*\]\{(\d+)(?:,\d*)?\}\$?$")
_CLASS_SAMPLE: Final = {"d": "7", "w": "k", "s": " ", "D": "x", "W": "-", "S": "x"}


def pattern_sample(pattern: str, limit: int = 400) -> str | None:
    """One string the `pattern` accepts (first choice everywhere), or None when it is too intricate.

    Enough to test a pattern against credential shapes: `^xox[bp]-[0-9]+-...$` gives "xoxb-7-...".
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    last = ""
    while i < n and len(out) < limit:
        ch = pattern[i]
        if ch in "^$":
            i += 1
            continue
        if ch == "|":
            break  # first alternative only
        if ch == "(":
            i += 3 if pattern.startswith("(?:", i) else 1
            last = ""
            continue
        if ch == ")":
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            last = _CLASS_SAMPLE.get(nxt, nxt)
            out.append(last)
            i += 2
            continue
        if ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                return None
            body = pattern[i + 1:end]
            if body.startswith("^"):
                last = "x"
            elif len(body) >= 3 and body[1] == "-":
                last = body[2] if body[0] == "1" and body[2] == "9" else body[0]
            elif body.startswith("\\"):
                last = _CLASS_SAMPLE.get(body[1:2], body[1:2])
            else:
                last = body[0]
            out.append(last)
            i = end + 1
            continue
        if ch == "{":
            end = pattern.find("}", i)
            if end < 0:
                return None
            counts = pattern[i + 1:end].split(",")
            try:
                times = int(counts[-1] or counts[0]) if len(counts) > 1 else int(counts[0])
            except ValueError:
                return None
            out.extend([last] * max(times - 1, 0))
            i = end + 1
            continue
        if ch in "+*":
            out.extend([last] * 23)
            i += 1
            continue
        if ch == "?":
            i += 1
            continue
        if ch == ".":
            last = "x"
            out.append(last)
            i += 1
            continue
        last = ch
        out.append(ch)
        i += 1
    return "".join(out)


# A pattern of 12, 15, 18, 21 or 24 lower-case words: the length of a wallet's recovery phrase (BIP-39).
_WORD: Final = r"\[a-z\](?:\+|\{\d+(?:,\d*)?\})"
_GAP: Final = r"(?: |\\s|\[ \]|\\s\+| \+)"
_MNEMONIC_PATTERN: Final = re.compile(
    rf"\^?(?:\((?:\?:)?{_WORD}{_GAP}\)\{{(\d+)(?:,(\d+))?\}}{_WORD}"
    rf"|{_WORD}\((?:\?:)?{_GAP}{_WORD}\)\{{(\d+)(?:,(\d+))?\}})\$?")


def _mnemonic_pattern(pattern: str) -> bool:
    match = _MNEMONIC_PATTERN.fullmatch(pattern)
    if match is None:
        return False
    counts = [int(c) + 1 for c in match.groups() if c is not None]
    return any(c in _MNEMONIC_LENGTHS for c in counts)


_NATIONAL_ID_SHAPE: Final = re.compile(r"[2-9]\d{3}[ -]\d{4}[ -]\d{4}|\d{3}-\d{2}-\d{4}")


def pattern_asks_for_secret(pattern: str) -> bool:
    """A `pattern` that only a credential satisfies (a vendor prefix, a key block, a long token, a card,
    a recovery phrase's word count)."""
    if "BEGIN" in pattern and "PRIVATE" in pattern:
        return True
    if "{" in pattern and "[a-z]" in pattern and _mnemonic_pattern(pattern):
        return True
    literal = _PATTERN_PREFIX.match(pattern)
    if literal is not None:
        prefix = literal.group(1).replace("\\", "")
        if _PREFIXED.match(prefix + "x" * 16) and len(prefix) >= 3 and not prefix.startswith(("key-", "s.")):
            return True
        if prefix.startswith("eyJ"):
            return True
    long_class = _PATTERN_LONG_CLASS.match(pattern)
    if long_class is not None and int(long_class.group(1) or long_class.group(2)) >= 24:
        return True
    sample = pattern_sample(pattern)
    if sample and len(sample) >= 13:
        if text_shows_secret(sample):
            return True
        digits = sample.replace(" ", "").replace("-", "")
        if digits.isdigit() and 13 <= len(digits) <= 19 and digits[0] in "3456":
            return True  # a card number pattern (Visa, Mastercard, Amex, Discover)
    if sample and _NATIONAL_ID_SHAPE.fullmatch(sample):
        return True  # grouped like a national id: Aadhaar "2345 6789 0123", US SSN "123-45-6789"
    return False
