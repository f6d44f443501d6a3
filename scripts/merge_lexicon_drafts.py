"""Merges drafted lexicon files into gateway/policy/data/lexicon/<lang>.json (a union of their lists).

`python scripts/merge_lexicon_drafts.py FOLDER` (then `make lexicon-real-words`). The drafts in
scripts/lexicon_drafts/ were written blind (no test set, detector or lexicon seen); merged whole they cost more
false blocks on the corpus than they gain, and only 12 languages' drafts are merged (docs/policy-accuracy.md,
"A drafted lexicon"). Score before and after with tests/corpus/accuracy.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LEXICON = Path(__file__).resolve().parents[1] / "gateway" / "policy" / "data" / "lexicon"
ALIASES = {"ckb": "ku", "fil": "tl"}  # Sorani goes with Kurdish, Filipino with Tagalog
LISTS = ("ask_by_description", "benign_senses", "negation", "negation_after")


def _union(into: list[str], words: object) -> int:
    fresh = [w for w in words if isinstance(w, str) and w.strip() and w not in into] if isinstance(words, list) else []
    into.extend(dict.fromkeys(fresh))
    return len(dict.fromkeys(fresh))


def merge(draft: dict[str, Any], target: Path) -> int:
    raw = target.read_text(encoding="utf-8")
    lexicon = json.loads(raw)
    added = 0
    for family, words in (draft.get("families") or {}).items():
        added += _union(lexicon["families"].setdefault(family, []), words)
    for key in LISTS:
        added += _union(lexicon.setdefault(key, []), draft.get(key))
    for kind, words in (draft.get("benign_ask") or {}).items():
        added += _union(lexicon.setdefault("benign_ask", {}).setdefault(kind, []), words)
    indent = 1 if raw.startswith('{\n "') else 2  # each file keeps its layout
    target.write_text(json.dumps(lexicon, ensure_ascii=False, indent=indent) + "\n", encoding="utf-8")
    return added


def main(folders: list[str]) -> int:
    total = 0
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json")):
            target = LEXICON / f"{ALIASES.get(path.stem, path.stem)}.json"
            if not target.exists():
                print(f"{path.name}: no lexicon file {target.name}", file=sys.stderr)
                continue
            added = merge(json.loads(path.read_text(encoding="utf-8")), target)
            print(f"{path.name} -> {target.name}: +{added}")
            total += added
    print(f"{total} entries added")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or [str(Path(__file__).parent / "lexicon_drafts")]))
