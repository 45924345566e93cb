"""BM25 query latency on SciFact: rank-bm25 run directly vs the ``fast`` (and ``bm25s``)
engines of the BM25 node, on the same tokens, side by side in one run.

    .venv/bin/python bench/bench_bm25.py [--data ../shared/data/scifact] [--queries 200]
        [--tokenizer plain|stem] [--fields text|title+text]

Prints the median and mean latency of each engine, the speed-up of the fast path over
rank-bm25 (target: at least 10x), how many top-10 lists are identical (target: all), and
nDCG@10 / Recall@100 on the train qrels for the record.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

from modrag_nodes.retrieval.bm25 import BM25Index, chunk_text
from modrag_nodes.retrieval.ranking import top_indices
from modrag_nodes.retrieval.tokenizers import Tokenizer
from modrag_studio.engine.core.datatypes import Chunk

ROOT = Path(__file__).resolve().parent.parent

TOKENIZERS = {"plain": Tokenizer(), "stem": Tokenizer(stopwords="english", stemmer="english")}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def read_qrels(path: Path) -> dict[str, set[str]]:
    qrels: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    return qrels


def timed(fn, queries: list) -> tuple[list[float], list]:
    latencies, outputs = [], []
    for query in queries:
        start = time.perf_counter()
        outputs.append(fn(query))
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies, outputs


def ndcg_recall(ranked: list[list[str]], relevant: list[set[str]]) -> tuple[float, float]:
    ndcgs, recalls = [], []
    for docs, rel in zip(ranked, relevant, strict=True):
        dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(docs[:10]) if d in rel)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
        ndcgs.append(dcg / ideal if ideal else 0.0)
        recalls.append(len(set(docs[:100]) & rel) / len(rel) if rel else 0.0)
    return statistics.mean(ndcgs), statistics.mean(recalls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="stem")
    parser.add_argument("--fields", choices=["text", "title+text"], default="title+text")
    args = parser.parse_args()
    data = Path(args.data)
    docs = read_jsonl(data / "corpus.jsonl")
    chunks = [Chunk(chunk_id=d["_id"], doc_id=d["_id"], text=d["text"],
                    metadata={"title": d.get("title", "")}) for d in docs]
    queries = read_jsonl(data / "queries.jsonl")[: args.queries]
    tokenizer = TOKENIZERS[args.tokenizer]
    print(f"SciFact: {len(chunks)} abstracts, {len(queries)} queries, tokenizer "
          f"{tokenizer.preview()}, fields {args.fields}")

    from rank_bm25 import BM25Okapi

    start = time.perf_counter()
    corpus_tokens = tokenizer.tokenize_many([chunk_text(c, args.fields) for c in chunks])
    reference = BM25Okapi(corpus_tokens, k1=1.5, b=0.75, epsilon=0.25)
    print(f"build rank-bm25 (direct, incl. tokenizing): {time.perf_counter() - start:.1f} s")
    indexes = {}
    for engine in ("fast", "bm25s"):
        start = time.perf_counter()
        indexes[engine] = BM25Index.build(chunks, tokenizer=tokenizer, engine=engine,
                                          fields=args.fields)
        print(f"build {engine} (node index, incl. tokenizing): "
              f"{time.perf_counter() - start:.1f} s")

    query_tokens = [tokenizer.tokenize(q["text"]) for q in queries]
    runs = {"rank-bm25": timed(lambda t: list(top_indices(
        np.asarray(reference.get_scores(t)), 10)), query_tokens)}
    for engine, index in indexes.items():
        runs[engine] = timed(lambda t, ix=index: list(top_indices(ix.scores_for_tokens(t), 10)),
                             query_tokens)
    base_median = statistics.median(runs["rank-bm25"][0])
    base_mean = statistics.mean(runs["rank-bm25"][0])
    print("latency per query (scoring + top 10, same tokens; tokenizing excluded):")
    for engine, (latencies, tops) in runs.items():
        same = sum(a == b for a, b in zip(tops, runs["rank-bm25"][1], strict=True))
        median, mean = statistics.median(latencies), statistics.mean(latencies)
        print(f"{engine:>9}: median {median:8.3f} ms, mean {mean:8.3f} ms, speed-up "
              f"x{base_median / median:.0f} (median) x{base_mean / mean:.0f} (mean), "
              f"identical top-10 {same}/{len(tops)}")

    qrels = read_qrels(data / "qrels" / "train.tsv")
    judged = [q for q in queries if q["_id"] in qrels]
    ranked = [[chunks[i].doc_id for i, _ in indexes["fast"].search(q["text"], 100)]
              for q in judged]
    ndcg, recall = ndcg_recall(ranked, [qrels[q["_id"]] for q in judged])
    print(f"fast path quality on {len(judged)} judged train queries: nDCG@10 {ndcg:.4f}, "
          f"Recall@100 {recall:.4f}")


if __name__ == "__main__":
    main()
