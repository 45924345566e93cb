"""``modrag tune``: a space checked before anything runs, trials on one cache, the best
trial tested against the base on held-out questions, and the winner saved as a variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.cli import main
from modrag_studio.commands.common import parse_value
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import from_json_dict, load, save
from modrag_studio.engine.edit.variants import VariantError, apply_variant
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import load_beir
from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.evaluation.tuning import (
    QuestionsError,
    SpaceError,
    dataset_from_evalset,
    parse_space,
    split_questions,
    tune,
)
from modrag_studio.evaluation.tuning.search import GridProposer, RandomProposer, TPEProposer
from modrag_studio.evaluation.tuning.space import split_values
from modrag_studio.evaluation.tuning.tuner import store_collections, trial_graph
from tests.evaluation.tune_helpers import (
    bm25_graph,
    write_stemming_corpus,
    write_stemming_dataset,
    write_stemming_evalset,
)


def executor(tmp_path: Path) -> Executor:
    return Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))


def test_values_split_outside_brackets_and_quotes():
    assert split_values('1,2, 3') == ["1", "2", "3"]
    assert split_values('{"a": 1, "b": 2},{"a": 2}') == ['{"a": 1, "b": 2}', '{"a": 2}']
    assert split_values('"x,y",z') == ['"x,y"', "z"]


def test_space_is_checked_against_the_graph_and_the_node_types():
    doc, registry = bm25_graph(), default_registry()
    for spec, message in (("nope.top_k=1,2", "no node 'nope'"),
                          ("bm25.topk=1,2", "has no param 'topk' (params: "),
                          ("bm25.top_k=0,5", "bm25.top_k=0"),
                          ("rerank=fuse.nothing", "fuse.nothing"),
                          ("bm25.top_k", "expected node.param=v1,v2"),
                          ("rerank.bypass=maybe", "bypass takes true and/or false")):
        with pytest.raises(SpaceError, match=message.replace("(", r"\(").replace(".", r"\.")):
            parse_space([spec], doc, registry, parse_value)
    with pytest.raises(SpaceError, match="more than once"):
        parse_space(["bm25.top_k=1", "bm25.top_k=2"], doc, registry, parse_value)
    # a param of the swapped-to type is known, and the upstream dimension comes first
    space = parse_space(["rerank.normalization=minmax,zscore", "rerank=fuse.rrf,fuse.convex",
                         "index.stemmer=none,english"], doc, registry, parse_value)
    assert space.names() == ["index.stemmer", "rerank", "rerank.normalization"]
    assert space.size == 8


def test_a_variant_leaves_out_what_the_base_already_has_and_params_the_type_lacks():
    doc, registry = bm25_graph(), default_registry()
    space = parse_space(["rerank=fuse.rrf,fuse.convex", "rerank.k=20,60",
                         "rerank.bypass=false,true"], doc, registry, parse_value)
    variant = space.variant(("fuse.convex", 20, False), "t1", registry, doc)
    assert variant.swap == {"rerank": "fuse.convex"} and variant.params == {}
    assert variant.bypass == {}
    graph = apply_variant(doc, variant, registry)
    assert graph.node("rerank").type == "fuse.convex"
    same = space.variant(("fuse.rrf", 60, False), "t2", registry, doc)
    assert not (same.swap or same.params or same.bypass)  # k=60 is the RRF default
    off = space.variant(("fuse.rrf", 20, True), "t3", registry, doc)
    assert off.params == {"rerank": {"k": 20}} and off.bypass == {"rerank": True}
    with pytest.raises(VariantError, match="cannot bypass 'rerank'"):
        apply_variant(doc, off, registry)  # fusion of several inputs has none to pass on


def test_split_is_seeded_disjoint_and_refuses_a_small_held_out_part():
    ids = [f"q{i}" for i in range(100)]
    one, again = split_questions(ids, 0.3, seed=4), split_questions(ids, 0.3, seed=4)
    assert one == again and len(one.held_out) == 30 and len(one.tuning) == 70
    assert not set(one.tuning) & set(one.held_out)
    assert split_questions(ids, 0.3, seed=5).held_out != one.held_out
    with pytest.raises(QuestionsError, match="held-out part would have 6 question"):
        split_questions(ids[:20], 0.3, seed=4)


def test_proposers_never_repeat_and_tpe_is_seeded():
    space = parse_space(["bm25.top_k=1,2,3,4", "index.stemmer=none,english"], bm25_graph(),
                        default_registry(), parse_value)
    grid = [GridProposer(space).ask() for _ in range(1)]
    assert grid == [("none", 1)]
    for make in (lambda: RandomProposer(space, 3), lambda: TPEProposer(space, 3)):
        proposer, seen = make(), []
        while (values := proposer.ask()) is not None:
            seen.append(values)
            proposer.tell(values, float(values[1]))
        assert len(seen) == len(set(seen)) == space.size
    first = TPEProposer(space, 9)
    second = TPEProposer(space, 9)
    picks = []
    for proposer in (first, second):
        run = []
        for _ in range(5):
            values = proposer.ask()
            proposer.tell(values, float(values[1]))
            run.append(values)
        picks.append(run)
    assert picks[0] == picks[1]


def test_tune_finds_the_stemmer_and_proves_it_on_held_out_questions(tmp_path):
    data = load_beir(write_stemming_dataset(tmp_path / "data"))
    doc, registry = bm25_graph(), default_registry()
    space = parse_space(["index.stemmer=none,english", "bm25.top_k=3,10"], doc, registry,
                        parse_value)
    shown = []
    result = tune(doc, data, "rerank.results", space, executor=executor(tmp_path),
                  budget=10, seed=1, held_out=0.4,
                  on_trial=lambda trial, done, total: shown.append((done, total)))
    assert result.sampler == "grid" and len(result.trials) == 4
    assert shown[0] == (0, 4) and shown[-1] == (4, 4)
    assert result.best is not None and result.best.settings["index.stemmer"] == "english"
    assert result.best.score > result.base.score
    stats = result.held_out["metrics"]["ndcg@10"]
    assert stats["n"] == 24 and stats["delta"] > 0.3 and stats["p_value"] < 0.05
    assert result.verdict == "better"
    # the trial that equals the base graph is recognised, not run again
    same = [t for t in result.trials if t.settings == {"index.stemmer": "none",
                                                       "bm25.top_k": 10}]
    assert same and "the same graph as trial 0" in same[0].error


def test_no_significant_difference_is_never_called_better(tmp_path):
    data = load_beir(write_stemming_dataset(tmp_path / "data"))
    doc = bm25_graph(stemmer="english")
    space = parse_space(["bm25.top_k=9,10,11"], doc, default_registry(), parse_value)
    result = tune(doc, data, "rerank.results", space, executor=executor(tmp_path), seed=2,
                  held_out=0.4)
    assert result.best is None and result.verdict == "base is best"
    assert result.held_out == {}


@pytest.mark.parametrize("store", ["store.chroma", "store.lancedb"])
def test_a_store_fed_by_a_changed_chunking_gets_its_own_collection(store):
    doc = from_json_dict({
        "schema_version": 1, "metadata": {"name": "dense"},
        "nodes": [{"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
                  {"id": "load", "type": "load.files", "params": {}},
                  {"id": "split", "type": "split.recursive", "params": {"chunk_size": 500}},
                  {"id": "embedder", "type": "embed.model", "params": {}},
                  {"id": "store", "type": store, "params": {"collection": "docs"}},
                  {"id": "out", "type": "graph.output", "params": {"name": "index"}}],
        "edges": [{"from": "corpus.value", "to": "load.path"},
                  {"from": "load.documents", "to": "split.documents"},
                  {"from": "split.chunks", "to": "store.chunks"},
                  {"from": "embedder.embedder", "to": "store.embedder"},
                  {"from": "store.index", "to": "out.value"}]})
    registry = default_registry()
    space = parse_space(["split.chunk_size=500,800,2000"], doc, registry, parse_value)
    names = set()
    for values in space.combinations():
        graph = trial_graph(doc, space.variant(values, "t", registry, doc), registry)
        names.add(graph.node("store").params["collection"])
    assert "docs" in names and len(names) == 3
    assert all(n == "docs" or n.startswith("docs-t") for n in names)
    assert store_collections(doc, doc, registry) == []


def test_tune_command_on_an_evaluation_set_saves_the_winner_as_a_variant(tmp_path, capsys):
    corpus = write_stemming_corpus(tmp_path / "docs")
    evalset = write_stemming_evalset(tmp_path / "set.jsonl")
    assert len(dataset_from_evalset(load_evalset(evalset), corpus).queries) == 60
    graph = tmp_path / "g.json"
    save(bm25_graph(), graph)
    before = load(graph)
    args = ["tune", str(graph), "--evalset", str(evalset), "--input", f"corpus={corpus}",
            "--output", "rerank.results", "--space", "index.stemmer=none,english",
            "--held-out", "0.4", "--method", "held-out", "--cache-dir", str(tmp_path / "c"),
            "--report",
            str(tmp_path / "r.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "better" in out and "saved as variant 'tuned'" in out
    after = load(graph)
    assert after.nodes == before.nodes and after.edges == before.edges  # the base is kept
    (variant,) = after.variants
    assert variant.params == {"index": {"stemmer": "english"}}
    assert "p=" in variant.description and "held-out" in variant.description
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["saved_variant"] == "tuned" and report["split"]["held_out"] == 24
    # a second tune does not overwrite the stored variant silently
    assert main(args) == 2
    assert "already has a variant 'tuned'" in capsys.readouterr().err
    assert load(graph).variants == after.variants


def test_tune_command_errors_name_the_cause_and_change_nothing(tmp_path, capsys):
    data = write_stemming_dataset(tmp_path / "data", count=20)
    graph = tmp_path / "g.json"
    save(bm25_graph(), graph)
    text = graph.read_text()
    base = ["tune", str(graph), "--dataset", str(data), "--output", "rerank.results",
            "--method", "held-out", "--cache-dir", str(tmp_path / "c")]
    cases = [(["--space", "bm25.topk=1,2"], "no param 'topk'"),
             (["--space", "bm25.top_k=1,2"], "held-out part would have 6 question"),
             (["--space", "bm25.top_k=1,2", "--held-out", "0.5", "--min-held-out", "5",
               "--metric", "ndcg@11"], "--metric ndcg@11: not a metric"),
             ([], "give at least one --space")]
    for extra, message in cases:
        assert main([*base, *extra]) == 2, extra
        assert message in capsys.readouterr().err
    assert graph.read_text() == text
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"id": "u", "question": "none?", "answerable": False}) + "\n")
    assert main(["tune", str(graph), "--evalset", str(empty), "--input",
                 f"corpus={tmp_path}", "--output", "rerank.results", "--space",
                 "bm25.top_k=1,2"]) == 2
    assert "no answerable question names its expected documents" in capsys.readouterr().err
