"""URL-mode target policy: a table of targets a server might send, and a never-raises property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.url_target import (
    UrlTargetRules,
    UrlTargetVerdict,
    allowed_host_entry_problem,
    check_url_target,
)

ANY = UrlTargetRules()
IDN = UrlTargetRules(allow_punycode=True)
IP = UrlTargetRules(allow_ip_literals=True)
LISTED = UrlTargetRules(
    allowed_hosts=(
        "auth.example.com",
        "*.example.org",
        "paypal.com",
        "google.com",
        "microsoft.com",
        "xn--bcher-kva.de",
        "Apple.COM.",
    ),
    allow_punycode=True,
)
SHORT = UrlTargetRules(max_length=40)
LOCAL_OK = UrlTargetRules(allow_local_hosts=True)
IP_LISTED = UrlTargetRules(allowed_hosts=("10.0.0.5",), allow_ip_literals=True)

# (url, rules, expected reason); "ok" means allowed.
CASES: list[tuple[str, UrlTargetRules, str]] = [
    # plain https targets
    ("https://example.com", ANY, "ok"),
    ("https://example.com/", ANY, "ok"),
    ("https://example.com/oauth/start?state=abc&x=1#frag", ANY, "ok"),
    ("https://EXAMPLE.com/Path", ANY, "ok"),
    ("HTTPS://example.com/", ANY, "ok"),
    ("https://example.com:8443/pay", ANY, "ok"),
    ("https://example.com:/x", ANY, "ok"),
    ("https://example.com./x", ANY, "ok"),
    ("https://sub_domain.example.com/", ANY, "ok"),
    ("https://1.2.3.4.example.com/", ANY, "ok"),
    ("https://example.com/caf\u00e9", ANY, "ok"),
    ("https://example.com/a@b", ANY, "ok"),
    ("https://example.com?next=https://other.net", ANY, "ok"),
    # schemes
    ("http://example.com/", ANY, "scheme_not_https"),
    ("javascript:alert(1)", ANY, "scheme_not_https"),
    ("JaVaScRiPt:alert(1)", ANY, "scheme_not_https"),
    ("data:text/html;base64,PHNjcmlwdD4=", ANY, "scheme_not_https"),
    ("file:///etc/hosts", ANY, "scheme_not_https"),
    ("ftp://example.com/", ANY, "scheme_not_https"),
    ("wss://example.com/", ANY, "scheme_not_https"),
    ("//example.com/path", ANY, "scheme_not_https"),
    ("example.com/path", ANY, "scheme_not_https"),
    ("https:example.com", ANY, "unparsable"),
    ("https:/example.com", ANY, "unparsable"),
    ("https:///example.com", ANY, "unparsable"),
    # userinfo
    ("https://user:pass@example.com/", ANY, "userinfo"),
    ("https://user@example.com/", ANY, "userinfo"),
    ("https://good.com@evil.com/", ANY, "userinfo"),
    ("https://auth.example.com@evil.net/", LISTED, "userinfo"),
    ("https://a@b@example.com/", ANY, "userinfo"),
    # backslashes and invisible characters
    ("https://evil.com\\@good.com", ANY, "backslash"),
    ("https://example.com\\path", ANY, "backslash"),
    ("https://exa mple.com/", ANY, "whitespace_or_control"),
    (" https://example.com/", ANY, "whitespace_or_control"),
    ("https://example.com/\n", ANY, "whitespace_or_control"),
    ("https://exam\tple.com/", ANY, "whitespace_or_control"),
    ("https://example.com/\u202egnp.exe", ANY, "whitespace_or_control"),
    ("https://exam\u200bple.com/", ANY, "whitespace_or_control"),
    ("https://example.com/\x00", ANY, "whitespace_or_control"),
    ("https://example.com/\u00a0", ANY, "whitespace_or_control"),
    # IPv4 in every form browsers accept, and IPv6
    ("https://127.0.0.1/", ANY, "ip_literal"),
    ("https://2130706433/", ANY, "ip_literal"),
    ("https://017700000001/", ANY, "ip_literal"),
    ("https://0177.0.0.1/", ANY, "ip_literal"),
    ("https://0x7f.1/", ANY, "ip_literal"),
    ("https://0x7f000001/", ANY, "ip_literal"),
    ("https://127.1/", ANY, "ip_literal"),
    ("https://127.0.1/", ANY, "ip_literal"),
    ("https://192.168.1.1.:8080/", ANY, "ip_literal"),
    ("https://[::1]/", ANY, "ip_literal"),
    ("https://[::ffff:127.0.0.1]/", ANY, "ip_literal"),
    ("https://[2001:db8::1]:8443/", ANY, "ip_literal"),
    ("https://93.184.216.34/", IP, "ok"),
    ("https://[2001:db8::1]/", IP, "ok"),
    ("https://10.0.0.5/", IP_LISTED, "ok"),
    ("https://10.0.0.6/", IP_LISTED, "host_not_allowed"),
    ("https://256.1.1.1/", ANY, "unparsable"),
    ("https://09.1/", ANY, "unparsable"),
    ("https://1.2.3.4.5/", ANY, "unparsable"),
    ("https://example.0x/", ANY, "unparsable"),
    ("https://[::1/", ANY, "unparsable"),
    ("https://[nothost]/", ANY, "unparsable"),
    # malformed authorities
    ("https://", ANY, "unparsable"),
    ("https:///", ANY, "unparsable"),
    ("https://:443/", ANY, "unparsable"),
    ("https://example.com:99999/", ANY, "unparsable"),
    ("https://example.com:8o/", ANY, "unparsable"),
    ("https://a:b:c/", ANY, "unparsable"),
    ("https://a..com/", ANY, "unparsable"),
    ("https://.example.com/", ANY, "unparsable"),
    ("https://example.com../", ANY, "unparsable"),
    ("https://exa<mple.com/", ANY, "unparsable"),
    ("https://*.example.com/", ANY, "unparsable"),
    ("https://xn--zzzzzzzzz-.com/", IDN, "unparsable"),
    ("", ANY, "unparsable"),
    # disguised hosts: percent-escapes, fullwidth forms, compatibility letters
    ("https://exa%6dple.com/", ANY, "noncanonical_host"),
    ("https://evil.com%2f@good.com/", ANY, "userinfo"),
    ("https://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/", ANY, "noncanonical_host"),
    ("https://example\uff0ecom/", ANY, "noncanonical_host"),
    ("https://example\u3002com/", ANY, "noncanonical_host"),
    ("https://example\uff61com/", ANY, "noncanonical_host"),
    ("https://\uff50\uff41\uff59\uff50\uff41\uff4c.com/", LISTED, "noncanonical_host"),
    ("https://\U0001d429\U0001d41a\U0001d432\U0001d429\U0001d41a\U0001d425.com/", LISTED, "noncanonical_host"),
    ("https://\uff11\uff12\uff17.0.0.1/", ANY, "noncanonical_host"),
    # internationalized hosts
    ("https://b\u00fccher.de/", ANY, "punycode"),
    ("https://xn--bcher-kva.de/", ANY, "punycode"),
    ("https://b\u00fccher.de/", IDN, "ok"),
    ("https://xn--bcher-kva.de/", IDN, "ok"),
    ("https://b\u00fccher.de/", LISTED, "ok"),
    ("https://\u4f8b\u3048.jp/", IDN, "ok"),
    ("https://\u65e5\u672c\u8a9e\u30c6\u30b9\u30c8.jp/", IDN, "ok"),
    ("https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/", IDN, "ok"),
    ("https://xn--80ak6aa92e.com/", ANY, "punycode"),
    ("https://XN--80AK6AA92E.com/", IDN, "confusable_host"),
    # Cyrillic look-alikes
    ("https://\u0440\u0430\u0443\u0440\u0430l.com/", ANY, "punycode"),
    ("https://\u0440\u0430\u0443\u0440\u0430l.com/", IDN, "mixed_script"),
    ("https://\u0440\u0430\u0443\u0440\u0430l.com/", LISTED, "mixed_script"),
    ("https://\u0440\u0430\u0443\u0440\u0430\u04cf.com/", IDN, "confusable_host"),
    ("https://\u0440\u0430\u0443\u0440\u0430.com/", IDN, "confusable_host"),
    ("https://\u0430\u0440\u0440\u04cf\u0435.com/", IDN, "confusable_host"),
    ("https://xn--pple-43d.com/", IDN, "mixed_script"),
    ("https://secure.\u0435\u0445\u0430mple.org/", LISTED, "mixed_script"),
    ("https://\u0440\u0430\u0443\u0440\u0430\u04cf.example.org/", LISTED, "confusable_host"),
    # Greek and Armenian look-alikes
    ("https://g\u03bf\u03bfgle.com/", IDN, "mixed_script"),
    ("https://\u03bf\u03bf.com/", IDN, "confusable_host"),
    ("https://g\u0585\u0585gle.com/", IDN, "mixed_script"),
    ("https://\u0585\u0581.com/", IDN, "confusable_host"),
    ("https://\u0585\u0581.com/", ANY, "punycode"),
    # ASCII look-alikes are only judged against allowed hosts
    ("https://g00gle.com/", ANY, "ok"),
    ("https://g00gle.com/", LISTED, "confusable_host"),
    ("https://paypa1.com/", LISTED, "confusable_host"),
    ("https://rnicrosoft.com/", LISTED, "confusable_host"),
    ("https://login.examp1e.org/", LISTED, "confusable_host"),
    ("https://paypal-login.com/", LISTED, "host_not_allowed"),
    # allow-list and wildcards
    ("https://auth.example.com/start", LISTED, "ok"),
    ("https://AUTH.EXAMPLE.COM./start", LISTED, "ok"),
    ("https://auth.example.com:8443/", LISTED, "ok"),
    ("https://example.com/", LISTED, "host_not_allowed"),
    ("https://www.auth.example.com/", LISTED, "host_not_allowed"),
    ("https://auth.example.com.evil.net/", LISTED, "host_not_allowed"),
    ("https://a.example.org/", LISTED, "ok"),
    ("https://a.b.example.org/", LISTED, "ok"),
    ("https://example.org/", LISTED, "host_not_allowed"),
    ("https://badexample.org/", LISTED, "host_not_allowed"),
    ("https://example.org.evil.net/", LISTED, "host_not_allowed"),
    ("https://apple.com/", LISTED, "ok"),
    ("https://paypal.com/", LISTED, "ok"),
    ("http://auth.example.com/", LISTED, "scheme_not_https"),
    # local names
    ("https://localhost/", ANY, "local_host"),
    ("https://localhost:8808/", ANY, "local_host"),
    ("https://intranet/", ANY, "local_host"),
    ("https://app.localhost/", ANY, "local_host"),
    ("https://printer.local/", ANY, "local_host"),
    ("https://svc.internal/", ANY, "local_host"),
    ("https://router.home.arpa/", ANY, "local_host"),
    ("https://localhost/", LOCAL_OK, "ok"),
    ("https://localhost/", UrlTargetRules(allowed_hosts=("localhost",)), "ok"),
    # length
    ("https://example.com/" + "a" * 2028, ANY, "ok"),
    ("https://example.com/" + "a" * 2029, ANY, "too_long"),
    ("https://example.com/abcdefghijklmnop", SHORT, "ok"),
    ("https://example.com/abcdefghijklmnopqrstu", SHORT, "too_long"),
]


@pytest.mark.parametrize(("url", "rules", "expected"), CASES)
def test_url_target_table(url: str, rules: UrlTargetRules, expected: str) -> None:
    verdict = check_url_target(url, rules)
    assert verdict.reason == expected
    assert verdict.allowed is (expected == "ok")


def test_table_is_large_and_mixed() -> None:
    reasons = {expected for _, _, expected in CASES}
    assert len(CASES) >= 70
    assert {
        "ok",
        "scheme_not_https",
        "userinfo",
        "ip_literal",
        "punycode",
        "mixed_script",
        "confusable_host",
        "host_not_allowed",
        "too_long",
        "unparsable",
        "noncanonical_host",
        "backslash",
    } <= reasons


@pytest.mark.parametrize(
    ("url", "rules", "host"),
    [
        ("https://EXAMPLE.com./x", ANY, "example.com"),
        ("https://0x7f.1/", ANY, "127.0.0.1"),
        ("https://2130706433/", ANY, "127.0.0.1"),
        ("https://[0:0::1]/", ANY, "[::1]"),
        ("https://b\u00fccher.de/", ANY, "xn--bcher-kva.de"),
        ("https://\u0440\u0430\u0443\u0440\u0430l.com/", IDN, "xn--l-7sba6dbr.com"),
    ],
)
def test_verdict_reports_the_normalized_ascii_host(url: str, rules: UrlTargetRules, host: str) -> None:
    assert check_url_target(url, rules).host == host


@pytest.mark.parametrize("value", [None, 42, b"https://example.com", ["https://example.com"], {"url": "x"}])
def test_non_strings_are_unparsable(value: object) -> None:
    assert check_url_target(value, ANY) == UrlTargetVerdict(False, "unparsable", None)


def test_empty_allow_list_means_any_https_host() -> None:
    assert check_url_target("https://anything.example.net/", ANY).allowed
    assert not check_url_target("https://anything.example.net/", LISTED).allowed


def test_malformed_allow_list_entries_match_nothing() -> None:
    rules = UrlTargetRules(allowed_hosts=("*", "*.com", "https://example.com", "exa mple.com", "*.example.*"))
    for url in ("https://example.com/", "https://a.example.com/", "https://b.com/"):
        assert check_url_target(url, rules).reason == "host_not_allowed"


@pytest.mark.parametrize(
    ("entry", "ok"),
    [
        ("auth.example.com", True),
        ("*.example.org", True),
        ("b\u00fccher.de", True),
        ("10.0.0.5", True),
        ("*", False),
        ("*.com", False),
        ("a.*.example.org", False),
        ("https://example.com", False),
        ("example.com/path", False),
        ("exa mple.com", False),
        ("a..com", False),
    ],
)
def test_allowed_host_entry_problem(entry: str, ok: bool) -> None:
    assert (allowed_host_entry_problem(entry) is None) is ok


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    verdict = check_url_target(text, LISTED)
    assert isinstance(verdict, UrlTargetVerdict)
    assert verdict.allowed is (verdict.reason == "ok")


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from([ANY, IDN, IP, LISTED]))
def test_never_raises_on_text_after_an_https_prefix(tail: str, rules: UrlTargetRules) -> None:
    verdict = check_url_target("https://" + tail, rules)
    assert isinstance(verdict, UrlTargetVerdict)
    if verdict.allowed:
        assert verdict.host is not None
