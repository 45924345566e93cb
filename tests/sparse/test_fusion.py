"""Reciprocal rank fusion and convex combination: hand-checked math, weights, provenance."""

from __future__ import annotations

from typing import Any

import pytest

from modrag_nodes import register_builtin_nodes
from modrag_nodes.retrieval.fusion import ConvexNode, RRFNode, convex, rrf
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from tests.engine.helpers import edge, graph, node
from tests.sparse.helpers import chunks_from_texts, make_ctx, ranking


@pytest.fixture
def three_lists():
    return [ranking("bm25", ["a", "b", "c"]), ranking("dense", ["b", "c", "d"]),
            ranking("kw", ["c", "a", "e"])]


def test_rrf_by_hand(three_lists):
    ctx = make_ctx("fuse")
    out = RRFNode().run(ctx, RRFNode.Params(k=60), rankings=three_lists)["results"]
    expected = {"c": 1 / 63 + 1 / 62 + 1 / 61, "a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61,
                "d": 1 / 63, "e": 1 / 63}
    assert [r.chunk_id for r in out] == ["c", "a", "b", "d", "e"]  # ties: first seen first
    for r in out:
        assert r.score == pytest.approx(expected[r.chunk_id], abs=1e-15)
        assert r.score_kind == "rrf" and r.higher_is_better and r.retriever == "fuse"
    c = out[0]
    assert {n: s.rank for n, s in c.sources.items()} == {"bm25": 3, "dense": 2, "kw": 1,
                                                         "fuse": 1}
    assert c.sources["bm25"].score == 1.0 and c.sources["kw"].score == 3.0
    assert set(out[3].sources) == {"dense", "fuse"}
    assert ctx.details["inputs"] == {"bm25": 3, "dense": 3, "kw": 3}


def test_rrf_weights_by_retriever_id_and_k(three_lists):
    out = rrf(three_lists, k=10, weights={"dense": 2.0, "kw": 0.0})
    scores = {r.chunk_id: r.score for r in out}
    assert scores["b"] == pytest.approx(1 / 12 + 2 / 11)
    assert scores["c"] == pytest.approx(1 / 13 + 2 / 12)
    assert scores["a"] == pytest.approx(1 / 11)
    assert scores["e"] == 0.0
    assert [r.chunk_id for r in out][:3] == ["b", "c", "d"]


def test_weight_for_an_absent_retriever_warns(three_lists):
    ctx = make_ctx()
    RRFNode().run(ctx, RRFNode.Params(weights={"dense": 2, "graph": 3}), rankings=three_lists)
    assert any("graph" in w and "bm25, dense, kw" in w for w in ctx.warnings)


def test_weights_inside_a_placed_component_name_its_own_nodes():
    """A component's fusion names its retrievers "vector" and "bm25"; placed as "hybrid",
    they arrive as "hybrid/vector" and "hybrid/bm25", and the weights still apply (they were
    ignored with a warning); an exact id wins over the component's own name."""
    lists = [ranking("hybrid/bm25", ["a", "b"]), ranking("hybrid/vector", ["b", "a"])]
    weights = {"bm25": 0.0, "vector": 1.0}
    for node_type in (RRFNode, ConvexNode):
        ctx = make_ctx("hybrid/fusion")
        out = node_type().run(ctx, node_type.Params(weights=weights), rankings=lists)
        assert [r.chunk_id for r in out["results"]] == ["b", "a"], node_type.type_id
        assert not ctx.warnings
    ctx = make_ctx("hybrid/fusion")
    out = RRFNode().run(ctx, RRFNode.Params(weights={**weights, "hybrid/bm25": 5.0}),
                        rankings=lists)["results"]
    assert [r.chunk_id for r in out] == ["a", "b"]


def test_duplicates_and_repeated_retriever_ids():
    lists = [ranking("bm25", ["a", "b", "a"]), ranking("bm25", ["b"])]
    out = rrf(lists, k=60)
    assert [r.chunk_id for r in out] == ["b", "a"]
    assert set(out[0].sources) == {"bm25", "bm25#2"}
    assert out[1].score == pytest.approx(1 / 61)  # a counted once, at its best position
    assert rrf([[], []]) == []


def test_top_k_and_earlier_provenance_is_kept(three_lists):
    first = RRFNode().run(make_ctx("f1"), RRFNode.Params(), rankings=three_lists)["results"]
    again = RRFNode().run(make_ctx("f2"), RRFNode.Params(top_k=2),
                          rankings=[first, ranking("x", ["e"])])["results"]
    assert [r.chunk_id for r in again] == ["e", "c"]  # e: 1/65 + 1/61 beats c: 1/61
    assert set(again[1].sources) == {"bm25", "dense", "kw", "f1", "f2"}
    assert set(again[0].sources) == {"kw", "f1", "x", "f2"}


