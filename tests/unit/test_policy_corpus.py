"""The labelled corpus through explain's code path: the goals of docs/policy-accuracy.md."""

from __future__ import annotations

import copy
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import coverage
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from accuracy import Scores, load_corpus, run_explain, score

from gateway.policy.sensitive_fields import SensitiveFieldDetector


@pytest.fixture
def untraced() -> Iterator[None]:
    """The blind sets' floors decide about 25,000 forms: under `coverage run` (make test) line tracing makes
    them three times slower, the longest file of the suite, while the corpus and class tests measure the same
    code. Tracing pauses for them and resumes after."""
    current = coverage.Coverage.current()
    if current is None:
        yield
        return
    current.stop()
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("already imported": the modules it measured before the pause)
            current.start()


@pytest.fixture(scope="module")
def scores() -> Scores:
    rows = load_corpus()
    return score(rows, run_explain(rows))


def test_corpus_is_large_and_varied(scores: Scores) -> None:
    assert scores.total >= 600
    assert {"clean", "hard_negative", "sensitive", "evasion", "link", "invalid_schema"} <= set(scores.by_category)
    assert len(scores.languages) >= 16


def test_recall_on_sensitive_asks(scores: Scores) -> None:
    assert scores.sensitive_blocked / scores.sensitive_total >= 0.99


def test_no_false_blocks(scores: Scores) -> None:
    assert scores.false_blocks == []


def test_no_link_survives(scores: Scores) -> None:
    assert scores.links_total >= 150
    assert scores.links_surviving == []


def test_every_request_decided_as_labelled(scores: Scores) -> None:
    assert scores.mismatches == []


def test_blind_holdout_does_not_regress() -> None:
    """tests/corpus/holdout/ was written blind (its author never saw the detector or the corpus).

    First sight: 104/110 blocked, 5 false blocks (docs/policy-accuracy.md). These floors keep the
    figures reached since then; they only move up.
    """
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / "holdout")
    s = score(rows, run_explain(rows))
    assert s.total >= 240
    assert s.sensitive_blocked >= 109
    assert s.false_blocks == []
    assert s.harmless_altered == []


def test_blind_set_1_does_not_regress() -> None:
    """tests/corpus/blind1/ (issue 11) was written blind, before the detector was changed.

    First sight (detector as of aaff5f0): 338/717 blocked, 60 false blocks, 58 harmless forms altered.
    The floors below are the figures after the issue-11 detector; they only move up.
    """
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / "blind1")
    s = score(rows, run_explain(rows))
    assert s.total >= 1510
    assert len(s.languages) >= 56
    assert s.sensitive_blocked >= 713
    assert s.sensitive_blocked / s.sensitive_total >= 0.99
    assert s.false_blocks == []
    assert s.harmless_altered == []
    assert s.links_surviving == []


def test_blind_set_2_does_not_regress() -> None:
    """tests/corpus/blind2/ (issue 11) was written blind after the detector was built, by an author who
    saw neither the detector, its lexicon nor any other test set. It is the generalization figure.

    First sight (detector as of 53c30fe): 692/773 blocked (89.5%), 24/821 false blocks, 0 harmless forms
    altered, 0/48 links surviving. Its misses and false blocks were then read and the detector tuned on
    them class by class, so the floors below are "after tuning on this set", not a generalization figure.
    They only move up.
    """
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / "blind2")
    s = score(rows, run_explain(rows))
    assert s.total >= 1642
    assert len(s.languages) >= 52
    assert s.sensitive_blocked >= 752
    assert s.false_blocks == []
    # b2-336 names its service by a bare domain ("Számlázz.hu"), which the link policy strips
    # (docs/link-stripping.md); at first sight a false block hid that.
    assert set(s.harmless_altered) <= {"b2-336"}
    assert s.links_surviving == []


