"""Every value fact generation would draft questions from, on the development suite's three
corpora (``basic_rag``'s loader and splitter), written as JSON; ``--compare`` prints what two
such files differ in (a model-free check that a change to value extraction touches only
what it means to).

    .venv/bin/python bench/evalset_value_facts.py --out before.json   # on the old tree
    .venv/bin/python bench/evalset_value_facts.py --out after.json
    .venv/bin/python bench/evalset_value_facts.py --compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from modrag_studio.commands.common import apply_overrides  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.cache.node_cache import NodeCache  # noqa: E402
from modrag_studio.engine.core.document import load  # noqa: E402
from modrag_studio.engine.run.executor import Executor  # noqa: E402
from modrag_studio.evaluation.generation.facts import value_facts  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
CORPORA = {
    "demo": {},
    "pkgdocs": {"corpus.default": str(SHARED / "corpora" / "pkgdocs-dev" / "docs"),
                "load.glob": "*.md"},
    "cmrc": {"corpus.default": str(SHARED / "cmrc2018-trial" / "corpus.jsonl")},
}


def facts_of(overrides: dict[str, str]) -> list[list[str]]:
    doc = apply_overrides(load(ROOT / "sample_graphs" / "basic_rag.json"), overrides)
    result = Executor(default_registry(), cache=NodeCache()).run(doc, {}, target="split")
    chunks = [c for (node, _), out in result.node_outputs.items() if node == "split"
              for c in out["chunks"]]
    return [[c.chunk_id, f.value, f.kind] for c in chunks for f in value_facts(c)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        for name in before:
            old, new = ({tuple(r) for r in side[name]} for side in (before, after))
            print(f"{name}: {len(old)} -> {len(new)} value facts; only before: "
                  f"{sorted(old - new)}; only after: {sorted(new - old)}")
        return
    found = {name: facts_of(overrides) for name, overrides in CORPORA.items()}
    if args.out:
        args.out.write_text(json.dumps(found, ensure_ascii=False), encoding="utf-8")
    print({name: len(rows) for name, rows in found.items()})


if __name__ == "__main__":
    main()
