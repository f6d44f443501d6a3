"""Link stripping (policy stage 3, `form_urls: strip`): every disguise, every position, properties, corpus."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.policy.link_stripping import (
    LINK_MARKER,
    LinkStripResult,
    _may_contain_link,
    contains_link,
    strip_form_links,
    strip_links,
    strip_message_links,
)

M = LINK_MARKER
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "links.jsonl"


# --- one string: what is removed -----------------------------------------------------------------

REMOVED: list[tuple[str, str]] = [
    # plain URLs and schemes
    ("Go to https://evil.com/login now", f"Go to {M} now"),
    ("Go to http://evil.com.", f"Go to {M}."),
    ("(see https://evil.com/a_(b))", f"(see {M})"),
    ("ftp://files.example.org/pub", M),
    ("ssh://git@host.example", M),
    ("zoommtg://zoom.us/join?confno=1", M),
    ("//evil.com/path", M),
    ("http:evil.com", M),
    ("https:/evil.com", M),
    # www. and bare domains a chat UI linkifies
    ("visit www.evil.com today", f"visit {M} today"),
    ("visit www.intranet", f"visit {M}"),
    ("log in at evil.com/login", f"log in at {M}"),
    ("paypa1.co", M),
    ("support.example.co.uk is down", f"{M} is down"),
    ("example.app", M),
    ("archive.zip", M),
    ("evil.com?x=1#frag", M),
    ("EVIL.COM", M),
    ("evil.com:8443", M),
    # dangerous schemes
    ("javascript:alert(1)", M),
    ("JavaScript:void(0)", M),
    ("vbscript:msgbox(1)", M),
    ("data:text/html;base64,PHNjcmlwdD4=", M),
    ("data:,hello", M),
    ("file:///etc/passwd", M),
    ("file:\\\\server\\share", M),
    ("ms-msdt:/id PCWDiagnostic", f"{M} PCWDiagnostic"),
    ("intent://scan/#Intent;scheme=zxing;end", M),
    # e-mail, mailto, tel
    ("mailto:help@evil.com", M),
    ("call tel:+1-555-0100 now", f"call {M} now"),
    # markdown
    ("[click here](https://evil.com) please", f"click here {M} please"),
    ('[click](https://evil.com "Title")', f"click {M}"),
    ("[relative](/settings/account)", f"relative {M}"),
    ("[empty]()", f"empty {M}"),
    ("[a [nested] text](https://evil.com)", f"a [nested] text {M}"),
    ("![logo](https://evil.com/pixel.png)", f"logo {M}"),
    ("[](https://evil.com)", M),
    ("[evil.com](https://evil.com)", f"{M} {M}"),
    ("<https://evil.com/x>", M),
    ("<mailto:x@evil.com>", M),
    ("<x@evil.com>", M),
    ("see [docs][1]\n\n[1]: https://evil.com\n", f"see docs {M}\n\n"),
    ("read [the guide] first\n[The  Guide]: <https://e.com/x> 'T'\nbye", f"read the guide {M} first\nbye"),
    ("[a][] and [b]\n[a]: /rel\n[b]: x.com", f"a {M} and b {M}\n"),
    ("[orphan]: https://evil.com", M),
    # HTML
    ('<a href="https://evil.com">Click</a> now', f"Click {M} now"),
    ("<A HREF='//evil.com'><b>Bold</b></A>", f"<b>Bold</b> {M}"),
    ('<img src="https://evil.com/p.gif">', M),
    ('<form action="https://evil.com"><input></form>', f"{M}<input></form>"),
    # Unicode tricks
    ("ex\u200bample.com", M),
    ("example\u200c.com/x", M),
    ("ex\u00adample.com", M),
    ("ex\u2060ample.com", M),
    ("javascript\u200b:alert(1)", M),
    ("example．com", M),
    ("example。com", M),
    ("example｡com", M),
    ("ｅｘａｍｐｌｅ．ｃｏｍ", M),
    ("ｈｔｔｐｓ：／／ｅｖｉｌ．ｃｏｍ", M),
    ("𝐞𝐯𝐢𝐥.com", M),
    ("пример.рф", M),
    ("例子.中国", M),
    ("xn--80ak6aa92e.com", M),
    ("http://xn--pypl-53dc.com/", M),
    # encodings and defanged forms
    ("http://%65vil.com", M),
    ("evil%2Ecom/login", M),
    ("evil&#46;com", M),
    ("java&#115;cript:alert(1)", M),
    ("evil\\.com", M),
    ("hxxp://evil.com", M),
    ("hxxps[:]//evil[.]com/x", M),
    ("evil[.]com", M),
    ("evil(dot)com", M),
    ("evil [dot] com", M),
    ("evil{.}com", M),
    # IP literals
    ("http://192.168.0.1", M),
    ("1.2.3.4/x", M),
    ("1.2.3.4:22", M),
    ("http://[::1]:8080/", M),
    ("http://0x7f.1/", M),
    ("http://2130706433/", M),
    ("localhost:8080/admin", M),
    # file-name look-alikes that are links after all
    ("evil.py/login", M),
    ("https://main.py", M),
    ("www.main.py", M),
    ("main.py:8080", M),
    ("ｍａｉｎ．ｐｙ", M),
    ("mai\u200bn.py", M),
    # a folded colon must not hide the host behind it (linkify refuses a host right after ':')
    ("更多信息：invoice.zip", f"更多信息：{M}"),
    ("备用地址：ｌｏｇｉｎ－ａｌｔ．ｎｅｔ", f"备用地址：{M}"),
    ("Info:evil.com", f"Info:{M}"),
    ("say \"JavaScript:void(fetch('//x.net'))\" now", f'say "{M}" now'),
]


@pytest.mark.parametrize(("text", "expected"), REMOVED)
def test_link_is_replaced_by_marker(text: str, expected: str) -> None:
    stripped, removed = strip_links(text)
    assert stripped == expected
    assert removed == expected.count(M) >= 1
    assert contains_link(text)
    assert not contains_link(stripped)


KEPT: list[str] = [
    "",
    "Your full name.",
    "Pick one: red or blue",
    "main.py",
    "Run config.sh, then edit notes.md and Main.java",
    "src/main.py and ../docs/readme.md",
    "index.html",
    "report.pdf",
    "v2.1.3",
    "version 1.2.3.4",
    "e.g. this, i.e. that, etc.",
    "pi is 3.14",
    "the train leaves at 10.30",
    "Wait... what?",
    "U.S. and U.K.",
    "Node.js and Vue.js",
    "Mr.Smith",
    "我们是一家公司。网络服务很好",
    "お名前を入力してください。",
    "Ratio 16:9, time 10:30",
    "C:\\Users\\me",
    "@alice mentioned you",
    # E-mail addresses in plain text are not links (issue 11); explicit mailto: links are.
    "write to help@evil.com please",
    "user.name+tag@sub.example.co.uk",
    "金曜日までに help@account-verify.com で",
    "[optional] field",
    "Choose [A] or [B]",
    "z.B. so, d.h. nicht",
    "app.js, data.json and Makefile",
    f"already {M} here",
]


@pytest.mark.parametrize("text", KEPT)
def test_benign_text_is_kept(text: str) -> None:
    assert strip_links(text) == (text, 0)
    assert not contains_link(text)


def test_marker_next_to_brackets_is_stable() -> None:
    text = "<https://evil.com>(foo)"
    once, _ = strip_links(text)
    assert strip_links(once) == (once, 0)
    assert not contains_link(once)


def test_strip_links_never_raises_on_non_string() -> None:
    stripped, removed = strip_links(None)  # type: ignore[arg-type]
    assert (stripped, removed) == (M, 1)  # fails closed


# --- form params: every position -----------------------------------------------------------------

LINK = "see https://evil.com"


def _form(**overrides: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "title": "Signup",
        "description": "Plain",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your name", "default": "Ann"},
            "plan": {
                "type": "string",
                "title": "Plan",
                "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}],
            },
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "tags": {
                "type": "array",
                "items": {"anyOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]},
                "default": ["x"],
            },
            "agree": {"type": "boolean", "default": False},
        },
        "required": ["name"],
    }
    params: dict[str, Any] = {"mode": "form", "message": "Please fill in", "requestedSchema": schema}
    params.update(overrides)
    return params


def test_clean_form_is_returned_with_same_objects() -> None:
    params = _form()
    result = strip_form_links(params)
    assert result == LinkStripResult(params, 0, ())
    assert result.params is not params
    assert result.params["requestedSchema"] is params["requestedSchema"]


@pytest.mark.parametrize(
    ("path", "summary"),
    [
        (("message",), "1 link removed from message"),
        (("requestedSchema", "title"), "1 link removed from form title and description"),
        (("requestedSchema", "description"), "1 link removed from form title and description"),
        (("requestedSchema", "properties", "name", "title"), "1 link removed from field titles"),
        (("requestedSchema", "properties", "name", "description"), "1 link removed from field descriptions"),
        (("requestedSchema", "properties", "name", "default"), "1 link removed from default values"),
        (("requestedSchema", "properties", "plan", "oneOf", 1, "title"), "1 link removed from option titles"),
        (("requestedSchema", "properties", "size", "enumNames", 0), "1 link removed from option titles"),
        (
            ("requestedSchema", "properties", "tags", "items", "anyOf", 0, "title"),
            "1 link removed from option titles",
        ),
        (("requestedSchema", "properties", "tags", "default", 0), "1 link removed from default values"),
        (("requestedSchema", "properties", "tags", "items", "enumNames"), "1 link removed from option titles"),
    ],
)
def test_each_position_is_stripped(path: tuple[str | int, ...], summary: str) -> None:
    params = _form()
    target: Any = params
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = LINK
    before = copy.deepcopy(params)

    result = strip_form_links(params)

    assert params == before  # input never mutated
    assert result.removed == 1
    assert result.changes == (summary,)
    got: Any = result.params
    for key in path:
        got = got[key]
    assert got == f"see {M}"
    assert "evil.com" not in json.dumps(result.params)
    # untouched siblings keep their identity
    props = result.params["requestedSchema"]["properties"]
    assert props["agree"] is params["requestedSchema"]["properties"]["agree"]


def test_answers_are_not_touched() -> None:
    """Enum values, const and property names are what the server gets back: never rewritten."""
    schema = {
        "type": "object",
        "properties": {
            "evil.com": {"type": "string", "enum": ["ok"]},
            "pick": {"type": "string", "oneOf": [{"const": "evil.com", "title": "ok"}]},
            "named": {"type": "string", "enum": ["https://a.example/x"], "enumNames": ["A"]},
        },
    }
    params = {"message": "hi", "requestedSchema": schema}
    assert strip_form_links(params).removed == 0


def test_untitled_choice_with_links_gets_titles_to_show() -> None:
    """An `enum` value holding a link is the answer and stays; the host is given a title to show instead
    (`enumNames` for a single choice, `anyOf` of {const, title} for a multi-select's items)."""
    schema = {
        "type": "object",
        "properties": {
            "plan": {"type": "string", "enum": ["Basic", "Details: www.evil.example/5g"]},
            "contact": {"type": "array", "items": {"type": "string", "enum": ["Phone", "mailto:hr@evil.example"]}},
        },
    }
    result = strip_form_links({"message": "Pick one", "requestedSchema": schema})
    props = result.params["requestedSchema"]["properties"]
    assert props["plan"]["enum"] == ["Basic", "Details: www.evil.example/5g"]
    assert props["plan"]["enumNames"] == ["Basic", f"Details: {LINK_MARKER}"]
    assert props["contact"]["items"] == {"type": "string", "anyOf": [
        {"const": "Phone", "title": "Phone"}, {"const": "mailto:hr@evil.example", "title": LINK_MARKER}]}
    assert result.removed == 2 and result.changes == ("2 links removed from option titles",)
    assert schema["properties"]["plan"] == {"type": "string", "enum": ["Basic", "Details: www.evil.example/5g"]}
    # A bare domain as an option is the choice's text, not a link to follow: no titles are added.
    bare = {"type": "object", "properties": {"server": {"type": "string", "enum": ["keys.openpgp.org", "none"]}}}
    assert strip_form_links({"message": "Pick one", "requestedSchema": bare}).removed == 0


def test_summaries_count_and_never_hold_values() -> None:
    params = _form(message="a.evil.com b.evil.com and https://third.example")
    params["requestedSchema"]["properties"]["name"]["description"] = "evil.com"
    result = strip_form_links(params)
    assert result.removed == 4
    assert result.changes == ("3 links removed from message", "1 link removed from field descriptions")
    assert all("evil" not in c and "example" not in c for c in result.changes)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"message": 42},
        {"message": None, "requestedSchema": "not a dict"},
        {"requestedSchema": {"properties": ["x"]}},
        {"requestedSchema": {"properties": {"a": "evil.com", "b": None, "c": {"title": 3}}}},
        {"requestedSchema": {"properties": {"a": {"oneOf": "evil.com", "enumNames": {"x": 1}}}}},
        {"requestedSchema": {"properties": {"a": {"oneOf": [None, "x", {"title": None}], "items": 7}}}},
        {"requestedSchema": {"properties": {"a": {"default": [1, None, {"x": "evil.com"}]}}}},
    ],
)
def test_junk_is_left_alone(params: dict[str, Any]) -> None:
    before = copy.deepcopy(params)
    result = strip_form_links(params)
    assert result.params == before
    assert result.removed == 0
    assert params == before