# Blind sets 3 and on (issue 11), each written by helpers who saw no code, lexicon or earlier set, and
# scored once at first sight before anyone read a row (docs/policy-accuracy.md has every figure). The
# floors are the figures after tuning on the set and those after it: they show where the work went, not
# how the detector generalizes, and they only move up. Per set: forms, asks blocked at least, false
# blocks at most, harmless forms altered at most.
#
# - blind3: first sight 894/969 (92.3%), 10/710 false blocks, 0 altered. The 2 false blocks left are
#   `schema.invalid` (an integer field with an `enum`, which MCP's elicitation schema does not allow).
# - blind4: first sight 650/665 (97.7%), 19/497, 1 altered (main after the blind-3 tuning, e15ddb0).
# - blind5: first sight 1110/1186 (93.6%), 56/658, 0 altered (main after the blind-4 tuning, 53276e7).
# - blind6: first sight 784/804 (97.5%), 33/695, 0 altered (main after the blind-5 tuning, 82ae959).
# - blind7: first sight 823/847 (97.2%), 22/628, 0 altered (main after the blind-6 tuning, 85ae64d).
# - blind8: first sight 520/572 (90.9%), 19/425, 8 altered (main after the blind-7 tuning, d5a5871). The
#   altered forms are brand prefixes that are bare domains ("Suomi.fi:"), removed by design.
# - blind9: first sight 531/552 (96.2%), 13/399, 0 altered (main after the blind-8 tuning); the same with
#   the detector of the round's start (754e0a6); 533/552 after tuning on it.
# - blind10: first sight 520/552 (94.2%), 33/361, 0 altered (main after the blind-9 tuning); 519, 33, 0 with
#   the detector of the round's start (754e0a6); 540, 6, 0 after tuning on it.
# - blind11: first sight 618/645 (95.8%), 20/395, 1 altered (main after the blind-10 tuning, e7889bd); 599,
#   21, 1 with the detector of the round's start (db94d20); 634, 14, 1 after tuning on it.
# - blind12: first sight 574/630 (91.1%), 24/396, 0 altered (main after the blind-11 tuning, c392ee9); 554,
#   23, 0 with the detector of the session's start (db94d20); 585, 19, 0 after tuning on it.
# - blind13: first sight 505/533 (94.7%), 12/353, 0 altered (main after the blind-12 tuning, 913d1ea); 487,
#   19, 0 with the detector of the session's start (db94d20). Unread: its floors are first-sight figures.
BLIND_FLOORS = [
    ("blind3", 1780, 964, 2, 0),
    ("blind4", 1242, 665, 5, 1),
    ("blind5", 1939, 1172, 3, 0),
    ("blind6", 1589, 798, 5, 0),
    ("blind7", 1548, 839, 3, 0),
    ("blind8", 1047, 544, 2, 9),
    ("blind9", 1000, 544, 3, 0),
    ("blind10", 954, 545, 5, 0),
    # 10 of the 14 false blocks are harmless forms with `examples`, refused as schema.invalid by design.
    ("blind11", 1081, 639, 14, 1),
    ("blind12", 1070, 606, 17, 0),
    ("blind13", 925, 526, 1, 0),
    ("blind14", 923, 528, 1, 0),
    ("blind15", 932, 538, 0, 0),
    ("blind16", 929, 543, 1, 0),
    ("blind17", 914, 527, 3, 0),
    ("blind18", 913, 525, 0, 1),
    ("blind19", 914, 529, 0, 0),
    ("blind20", 917, 541, 0, 0),
    ("blind21", 910, 529, 0, 0),
    ("blind22", 922, 539, 5, 0),
    ("blind23", 935, 549, 1, 0),
    ("blind24", 933, 544, 2, 0),
    ("blind25", 940, 553, 1, 0),
    ("blind26", 940, 554, 3, 0),
    ("blind27", 940, 552, 0, 1),
    ("blind28", 940, 554, 8, 0),
    ("blind29", 940, 558, 3, 0),
    # 9 of the false blocks are harmless multi-selects whose `items` lack `type: "string"`, refused as
    # schema.invalid by design (the brief for this set had not said it); 1 altered: "Reg.nr." read as a domain.
    ("blind30", 940, 556, 10, 1),
    # The 3 false blocks are harmless multi-selects whose `items` lack `type: "string"` (schema.invalid, as above).
    ("blind31", 940, 556, 3, 0),
    ("blind32", 940, 552, 3, 0),
    ("blind33", 940, 542, 8, 0),
    ("blind34", 940, 554, 5, 0),
    # Unread; first sight 556/560, 0/340, 0 (80% of its forms have one field: an easier set,
    # docs/policy-accuracy.md); one more ask blocked since by a lexicon merge scored on every set.
    ("blind35", 940, 557, 0, 0),
    # First sight 540/560, 7/340, 0 (forms of 2-5 fields); these after the blind-36 round.
    ("blind36", 940, 546, 2, 0),
    # First sight 533/560, 11/340, 0 (forms of 2-5 fields); these after the blind-37 round.
    ("blind37", 940, 538, 4, 0),
    # First sight 528/560, 3/340, 0 (forms of 2-5 fields); these after the blind-38 round.
    ("blind38", 940, 552, 0, 0),
    # First sight 540/560, 6/340, 0 (forms of 2-5 fields); these after the blind-39 round.
    ("blind39", 940, 555, 1, 0),
    # First sight 546/560, 13/340, 0 (forms of 2-5 fields); these after the blind-40 round.
    ("blind40", 940, 554, 2, 0),
    # First sight 543/560, 8/340, 1 (forms of 2-5 fields); these after the twelfth session's round on sets 41 and 42.
    ("blind41", 940, 549, 7, 1),
    # First sight 540/560, 7/340, 0 (forms of 2-5 fields); these after the round on sets 41 and 42.
    ("blind42", 940, 554, 6, 0),
    # First sight 542/560, 4/340, 0 (97% of forms with 2-5 fields); these after the round on it.
    ("blind43", 940, 550, 2, 0),
    # First sight 544/560, 7/340, 0 (91% of forms with 2-5 fields); these after the thirteenth session's round on it.
    ("blind44", 940, 557, 0, 0),
    # First sight 546/560, 11/340, 0 (95% of forms with 2-5 fields; the same with the detector of the session's
    # start, fa94d13); these after the round on it.
    ("blind45", 940, 558, 2, 0),
    # First sight 555/560, 11/340, 0 (81% of forms with 2-5 fields; written after the round on sets 44 and 45);
    # these after the round on it.
    ("blind46", 940, 559, 2, 0),
    # First sight 555/560, 12/340, 0 (98% of forms with 2-5 fields; written after the round on set 46); these
    # after the round on it.
    ("blind47", 940, 559, 5, 0),
    # Unread: first-sight figures (939 of 940 forms with 2-5 fields; written after the round on set 47).
    ("blind48", 940, 552, 13, 1),
]


