"""A smaller SciFact for grids on two cores: the documents relevant to the first N evaluated
queries of a split plus the first distractors, up to --docs documents in all.

Run: .venv/bin/python bench/make_scifact_subset.py OUT_DIR [--queries 150] [--docs 1000]
Evaluate it with ``--limit N`` so only queries whose relevant documents are present count.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "data" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--split", default="train")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--docs", type=int, default=1000)
    args = parser.parse_args()
    from modrag_studio.evaluation import load_beir

    source = load_beir(args.dataset, args.split)
    wanted: set[str] = set()
    for query_id in source.evaluated_query_ids()[: args.queries]:
        wanted |= {d for d, s in source.qrels[query_id].items() if s > 0}
    out = Path(args.out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    kept = []
    with source.corpus_path.open(encoding="utf-8") as fh:
        lines = fh.readlines()
    for line in lines:
        if json.loads(line)["_id"] in wanted:
            kept.append(line)
    for line in lines:
        if len(kept) >= args.docs:
            break
        if json.loads(line)["_id"] not in wanted:
            kept.append(line)
    (out / "corpus.jsonl").write_text("".join(kept), encoding="utf-8")
    (out / "queries.jsonl").write_bytes((Path(args.dataset) / "queries.jsonl").read_bytes())
    qrels = Path(args.dataset) / "qrels" / f"{args.split}.tsv"
    (out / "qrels" / qrels.name).write_bytes(qrels.read_bytes())
    print(f"{out}: {len(kept)} documents ({len(wanted)} relevant to the first {args.queries} "
          f"evaluated {args.split} queries)")


if __name__ == "__main__":
    main()
