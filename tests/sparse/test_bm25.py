"""BM25 index and retriever: agreement with rank-bm25, engines, variants, the node in a graph."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from modrag_nodes import register_builtin_nodes
from modrag_nodes.retrieval.bm25 import (
    BM25Index,
    BM25IndexNode,
    BM25IndexParams,
    BM25Retrieve,
    search_texts,
)
from modrag_nodes.retrieval.tokenizers import Tokenizer
from modrag_studio.engine.core.datatypes import Chunk, Query
from modrag_studio.engine.core.errors import NodeConfigError
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.isolation import isolate
from tests.engine.helpers import edge, graph, node
from tests.sparse.helpers import chunks_from_texts, make_ctx, read_jsonl

TEXTS = [
    "Aspirin reduces the risk of heart attack in adults.",
    "The heart pumps blood through the body; blood carries oxygen.",
    "Vitamin D deficiency is common in northern countries.",
    "Aspirin and ibuprofen are common pain relievers.",
    "Oxygen therapy helps patients with lung disease.",
    "Regular exercise strengthens the heart and the lungs.",
    "Ibuprofen may irritate the stomach lining.",
    "Sunlight lets the skin make vitamin D.",
]
ENGINES = ["rank-bm25", "fast", "bm25s"]


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return chunks_from_texts(TEXTS)


@pytest.mark.parametrize("engine", ["rank-bm25", "fast"])
@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (0.9, 0.4)])
def test_scores_equal_rank_bm25_on_the_same_tokens(chunks, engine, k1, b):
    tok = Tokenizer(stopwords="english", stemmer="english")
    index = BM25Index.build(chunks, tokenizer=tok, engine=engine, k1=k1, b=b)
    reference = BM25Okapi([tok.tokenize(t) for t in TEXTS], k1=k1, b=b)
    for query in ["aspirin heart", "common vitamin", "oxygen lungs heart heart", "zebra"]:
        tokens = tok.tokenize(query)
        expected = reference.get_scores(tokens)
        assert np.allclose(index.scores(query), expected, rtol=1e-12, atol=1e-12)
        hits = index.search(query, 3)
        assert [i for i, _ in hits] == list(np.argsort(-expected, kind="stable")[:3])


def test_negative_idf_floor_matches_rank_bm25():
    # "common" is in 3 of 4 documents: its raw IDF is negative and rank-bm25 floors it.
    texts = ["common alpha", "common beta", "common gamma", "delta"]
    chunks = chunks_from_texts(texts)
    reference = BM25Okapi([t.split() for t in texts])
    fast = BM25Index.build(chunks, engine="fast")
    assert np.allclose(fast.scores("common"), reference.get_scores(["common"]))
    assert fast.scores("common")[0] > 0


def test_bm25s_engine_matches_up_to_clipped_idf(chunks):
    fast = BM25Index.build(chunks, engine="fast")
    b25s = BM25Index.build(chunks, engine="bm25s")
    for query in ["aspirin heart attack", "vitamin sunlight skin"]:
        assert np.allclose(b25s.scores(query), fast.scores(query), rtol=1e-5)


def test_retriever_node_results(chunks):
    ctx = make_ctx("bm25")
    index = BM25IndexNode().run(ctx, BM25IndexParams(), chunks=chunks)["index"]
    assert ctx.details["chunks"] == len(TEXTS) and ctx.details["engine"] == "fast"
    params = BM25Retrieve.Params(top_k=3)
    results = BM25Retrieve().run(make_ctx("bm25"), params, index=index,
                                 query=Query(text="aspirin pain"))["results"]
    assert results[0].chunk.text.startswith("Aspirin and ibuprofen")
    assert [r.rank for r in results] == [1, 2, 3][: len(results)]
    assert all(r.score_kind == "bm25" and r.higher_is_better for r in results)
    assert all(r.retriever == "bm25" and r.sources["bm25"].rank == r.rank for r in results)
    assert results == sorted(results, key=lambda r: -r.score)


def test_chunks_sharing_no_term_are_left_out(chunks):
    index = BM25Index.build(chunks)
    assert [r.chunk.chunk_id for r in search_texts(index, ["ibuprofen"], top_k=5)] == [
        "c6", "c3"]  # the shorter chunk first
    assert len(search_texts(index, ["ibuprofen"], top_k=5, drop_zero=False)) == 5
    assert search_texts(index, ["zebra"], top_k=5) == []


def test_query_variants_max_rrf_and_first(chunks):
    index = BM25Index.build(chunks)
    texts = ["vitamin D", "stomach ibuprofen"]
    first = search_texts(index, texts[:1], top_k=10)
    maxed = search_texts(index, texts, top_k=10, mode="max")
    fused = search_texts(index, texts, top_k=10, mode="rrf", rrf_k=60)
    ids = {r.chunk.chunk_id for r in maxed}
    assert {"c2", "c7", "c6", "c3"} <= ids and not {"c6", "c3"} & {
        r.chunk.chunk_id for r in first}
    per_text = [index.scores(t) for t in texts]
    for r in maxed:
        position = int(r.chunk.chunk_id[1:])
        assert r.score == pytest.approx(max(s[position] for s in per_text))
    assert all(r.score_kind == "rrf" for r in fused)
    # c6 is first for "stomach ibuprofen" and absent from "vitamin D": 1/(60+1)
    assert next(r for r in fused if r.chunk.chunk_id == "c6").score == pytest.approx(1 / 61)

    query = Query(text="vitamin D", variants=["stomach ibuprofen"])
    node_first = BM25Retrieve().run(make_ctx(), BM25Retrieve.Params(variants="first"),
                                    index=index, query=query)["results"]
    assert [r.chunk.chunk_id for r in node_first] == [r.chunk.chunk_id for r in first]


def test_index_pickles_and_copies_share_fitted_structures(chunks):
    index = BM25Index.build(chunks, engine="rank-bm25")
    again = pickle.loads(pickle.dumps(index))
    assert np.allclose(again.scores("heart blood"), index.scores("heart blood"))
    assert isolate({"index": index})["index"] is index  # shared, never copied per query
    assert "8 chunks" in index.preview()


def test_empty_input_and_bad_pattern_are_config_errors(chunks):
    with pytest.raises(NodeConfigError, match="'chunks' is empty"):
        BM25IndexNode().run(make_ctx(), BM25IndexParams(), chunks=[])
    with pytest.raises(NodeConfigError, match="param 'pattern'"):
        BM25IndexNode().run(make_ctx(), BM25IndexParams(pattern="(["), chunks=chunks)


class _TestChunks(NodeType):
    """Fixture node: outputs the module's chunks."""

    type_id = "test.sparse_chunks"
    outputs = (OutputPort("chunks", list[Chunk]),)

    def run(self, ctx: Any, params: Any) -> dict[str, Any]:
        return {"chunks": chunks_from_texts(TEXTS)}