def test_url_mode_strips_only_the_message() -> None:
    params = {
        "mode": "url",
        "message": "Open evil.com to continue",
        "url": "https://auth.example.com/start?next=evil.com",
        "elicitationId": "e-1",
    }
    result = strip_message_links(params)
    assert result.params["message"] == f"Open {M} to continue"
    assert result.params["url"] is params["url"]
    assert result.params["elicitationId"] == "e-1"
    assert result.changes == ("1 link removed from message",)
    assert strip_message_links({"mode": "url", "url": "https://x.example"}).removed == 0


def test_fast_path_skips_plain_text() -> None:
    assert not _may_contain_link("Please enter your full name. It is used for the booking.")
    assert _may_contain_link("evil.com")
    assert _may_contain_link("ex\u200bample")  # any invisible character takes the slow path


# --- properties ----------------------------------------------------------------------------------

FRAGMENTS = [
    "evil", "main", "www", ".", "com", "py", "co", "://", "http", "hxxp", "[", "]", "(", ")", "\u200b",
    "．", "。", "｡", "@", "/", " ", "<a href=x>", "</a>", "<", ">", "%2E", "&#46;", "[.]", "(dot)", ":",
    "1", "2.3", "\n", "[1]: ", "[1]", "!", "javascript:", "data:,", "mailto:", "tel:+1 555", "ｅ", "\\.",
    "xn--p1ai", "рф", "e.g.", '"', "[link removed]", "localhost:80", "1.2.3.4", "/x", ":8080", "?q=1",
    "-", "_", "…", "ﬁ", "\u00ad", "&colon;", "%3A", "[:]", "file:/", "]:", "](", "][",
]  # fmt: skip
urlish_text = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
any_text = st.one_of(urlish_text, st.text())
PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(any_text)
def test_strip_is_idempotent_and_leaves_no_link(text: str) -> None:
    once, removed = strip_links(text)
    assert strip_links(once) == (once, 0)
    assert not contains_link(once)
    assert (removed == 0) == (once == text)


