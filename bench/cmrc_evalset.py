"""An answer evaluation set of CMRC 2018 trial questions (gold spans as facts).

    .venv/bin/python bench/cmrc_evalset.py [--data ../shared/data/cmrc2018-trial] [-n 20]
        [--seed 2018] [--out bench/results/cmrc_evalset.jsonl]

Picks ``n`` questions at random (fixed seed) from ``queries.jsonl``; each gets its gold
answers as alternative facts and its paragraph (``qrels``) as expected evidence. Run the
graphs of ``bench/graphs/`` on it with ``bench_answer_metrics.py --graph-dir bench/graphs``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(data: Path, n: int, seed: int) -> list[dict]:
    qrels: dict[str, str] = {}
    for line in (data / "qrels" / "trial.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, doc, *_ = line.split("\t")
        qrels[query] = doc
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    picked = random.Random(seed).sample(queries, n)
    return [{"id": q["_id"], "question": q["text"],
             "expected_evidence": {"doc_ids": [qrels[q["_id"]]]},
             "expected_facts": [list(dict.fromkeys(q["metadata"]["answers"]))],
             "answerable": True, "language": "zh", "tags": ["1-hop", "cmrc2018"]}
            for q in picked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data/cmrc2018-trial"))
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--out", default=str(ROOT / "bench/results/cmrc_evalset.jsonl"))
    args = parser.parse_args()
    rows = build(Path(args.data), args.n, args.seed)
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                              encoding="utf-8")
    print(f"{len(rows)} questions -> {args.out}")


if __name__ == "__main__":
    main()
