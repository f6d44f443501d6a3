"""The bounded SSE parser: chunking never changes the events, CR/LF/CRLF are alike, every bound raises."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.sse import SseEvent, SseParser, frame

EOLS = (b"\r\n", b"\n", b"\r")

# Field values with no line ends and no leading space (a leading space after the colon is dropped).
value = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"), max_size=40
).filter(lambda s: not s.startswith(" "))
event_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10)


@st.composite
def events(draw: st.DrawFn) -> list[tuple[list[str], str | None, str | None, int | None, list[str]]]:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        data = draw(st.lists(value, min_size=1, max_size=4))
        name = draw(st.none() | event_name)
        eid = draw(st.none() | value.filter(bool))
        retry = draw(st.none() | st.integers(0, 10**6))
        comments = draw(st.lists(value, max_size=2))
        out.append((data, name, eid, retry, comments))
    return out


def encode(evs: list[tuple[list[str], str | None, str | None, int | None, list[str]]], eol: bytes) -> bytes:
    out = b""
    for data, name, eid, retry, comments in evs:
        for c in comments:
            out += b":" + c.encode() + eol
        if name is not None:
            out += b"event: " + name.encode() + eol
        if eid is not None:
            out += b"id: " + eid.encode() + eol
        if retry is not None:
            out += b"retry: " + str(retry).encode() + eol
        for d in data:
            out += b"data: " + d.encode() + eol
        out += eol
    return out


def expected(evs: list[tuple[list[str], str | None, str | None, int | None, list[str]]]) -> list[SseEvent]:
    last_id: str | None = None
    out = []
    for data, name, eid, retry, _ in evs:
        if eid is not None:
            last_id = eid
        out.append(SseEvent("\n".join(data), name or "message", last_id, retry))
    return out


def feed_in_pieces(raw: bytes, cuts: list[int], parser: SseParser | None = None) -> list[SseEvent]:
    parser = parser or SseParser()
    got: list[SseEvent] = []
    prev = 0
    for cut in [*sorted({c % (len(raw) + 1) for c in cuts}), len(raw)]:
        got.extend(parser.feed(raw[prev:cut]))
        prev = cut
    return got


@settings(max_examples=300, deadline=None)
@given(events(), st.sampled_from(EOLS), st.lists(st.integers(0, 10_000), max_size=30))
def test_any_chunking_and_any_line_end_give_the_same_events(evs, eol, cuts) -> None:  # type: ignore[no-untyped-def]
    raw = encode(evs, eol)
    assert feed_in_pieces(raw, cuts) == expected(evs)


@settings(max_examples=200, deadline=None)
@given(events(), st.lists(st.sampled_from(EOLS), min_size=1), st.lists(st.integers(0, 10_000), max_size=30))
def test_mixed_line_ends_in_one_stream(evs, eols, cuts) -> None:  # type: ignore[no-untyped-def]
    # Encode each event with its own line end: a CR followed by a separate LF-ended line must not merge.
    raw = b"".join(encode([ev], eols[i % len(eols)]) for i, ev in enumerate(evs))
    assert feed_in_pieces(raw, cuts) == expected(evs)


def test_byte_at_a_time_crlf_split_between_chunks() -> None:
    raw = b"id: 7\r\ndata: a\r\n\r\ndata: b\r\r"
    parser = SseParser()
    got = [e for i in range(len(raw)) for e in parser.feed(raw[i : i + 1])]
    assert got == [SseEvent("a", id="7"), SseEvent("b", id="7")]


def test_priming_event_empty_data_id_and_retry() -> None:
    parser = SseParser()
    assert parser.feed(b"id: p1\r\nretry: 250\r\ndata: \r\n\r\n") == [SseEvent("", id="p1", retry=250)]
    assert parser.last_event_id == "p1"
    assert parser.reconnection_ms == 250


def test_id_without_data_still_sets_the_last_event_id_but_dispatches_nothing() -> None:
    parser = SseParser()
    assert parser.feed(b"id: 42\n\n") == []
    assert parser.last_event_id == "42"
    assert parser.feed(b"data: x\n\n") == [SseEvent("x", id="42")]


def test_id_with_nul_is_ignored_and_non_ascii_digits_are_no_retry() -> None:
    parser = SseParser()
    parser.feed(b"id: a\n\nid: b\0c\nretry: \xc2\xb2\ndata: x\n\n")
    assert parser.last_event_id == "a"
    assert parser.reconnection_ms is None


def test_bom_is_skipped_only_at_the_start_even_when_split() -> None:
    parser = SseParser()
    got = parser.feed(b"\xef") + parser.feed(b"\xbb") + parser.feed(b"\xbfdata: x\n\n")
    assert got == [SseEvent("x")]


def test_field_without_colon_and_unknown_fields_are_ignored() -> None:
    assert SseParser().feed(b"data\nfoo: bar\nnocolon\n\n") == [SseEvent("")]


def test_frame_round_trips() -> None:
    assert SseParser().feed(frame(b'{"a":1}', "9")) == [SseEvent('{"a":1}', id="9")]


# -- bounds: each test says what it tried ------------------------------------------------


def test_bound_event_bytes_across_many_data_lines() -> None:
    parser = SseParser(max_event_bytes=1000)
    with pytest.raises(ValueError, match="SSE event larger than 1000 bytes"):
        for _ in range(100):
            parser.feed(b"data: 0123456789\n")


def test_bound_flood_of_empty_data_lines() -> None:
    parser = SseParser(max_event_bytes=1000)
    with pytest.raises(ValueError, match="SSE event larger than 1000 bytes"):
        parser.feed(b"data:\n" * 1000)


def test_bound_flood_of_lines_with_no_field_or_comments() -> None:
    for line in (b"nocolon\n", b":\n", b":keepalive\r\n", b"unknown: v\r", b"x\n"):
        parser = SseParser(max_event_bytes=1000)
        with pytest.raises(ValueError, match="SSE event larger than 1000 bytes"):
            for _ in range(1000):
                parser.feed(line)


def test_blank_lines_reset_the_event_count_so_keepalives_are_fine() -> None:
    parser = SseParser(max_event_bytes=100)
    for _ in range(10_000):
        assert parser.feed(b": ping\r\n\r\n") == []
    assert parser.feed(b"data: ok\n\n") == [SseEvent("ok")]


def test_bound_line_length_complete_line_in_one_chunk() -> None:
    parser = SseParser(max_event_bytes=10_000, max_line_bytes=100)
    with pytest.raises(ValueError, match="SSE line longer than 100 bytes"):
        parser.feed(b"data: " + b"x" * 200 + b"\n")


def test_bound_line_length_line_that_never_ends() -> None:
    parser = SseParser(max_event_bytes=10_000, max_line_bytes=100)
    with pytest.raises(ValueError, match="SSE line longer than 100 bytes"):
        for _ in range(50):
            parser.feed(b"yyyyy")


def test_bound_partial_line_counts_towards_the_event() -> None:
    parser = SseParser(max_event_bytes=100, max_line_bytes=1000)
    parser.feed(b"data: " + b"a" * 50 + b"\n")
    with pytest.raises(ValueError, match="SSE event larger than 100 bytes"):
        parser.feed(b"data: " + b"b" * 60)


@pytest.mark.parametrize("field", [b"id", b"event", b"retry"])
def test_bound_huge_id_event_retry_field(field: bytes) -> None:
    parser = SseParser(max_field_bytes=64)
    value = b"1" * 65
    with pytest.raises(ValueError, match=f"SSE {field.decode()} field longer than 64 bytes"):
        parser.feed(field + b": " + value + b"\n")


def test_bound_huge_id_split_over_many_chunks_hits_the_line_bound() -> None:
    parser = SseParser(max_event_bytes=4096, max_line_bytes=1024)
    with pytest.raises(ValueError, match="SSE line longer than 1024 bytes"):
        parser.feed(b"id: ")
        for _ in range(2000):
            parser.feed(b"z")


def test_long_retry_digits_are_clamped_not_an_int_conversion_error() -> None:
    parser = SseParser()
    parser.feed(b"retry: " + b"9" * 5000 + b"\ndata: x\n\n")
    assert parser.reconnection_ms is not None and parser.reconnection_ms >= 10**15


def test_invalid_utf8_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not valid UTF-8"):
        SseParser().feed(b"data: \xff\xfe\n\n")


def test_multibyte_text_split_between_chunks() -> None:
    raw = "data: héllo ✓\n\n".encode()
    parser = SseParser()
    got = [e for i in range(len(raw)) for e in parser.feed(raw[i : i + 1])]
    assert got == [SseEvent("héllo ✓")]


# -- any line soup: the incremental parser agrees with a whole-input reference -----------

line = st.sampled_from([
    b"", b"data", b"data:", b"data: x", b"data:y", b"data:  two spaces", b"id: 1", b"id:", b"id: a\0b",
    b"event: ping", b"event:", b"retry: 30", b"retry: x", b":comment", b"nocolon", b"unknown: z", b"data: \xc3\xa9",
])


def reference(raw: bytes) -> tuple[list[SseEvent], str | None, int | None]:
    """The WHATWG algorithm over the whole input at once."""
    lines = re.split(rb"\r\n|\r|\n", raw.removeprefix(b"\xef\xbb\xbf"))[:-1]  # the tail has no line end
    data: list[str] = []
    event, last_id, retry, in_event_retry = "", None, None, None
    out = []
    for ln in (s.decode() for s in lines):
        if ln == "":
            if data:
                out.append(SseEvent("\n".join(data), event or "message", last_id, in_event_retry))
            data, event, in_event_retry = [], "", None
            continue
        if ln.startswith(":"):
            continue
        name, colon, value = ln.partition(":")
        value = value[1:] if colon and value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value or None
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = in_event_retry = int(value)
    return out, last_id, retry


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(line, st.sampled_from(EOLS)), max_size=40),
    st.booleans(),
    st.lists(st.integers(0, 10_000), max_size=20),
)
def test_line_soup_matches_the_reference(lines, bom, cuts) -> None:  # type: ignore[no-untyped-def]
    raw = (b"\xef\xbb\xbf" if bom else b"") + b"".join(ln + eol for ln, eol in lines)
    parser = SseParser()
    got = feed_in_pieces(raw, cuts, parser)
    events, last_id, retry = reference(raw)
    assert got == events
    assert (parser.last_event_id, parser.reconnection_ms) == (last_id, retry)