def test_bm25_graph_runs_and_reuses_the_cached_index():
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(_TestChunks)
    doc = graph(
        [node("docs", "test.sparse_chunks"), node("index", "bm25.index", stemmer="english"),
         node("q", "graph.input", name="question"),
         node("bm25", "retrieve.bm25", top_k=2, label="sparse"),
         node("out", "graph.output", name="hits")],
        [edge("docs.chunks", "index.chunks"), edge("index.index", "bm25.index"),
         edge("q.value", "bm25.query"), edge("bm25.results", "out.value")],
    )
    executor = Executor(registry=registry)
    first = executor.run(doc, {"question": "vitamin D sunlight"})
    assert first.ok, first.trace
    hits = first.outputs["hits"]
    assert [h.chunk.chunk_id for h in hits] == ["c7", "c2"] and hits[0].retriever == "sparse"
    second = executor.run(doc, {"question": "heart attack"})
    cached = {v.node_id for v in second.trace.visits if v.cached}
    assert {"docs", "index"} <= cached and "bm25" not in cached
    assert second.outputs["hits"][0].chunk.chunk_id == "c0"


@pytest.fixture(scope="module")
def scifact_sample(request) -> tuple[list[Chunk], list[str]]:
    from tests.conftest import SHARED_DATA

    folder = SHARED_DATA / "scifact"
    if not folder.is_dir():
        pytest.skip(f"shared data not found at {folder}")
    docs = read_jsonl(folder / "corpus.jsonl", limit=400)
    chunks = [Chunk(chunk_id=d["_id"], doc_id=d["_id"], text=d["text"],
                    metadata={"title": d["title"]}) for d in docs]
    queries = [q["text"] for q in read_jsonl(folder / "queries.jsonl", limit=40)]
    return chunks, queries


@pytest.mark.shared_data
@pytest.mark.parametrize("tokenizer", [Tokenizer(), Tokenizer(stopwords="english",
                                                                stemmer="english")])
def test_fast_engines_give_rank_bm25_top10_on_scifact(scifact_sample, tokenizer):
    chunks, queries = scifact_sample
    indexes = {e: BM25Index.build(chunks, tokenizer=tokenizer, engine=e, fields="title+text")
               for e in ENGINES}
    # bm25s clips negative IDFs (terms in over half the chunks) to 0 where rank-bm25 floors
    # them at epsilon x mean IDF: compare bm25s only on queries free of such terms.
    df: dict[str, int] = {}
    for c in chunks:
        for term in set(tokenizer.tokenize(f"{c.metadata['title']}\n{c.text}")):
            df[term] = df.get(term, 0) + 1
    very_common = {t for t, n in df.items() if n > len(chunks) / 2}
    compared = 0
    for query in queries:
        reference = [i for i, _ in indexes["rank-bm25"].search(query, 10)]
        assert len(reference) == 10
        assert [i for i, _ in indexes["fast"].search(query, 10)] == reference
        if not very_common & set(tokenizer.tokenize(query)):
            compared += 1
            assert [i for i, _ in indexes["bm25s"].search(query, 10)] == reference
    assert compared >= 2
