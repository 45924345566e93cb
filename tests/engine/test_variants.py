"""Variants: applying changes, validation with clear errors, and cache sharing between runs."""

from __future__ import annotations

import pytest

from modrag_studio.commands.common import parse_value
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import VariantSpec, dumps, loads
from modrag_studio.engine.edit.variants import (
    VariantError,
    apply_variant,
    diff_graphs,
    parse_variant_args,
    resolve_variant,
    with_variant,
)
from modrag_studio.engine.run.executor import Executor
from tests.evaluation.compare_helpers import two_bm25_graph, write_dataset


def _ran(executor: Executor, doc, corpus: str, query: str) -> set[str]:
    result = executor.run(doc, {"corpus": corpus, "query": query})
    assert result.ok, [v.error for v in result.trace.visits if v.error]
    return {v.node_id for v in result.trace.visits if v.status == "done"}


@pytest.mark.parametrize(("spec", "rerun"), [
    ({"params": {"fusion": {"k": 5}}}, {"fusion", "out"}),
    ({"params": {"plain": {"top_k": 3}}}, {"plain", "fusion", "out"}),
    ({"swap": {"fusion": "fuse.convex"}}, {"fusion", "out"}),
    ({"params": {"split": {"chunk_size": 120}}},
     {"split", "stem_index", "plain_index", "stemmed", "plain", "fusion", "out"}),
    ({"rewire": [{"from": "stemmed.results", "to": "out.value"}]}, {"out"}),
])
def test_only_nodes_downstream_of_a_change_run_again(tmp_path, spec, rerun):
    corpus = str(write_dataset(tmp_path / "data") / "corpus.jsonl")
    base = two_bm25_graph()
    variant = apply_variant(base, VariantSpec(name="v", **spec), default_registry())
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path / "w")
    first = _ran(executor, base, corpus, "heart attack")
    assert {"load", "split", "fusion"} <= first
    # graph inputs and outputs pass values through on every run; the rest is cached
    pass_through = {"corpus", "query"}
    assert _ran(executor, variant, corpus, "heart attack") - pass_through == rerun
    assert diff_graphs(base, variant).rerun == rerun
    assert _ran(executor, base, corpus, "heart attack") - pass_through <= {"out"}


def test_variants_are_stored_in_the_graph_file_and_round_trip():
    doc = with_variant(two_bm25_graph(), VariantSpec(
        name="convex", params={"fusion": {"normalization": "zscore"}},
        swap={"fusion": "fuse.convex"}))
    again = loads(dumps(doc))
    applied = apply_variant(again, "convex", default_registry())
    assert applied.node("fusion").type == "fuse.convex"
    assert applied.node("fusion").params == {"normalization": "zscore"}
    assert applied.variants is None and applied.metadata.name == "two_bm25:convex"
    assert diff_graphs(again, applied).changes_of("fusion") == [
        "type fuse.rrf -> fuse.convex", "normalization"]


@pytest.mark.parametrize(("spec", "message"), [
    ({"params": {"nope": {"k": 1}}}, "no node 'nope'"),
    ({"params": {"fusion": {"kk": 1}}}, "node 'fusion' (fuse.rrf) has no param 'kk'"),
    ({"swap": {"fusion": "retrieve.bm25"}}, "has no input 'rankings'"),
    ({"swap": {"fusion": "no.such.type"}}, "swap of 'fusion'"),
    ({"rewire": [{"from": "load.documents", "to": "out.value", "instead_of": "split.chunks"}]},
     "no edge split.chunks -> out.value"),
])
def test_bad_variants_name_the_problem(spec, message):
    with pytest.raises(VariantError, match="variant 'bad'") as info:
        apply_variant(two_bm25_graph(), VariantSpec(name="bad", **spec), default_registry())
    assert message in str(info.value)


def test_command_line_variants_group_by_name_and_merge_with_stored_ones():
    specs = parse_variant_args(["b:fusion.k=10", "b:plain.top_k=2", "c:fusion=fuse.convex",
                                "d:out.value<-plain.results"], parse_value)
    assert specs["b"].params == {"fusion": {"k": 10}, "plain": {"top_k": 2}}
    assert specs["c"].swap == {"fusion": "fuse.convex"}
    assert specs["d"].rewire[0].source == "plain.results"
    stored = with_variant(two_bm25_graph(), VariantSpec(name="b", params={"stemmed": {
        "top_k": 4}}))
    merged = resolve_variant(stored, specs["b"], default_registry())
    assert merged.node("stemmed").params["top_k"] == 4 and merged.node("fusion").params["k"] == 10
    with pytest.raises(VariantError, match="no variant 'zz'.*variants: b"):
        resolve_variant(stored, parse_variant_args(["zz"], parse_value)["zz"], default_registry())
    with pytest.raises(VariantError, match="expected NAME:node.param=value"):
        parse_variant_args(["b:fusion"], parse_value)