@pytest.mark.parametrize("fuse", [RRFNode(), ConvexNode()])
def test_uncut_holds_the_whole_fused_ranking(fuse, three_lists):
    whole = fuse.run(make_ctx("f"), fuse.Params(), rankings=three_lists)
    cut = fuse.run(make_ctx("f"), fuse.Params(top_k=2), rankings=three_lists)
    assert [r.chunk_id for r in cut["results"]] == [r.chunk_id for r in whole["results"][:2]]
    uncut = cut["uncut"].items
    assert [r.chunk_id for r in uncut] == [r.chunk_id for r in whole["results"]]
    assert [r.rank for r in uncut] == list(range(1, len(whole["results"]) + 1))
    assert all(a is b for a, b in zip(uncut, cut["results"], strict=False))  # not copies
    assert cut["uncut"].cut == 2 and whole["uncut"].cut == len(whole["results"])


def test_convex_inverts_distances_before_mixing():
    sims = ranking("dense", ["a", "b", "c"], [0.9, 0.5, 0.1])
    dists = ranking("l2", ["c", "a", "d"], [0.2, 0.4, 1.0], kind="distance",
                    higher_is_better=False)
    out = ConvexNode().run(make_ctx("mix"), ConvexNode.Params(),
                           rankings=[sims, dists])["results"]
    # minmax: dense a=1 b=.5 c=0; l2 (negated) c=1 a=.75 d=0; missing entries count 0.
    assert [(r.chunk_id, round(r.score, 9)) for r in out] == [
        ("a", 1.75), ("c", 1.0), ("b", 0.5), ("d", 0.0)]
    assert all(r.score_kind == "convex" and r.higher_is_better for r in out)
    assert out[0].sources["l2"].rank == 2 and out[0].sources["l2"].score == 0.4


def test_convex_weights_and_zscore():
    one = ranking("x", ["a", "b", "c"], [3.0, 2.0, 1.0])
    two = ranking("y", ["c", "b"], [10.0, 0.0])
    out = convex([one, two], normalization="zscore", weights={"x": 0.5})
    z = 1.5 ** 0.5  # z-scores of 3, 2, 1 are 1.2247, 0, -1.2247; of 10, 0 are 1, -1
    expected = {"a": 0.5 * z + -1.0, "b": 0.0 - 1.0, "c": 0.5 * -z + 1.0}
    assert {r.chunk_id: pytest.approx(r.score) for r in out} == {
        k: pytest.approx(v) for k, v in expected.items()}
    assert convex([ranking("x", ["a", "b"], [5.0, 5.0])])[0].score == 1.0


class _Docs(NodeType):
    type_id = "test.fusion_chunks"
    outputs = (OutputPort("chunks", list[Chunk]),)

    def run(self, ctx: Any, params: Any) -> dict[str, Any]:
        return {"chunks": chunks_from_texts([
            "running shoes for trail runs", "a shoe rack", "trail maps of the alps",
            "the runner runs a marathon", "weather in spring", "a bowl of soup",
            "cats sleep a lot", "notes on tax forms"])}


def test_rrf_node_takes_several_retrievers_in_a_graph():
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(_Docs)
    doc = graph(
        [node("docs", "test.fusion_chunks"), node("q", "graph.input", name="question"),
         node("plain", "bm25.index"), node("stem", "bm25.index", stemmer="english"),
         node("r1", "retrieve.bm25"), node("r2", "retrieve.bm25"),
         node("fuse", "fuse.rrf", weights={"r2": 2.0}),
         node("out", "graph.output", name="hits")],
        [edge("docs.chunks", "plain.chunks"), edge("docs.chunks", "stem.chunks"),
         edge("plain.index", "r1.index"), edge("stem.index", "r2.index"),
         edge("q.value", "r1.query"), edge("q.value", "r2.query"),
         edge("r1.results", "fuse.rankings"), edge("r2.results", "fuse.rankings"),
         edge("fuse.results", "out.value")],
    )
    result = Executor(registry=registry).run(doc, {"question": "runner shoes"})
    assert result.ok, result.trace
    hits = result.outputs["hits"]
    r1 = {h.chunk_id: h.rank for h in result.output_of("r1", "results")}
    r2 = {h.chunk_id: h.rank for h in result.output_of("r2", "results")}
    assert set(r2) - set(r1) == {"c1"}  # only the stemmed index matches "shoe"
    for hit in hits:
        expected = (1 / (60 + r1[hit.chunk_id]) if hit.chunk_id in r1 else 0) + 2 / (
            60 + r2[hit.chunk_id])
        assert hit.score == pytest.approx(expected)
        assert {k: v.rank for k, v in hit.sources.items() if k != "fuse"} == {
            name: ranks[hit.chunk_id] for name, ranks in (("r1", r1), ("r2", r2))
            if hit.chunk_id in ranks}
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


@pytest.mark.parametrize("fuse", [RRFNode, ConvexNode])
def test_fusion_never_changes_its_inputs_so_it_reads_them_uncopied(fuse, three_lists):
    assert fuse.isolate_inputs is False
    before = [[item.model_dump() for item in ranking] for ranking in three_lists]
    out = fuse().run(make_ctx("fuse"), fuse.Params(), rankings=three_lists)["results"]
    assert [[item.model_dump() for item in ranking] for ranking in three_lists] == before
    inputs = {id(item) for ranking in three_lists for item in ranking}
    assert not inputs & {id(item) for item in out}