@PROPS
@given(st.text())
def test_strip_never_raises(text: str) -> None:
    stripped, removed = strip_links(text)
    assert isinstance(stripped, str)
    assert removed >= 0


@PROPS
@given(st.text(alphabet=st.characters(exclude_characters=".:/@&%\\[<。｡．﹒․‥…", exclude_categories=["Cf"])))
def test_text_without_link_punctuation_is_unchanged(text: str) -> None:
    assert strip_links(text) == (text, 0)


@PROPS
@given(urlish_text)
def test_fast_path_never_hides_a_link(text: str) -> None:
    assert _may_contain_link(text) or not contains_link(text)


# --- corpus --------------------------------------------------------------------------------------


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_corpus_shape() -> None:
    entries = _corpus()
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    links = [e for e in entries if e["category"] == "link"]
    negatives = [e for e in entries if e["category"] == "hard_negative"]
    assert len(links) >= 150
    assert len(negatives) >= 20
    assert len(links) + len(negatives) == len(entries)
    assert {e["expect"] for e in links} == {"modify"} and {e["expect_rule"] for e in links} == {"form_urls"}
    assert {e["expect"] for e in negatives} == {"allow"} and {e["expect_rule"] for e in negatives} == {None}
    assert len({e["lang"] for e in entries}) >= 5


def test_corpus_links_are_all_removed() -> None:
    survivors = []
    for entry in _corpus():
        params = entry["params"]
        result = strip_form_links(params) if params.get("mode", "form") == "form" else strip_message_links(params)
        if entry["category"] == "link":
            assert result.removed >= 1, entry["id"]
            assert result.changes, entry["id"]
            # the url of URL mode is not text and is never touched
            visible = dict(result.params)
            visible.pop("url", None)
            survivors += [entry["id"] for s in _strings(visible) if contains_link(s)]
        else:
            assert result.removed == 0, entry["id"]
            assert result.params == params, entry["id"]
    assert survivors == []
