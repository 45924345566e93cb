"""Query embeddings batched up front: same vectors and scores, one encode call for all."""

from __future__ import annotations

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection

from modrag_nodes.embedding import models
from modrag_nodes.embedding.memo import query_vector_memo, remember, remembered
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import exact_search
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import evaluate_graph, load_beir
from tests.evaluation.compare_helpers import QUERIES, write_dataset


@pytest.mark.slow  # loads the MiniLM model and builds a Chroma index
def test_batched_queries_score_like_one_at_a_time(tmp_path, monkeypatch, root):
    dataset = load_beir(write_dataset(tmp_path / "data"), "test")
    doc = load(root / "sample_graphs" / "scifact_hybrid.json")
    calls: list[tuple[str, int]] = []
    encoder = models._encoder

    def spy(spec, role, texts=1, resources=None):
        encode = encoder(spec, role, texts, resources)
        return lambda batch: calls.append((role, len(batch))) or encode(batch)

    monkeypatch.setattr(models, "_encoder", spy)
    searches: list[int] = []
    query = Collection.query

    def counted(self, *args, **kwargs):
        searches.append(len(kwargs["query_embeddings"]))
        return query(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "query", counted)
    exact = exact_search.query  # a small collection is searched exactly, not by Chroma

    def counted_exact(collection, where, vectors, n, include, resources=None):
        searches.append(len(vectors))
        return exact(collection, where, vectors, n, include, resources)

    monkeypatch.setattr(exact_search, "query", counted_exact)
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path / "w")
    outputs = ["dense.results", "fusion.results"]
    one_by_one = evaluate_graph(doc, dataset, outputs, executor=executor, batch_queries=False)
    assert [c for c in calls if c[0] == "query"] == [("query", 1)] * len(QUERIES)
    assert searches == [1] * len(QUERIES)
    calls.clear()
    searches.clear()
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=tmp_path / "cache2"), work_dir=tmp_path / "w")
    batched = evaluate_graph(doc, dataset, outputs, executor=executor)
    # the warm-up run embeds the first query alone, then all queries go in one batch
    assert [c for c in calls if c[0] == "query"] == [("query", 1), ("query", len(QUERIES))]
    # the warm-up searches its query; then one call searches every query ahead of the loop
    assert searches == [1, len(QUERIES)]
    for spec in outputs:
        for row_a, row_b in zip(one_by_one.per_query[spec], batched.per_query[spec],
                                strict=True):
            assert row_a["top_docs"] == row_b["top_docs"]
            assert row_a["ndcg@10"] == row_b["ndcg@10"]


def test_memo_hands_back_vectors_only_for_the_same_embedder():
    spec = EmbedderSpec(model="m")
    with query_vector_memo() as memo:
        remember(memo, spec, ["a", "b"], np.eye(2, dtype=np.float32))
        assert np.array_equal(np.stack(remembered(spec, ["b", "a"])), np.eye(2)[::-1])
        assert remembered(spec, ["a", "c"]) is None
        assert remembered(EmbedderSpec(model="m", query_prefix="q: "), ["a"]) is None
    assert remembered(spec, ["a"]) is None


@pytest.mark.slow  # loads the MiniLM model and builds a Chroma index
def test_a_ranking_evaluation_writes_no_query_result_to_disk(tmp_path, root):
    """Not even the first query's, whose setup run builds the indexes: a fresh process
    scores every query anew (and a fixed-cost measurement embeds its query)."""
    from modrag_studio.evaluation.query_batch import query_side_nodes

    dataset = load_beir(write_dataset(tmp_path / "data"), "test")
    doc = load(root / "sample_graphs" / "scifact_hybrid.json")
    registry = default_registry()
    executor = Executor(registry, cache=NodeCache(disk_dir=tmp_path / "cache"),
                        work_dir=tmp_path / "w")
    evaluate_graph(doc, dataset, ["fusion.results"], executor=executor)
    side = query_side_nodes(doc, "query", registry) - {"query"}
    disk = NodeCache(disk_dir=tmp_path / "cache")  # what a new process finds
    planner = Executor(registry, cache=disk, work_dir=tmp_path / "w")
    for query_id in dataset.evaluated_query_ids():
        planned = planner.run(doc, {"corpus": str(dataset.corpus_path),
                                    "query": dataset.queries[query_id]}, plan_only=True)
        keys = {v.node_id: v.cache_key for v in planned.trace.visits
                if v.node_id in side and v.cache_key}
        assert {"bm25", "dense", "fusion"} <= set(keys)
        assert not [node for node, key in keys.items() if disk.contains(key)]
    indexes = planner.run(doc, {"corpus": str(dataset.corpus_path), "query": "x"},
                          plan_only=True)
    assert all(disk.contains(v.cache_key) for v in indexes.trace.visits
               if v.node_id in ("bm25_index", "split") and v.cache_key)  # these do persist