@pytest.mark.parametrize(("folder", "forms", "blocked", "false_blocks", "altered"), BLIND_FLOORS,
                         ids=[f[0] for f in BLIND_FLOORS])
def test_blind_set_does_not_regress(folder: str, forms: int, blocked: int, false_blocks: int, altered: int,
                                    untraced: None) -> None:
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / folder)
    s = score(rows, run_explain(rows))
    assert s.total >= forms
    assert s.sensitive_blocked >= blocked
    assert len(s.false_blocks) <= false_blocks, s.false_blocks
    assert len(s.harmless_altered) <= altered, s.harmless_altered
    assert s.links_surviving == []


_LOOK_ALIKES = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і"})


@pytest.mark.parametrize("evasion", [
    lambda t: "\u200b".join(t),  # zero-width space between every letter
    lambda t: t.translate(_LOOK_ALIKES),  # Cyrillic look-alikes
    lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),  # fullwidth
    lambda t: "\u202e" + t[::-1] + "\u202c",  # right-to-left override
], ids=["zero-width", "look-alikes", "fullwidth", "rlo"])
def test_blind_set_1_holds_under_evasion_classes(evasion: Any, untraced: None) -> None:
    """Every field title of blind set 1 rewritten with one evasion class: asks stay blocked, harmless forms pass."""
    detector = SensitiveFieldDetector()
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / "blind1")
    misses = false_blocks = 0
    for row in rows:
        if row["category"] == "link" or row.get("evasion") or row["expect"] not in ("block", "allow"):
            continue
        params = copy.deepcopy(row["params"])
        for prop in params.get("requestedSchema", {}).get("properties", {}).values():
            if isinstance(prop, dict) and isinstance(prop.get("title"), str):
                prop["title"] = evasion(prop["title"])
        found = detector.find(params)
        if row["expect"] == "block" and row.get("expect_rule") == "sensitive_fields":
            misses += not found
        elif row["expect"] == "allow":
            false_blocks += bool(found)
    assert misses <= 3
    assert false_blocks == 0


@pytest.mark.parametrize("evasion", ["dots", "spaced", "hyphen", "markdown", "middle-dot"])
def test_blind_sets_hold_under_separators(evasion: str, untraced: None) -> None:
    """The longest word of every title of blind sets 1 and 2 cut by separators (tests/corpus/evasion_stress.py):
    asks stay blocked and harmless forms pass, within the figures of docs/policy-accuracy.md."""
    from evasion_stress import CLASSES, blind_rows, stress

    misses, asks, false_blocks, harmless = stress(CLASSES[evasion], blind_rows(), SensitiveFieldDetector(), seeds=1)
    assert asks >= 900 and harmless >= 1500
    assert misses <= asks // 100
    assert false_blocks <= 2
