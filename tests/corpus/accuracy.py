"""Runs the labelled corpus through `elicitation-gateway explain`'s code path and scores it.

`python tests/corpus/accuracy.py` prints the markdown report kept in docs/policy-accuracy.md;
tests/unit/test_policy_corpus.py asserts the goals on the same figures.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.cli import explain
from gateway.config import load_config
from gateway.policy.link_stripping import contains_link, shows_explicit_link

CORPUS = Path(__file__).parent
POLICY = """
elicitation:
  modes: [form, url]
  sensitive_fields: block
  form_urls: strip
  tag_origin: true
  url_mode: {allowed_hosts: []}
"""


@dataclass
class Scores:
    total: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    correct_by_category: Counter[str] = field(default_factory=Counter)
    sensitive_total: int = 0
    sensitive_blocked: int = 0
    false_blocks: list[str] = field(default_factory=list)
    clean_total: int = 0
    links_total: int = 0
    links_surviving: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    languages: set[str] = field(default_factory=set)
    sensitive_by_lang: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    harmless_altered: list[str] = field(default_factory=list)
    """Rows labelled allow that reached the host changed (decision modify)."""
    harmless_by_lang: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    """Per language: [harmless rows decided allow, harmless rows]."""
    by_family: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    """Per secret family (rows that carry one): [decided as labelled, rows]."""
    by_evasion: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    """Per evasion class (rows that carry one): [decided as labelled, rows]."""


def load_corpus(folder: Path = CORPUS) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def shown_links(node: Any) -> Iterator[str]:
    """The strings of `node` that would show a link to the user: every text, and of an untitled choice's values
    only those with an explicit link (a bare domain as an option names the choice and is left as it is by
    design: docs/link-stripping.md, "Known limits")."""
    if isinstance(node, dict):
        untitled = "enum" in node and not any(k in node for k in ("enumNames", "oneOf", "anyOf"))
        for key, value in node.items():
            if key in ("url", "elicitationId", "_meta", "pattern", "format", "type"):
                continue
            if (key == "enum" and "enumNames" in node) or (key == "const" and "title" in node):
                continue
            if key == "enum" and untitled and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str) and shows_explicit_link(v))
                continue
            yield from shown_links(value)
    elif isinstance(node, list):
        for value in node:
            yield from shown_links(value)
    elif isinstance(node, str):
        yield node


def run_explain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "policy.yaml").write_text(POLICY)
        (Path(tmp) / "gateway.yaml").write_text("servers: {corpus: {url: 'http://127.0.0.1:1/mcp', policy: policy.yaml}}")
        cfg = load_config(Path(tmp) / "gateway.yaml")
    stream = io.StringIO("\n".join(json.dumps(r["params"], ensure_ascii=False) for r in rows) + "\n")
    out = io.StringIO()
    explain(cfg, "corpus", stream, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def score(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> Scores:
    s = Scores()
    for row, result in zip(rows, results, strict=True):
        cat = row["category"]
        s.total += 1
        s.by_category[cat] += 1
        s.languages.add(row.get("lang", "?"))
        ok = result["decision"] == row["expect"] and (
            row.get("expect_rule") is None or row["expect_rule"] in result["rules"]
        )
        if ok:
            s.correct_by_category[cat] += 1
        else:
            s.mismatches.append(f"{row['id']}: expected {row['expect']}/{row.get('expect_rule')}, got "
                                f"{result['decision']}/{result['rules']}")
        if row["expect"] == "block" and row.get("expect_rule") == "sensitive_fields":
            s.sensitive_total += 1
            blocked = result["decision"] == "block"
            s.sensitive_blocked += blocked
            per_lang = s.sensitive_by_lang[row.get("lang", "?")]
            per_lang[0] += blocked
            per_lang[1] += 1
        if row["expect"] == "allow":
            s.clean_total += 1
            if result["decision"] == "block":
                s.false_blocks.append(row["id"])
            elif result["decision"] == "modify":
                s.harmless_altered.append(row["id"])
            per_lang = s.harmless_by_lang[row.get("lang", "?")]
            per_lang[0] += result["decision"] == "allow"
            per_lang[1] += 1
        for key, table in (("family", s.by_family), ("evasion", s.by_evasion)):
            value = row.get(key)
            if isinstance(value, str) and value:
                table[value][0] += ok
                table[value][1] += 1
        if cat == "link":
            s.links_total += 1
            params = result.get("params")
            if params is not None and any(contains_link(text) for text in shown_links(params)):
                s.links_surviving.append(row["id"])
    return s


def report(s: Scores, show_mismatches: bool = True) -> str:
    recall = s.sensitive_blocked / s.sensitive_total if s.sensitive_total else 0.0
    lines = [
        "# Policy accuracy on the labelled corpus",
        "",
        "Generated by `python tests/corpus/accuracy.py` (the same figures are asserted by",
        "`tests/unit/test_policy_corpus.py`). Every request goes through the code path of",
        "`elicitation-gateway explain` with the policy: modes [form, url], sensitive_fields: block,",
        "form_urls: strip, any https host.",
        "",
        f"- requests: **{s.total}** in {len(s.by_category)} categories, {len(s.languages)} languages",
        f"- recall on sensitive asks: **{s.sensitive_blocked}/{s.sensitive_total} = {recall:.2%}** (goal >= 99%)",
        f"- false blocks on clean and hard-negative requests: **{len(s.false_blocks)}/{s.clean_total}** (goal 0)",
        f"- links surviving in link requests: **{len(s.links_surviving)}/{s.links_total}** (goal 0)",
        f"- requests whose decision and rule match the label exactly: "
        f"**{sum(s.correct_by_category.values())}/{s.total}**",
        "",
        "| category | requests | decided as labelled |",
        "|---|---|---|",
    ]
    for cat in sorted(s.by_category):
        lines.append(f"| {cat} | {s.by_category[cat]} | {s.correct_by_category[cat]} |")
    lines += ["", "Sensitive asks blocked, per language:", "", "| lang | blocked |", "|---|---|"]
    for lang in sorted(s.sensitive_by_lang):
        blocked, total = s.sensitive_by_lang[lang]
        lines.append(f"| {lang} | {blocked}/{total} |")
    if s.mismatches and show_mismatches:
        lines += ["", "Requests not decided as labelled:", ""] + [f"- {m}" for m in s.mismatches]
    return "\n".join(lines) + "\n"


def blind_report(s: Scores, title: str) -> str:
    """The figures kept for a blind set: recall, false blocks, harmless forms altered, per language/family/evasion."""
    recall = s.sensitive_blocked / s.sensitive_total if s.sensitive_total else 0.0
    lines = [
        f"### {title}",
        "",
        f"- forms: **{s.total}**, {len(s.languages)} languages",
        f"- recall on sensitive asks: **{s.sensitive_blocked}/{s.sensitive_total} = {recall:.2%}** (goal >= 99%)",
        f"- false blocks: **{len(s.false_blocks)}/{s.clean_total}** harmless forms (goal 0)",
        f"- harmless forms altered (decision modify on a form labelled allow): **{len(s.harmless_altered)}** (goal 0)",
        f"- links surviving in link forms: **{len(s.links_surviving)}/{s.links_total}**",
        f"- decided exactly as labelled: **{sum(s.correct_by_category.values())}/{s.total}**",
        "",
        "| lang | asks blocked | harmless allowed |",
        "|---|---|---|",
    ]
    for lang in sorted(set(s.sensitive_by_lang) | set(s.harmless_by_lang)):
        b, t = s.sensitive_by_lang.get(lang, [0, 0])
        a, h = s.harmless_by_lang.get(lang, [0, 0])
        lines.append(f"| {lang} | {b}/{t} | {a}/{h} |")
    for key, table in (("family", s.by_family), ("evasion class", s.by_evasion)):
        if table:
            lines += ["", f"| {key} | decided as labelled |", "|---|---|"]
            lines += [f"| {name} | {ok}/{n} |" for name, (ok, n) in sorted(table.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1:  # accuracy.py FOLDER [TITLE]: the blind-set report of one folder
        rows = load_corpus(Path(sys.argv[1]))
        s = score(rows, run_explain(rows))
        sys.stdout.write(blind_report(s, sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]))
        if "--misses" in sys.argv:
            sys.stdout.write("\n".join(s.mismatches) + "\n")
        return
    rows = load_corpus()
    sys.stdout.write(report(score(rows, run_explain(rows))))


if __name__ == "__main__":
    main()
