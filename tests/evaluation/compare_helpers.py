"""A tiny BEIR dataset and a two-retriever BM25 graph for comparison tests (no models)."""

from __future__ import annotations

import json
from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument, from_json_dict

DOCS = {
    "d1": "Aspirin lowers the risk of heart attack in adults.",
    "d2": "Vitamin D deficiency is common in northern countries during winter.",
    "d3": "Oxygen therapy helps patients with chronic lung disease breathe.",
    "d4": "Heart disease risk rises with smoking and high blood pressure.",
    "d5": "Winter sunlight is too weak to make enough vitamin D in the skin.",
    "d6": "Lung cancer screening finds tumours early in smokers.",
}
QUERIES = {"1": "aspirin heart attack", "2": "vitamin D deficiency winter",
           "3": "lung disease oxygen", "4": "smoking heart risk", "5": "lung tumours smokers"}
QRELS = {"1": {"d1": 1}, "2": {"d2": 1, "d5": 1}, "3": {"d3": 1}, "4": {"d4": 1},
         "5": {"d6": 1}}


def write_dataset(folder: Path, split: str = "test") -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    rows = [f"{q}\t{d}\t{s}" for q, docs in QRELS.items() for d, s in docs.items()]
    (folder / "qrels" / f"{split}.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return folder


def two_bm25_graph(name: str = "two_bm25", fusion: str = "fuse.rrf") -> GraphDocument:
    """corpus -> load -> split -> (stemmed BM25, plain BM25) -> fusion -> out."""
    nodes = [
        ("corpus", "graph.input", {"name": "corpus"}),
        ("query", "graph.input", {"name": "query"}),
        ("load", "load.files", {}),
        ("split", "split.recursive", {"chunk_size": 200, "overlap": 0}),
        ("stem_index", "bm25.index", {"stemmer": "english", "stopwords": "english"}),
        ("plain_index", "bm25.index", {}),
        ("stemmed", "retrieve.bm25", {"top_k": 5}),
        ("plain", "retrieve.bm25", {"top_k": 5}),
        ("fusion", fusion, {}),
        ("out", "graph.output", {"name": "results"}),
    ]
    edges = [("corpus.value", "load.path"), ("load.documents", "split.documents"),
             ("split.chunks", "stem_index.chunks"), ("split.chunks", "plain_index.chunks"),
             ("stem_index.index", "stemmed.index"), ("plain_index.index", "plain.index"),
             ("query.value", "stemmed.query"), ("query.value", "plain.query"),
             ("stemmed.results", "fusion.rankings"), ("plain.results", "fusion.rankings"),
             ("fusion.results", "out.value")]
    return from_json_dict({
        "schema_version": 1, "metadata": {"name": name},
        "nodes": [{"id": i, "type": t, "params": p} for i, t, p in nodes],
        "edges": [{"from": a, "to": b} for a, b in edges],
    })
