"""Does int8 keep retrieval quality? SciFact train nDCG@10 of the packaged all-MiniLM-L6-v2
on ONNX Runtime, float32 export against its int8 copy (``onnx_bert.ensure_quantized``).

Dense retrieval only, exact: every train claim with a relevant abstract (809 claims, 5,183
abstracts read as the loader reads a BEIR record: title, blank line, text) is ranked against
the whole corpus by cosine; nDCG@10 is the project's ``ndcg_at`` (linear gain). Three rows:
float32 corpus and queries, int8 corpus and queries, int8 corpus with float32 queries (the
queries of an index built in int8 embedded on the quick-start runtime). Int8 is acceptable
only within 0.005 of float32.

Run: .venv/bin/python bench/bench_embed_int8_quality.py
Writes bench/results/embed_int8_quality.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "bench" / "results" / "embed_int8_quality.json"
TOLERANCE = 0.005


def embed_sorted(model, texts: list[str], batch: int = 64) -> np.ndarray:
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors = np.zeros((len(texts), model.dim), dtype=np.float32)
    for start in range(0, len(order), batch):
        group = order[start:start + batch]
        vectors[group] = model.encode([texts[i] for i in group])
    return vectors


def ndcg10(corpus: np.ndarray, queries: np.ndarray, doc_ids: list[str], query_ids: list[str],
           qrels: dict[str, dict[str, int]]) -> float:
    from modrag_studio.evaluation.metrics import ndcg_at

    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    return float(np.mean([ndcg_at([doc_ids[j] for j in row], qrels[q], 10)
                          for q, row in zip(query_ids, top, strict=True)]))


def main() -> int:
    from modrag_nodes.embedding import models, onnx_bert
    from modrag_studio.evaluation.beir import load_beir

    dataset = load_beir(SCIFACT, "train")
    query_ids = dataset.evaluated_query_ids()
    doc_ids, texts = [], []
    with dataset.corpus_path.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            doc_ids.append(str(record["_id"]))
            texts.append(f"{record['title']}\n\n{record['text']}".strip())
    folder = models.resolve_sentence_transformer(models.DEFAULT_MODEL)[0]
    fp32 = onnx_bert.OnnxBert(folder)
    int8 = onnx_bert.OnnxBert(folder, onnx_bert.ensure_quantized(folder))
    questions = [dataset.queries[q] for q in query_ids]
    result: dict[str, object] = {"queries": len(query_ids), "docs": len(texts)}
    vectors = {}
    for name, model in (("fp32", fp32), ("int8", int8)):
        start = time.perf_counter()
        vectors[name] = (embed_sorted(model, texts), embed_sorted(model, questions))
        result[f"{name}_embed_s"] = round(time.perf_counter() - start, 1)
        print(name, result[f"{name}_embed_s"], "s", flush=True)
    rows = {
        "fp32 corpus, fp32 queries": ndcg10(vectors["fp32"][0], vectors["fp32"][1], doc_ids,
                                           query_ids, dataset.qrels),
        "int8 corpus, int8 queries": ndcg10(vectors["int8"][0], vectors["int8"][1], doc_ids,
                                           query_ids, dataset.qrels),
        "int8 corpus, fp32 queries": ndcg10(vectors["int8"][0], vectors["fp32"][1], doc_ids,
                                           query_ids, dataset.qrels),
    }
    base = rows["fp32 corpus, fp32 queries"]
    result["ndcg_at_10"] = {k: round(v, 4) for k, v in rows.items()}
    result["delta_vs_fp32"] = {k: round(v - base, 4) for k, v in rows.items()}
    result["within_tolerance"] = {k: abs(v - base) <= TOLERANCE for k, v in rows.items()}
    cos = (vectors["int8"][0] * vectors["fp32"][0]).sum(axis=1)
    result["int8_vs_fp32_cosine"] = {"min": round(float(cos.min()), 4),
                                     "mean": round(float(cos.mean()), 4)}
    print(json.dumps(result, indent=2))
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
