"""The labelled corpus through explain's code path: the goals of docs/policy-accuracy.md."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from accuracy import Scores, load_corpus, run_explain, score


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

    Its first-sight figures (docs/policy-accuracy.md) are below the goals; this only guards against regressions.
    """
    rows = load_corpus(Path(__file__).resolve().parents[1] / "corpus" / "holdout")
    s = score(rows, run_explain(rows))
    assert s.total >= 240
    assert s.sensitive_blocked >= 104
    assert len(s.false_blocks) <= 5
