"""``modrag compare``: the JSON contract on an evaluation set, variants, reports, one question."""

from __future__ import annotations

import json

import pytest

from modrag_studio.cli import main
from modrag_studio.engine.core.document import VariantSpec, save
from modrag_studio.engine.edit.variants import with_variant
from tests.evaluation.compare_helpers import QUERIES, two_bm25_graph, write_dataset


@pytest.fixture
def setup(tmp_path):
    data = write_dataset(tmp_path / "data")
    graph_a = tmp_path / "a.json"
    save(with_variant(two_bm25_graph(), VariantSpec(name="convex",
                                                    swap={"fusion": "fuse.convex"})), graph_a)
    graph_b = tmp_path / "b.json"
    save(two_bm25_graph("plain_first", "fuse.convex"), graph_b)
    return tmp_path, data, graph_a, graph_b


def _run_json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_two_graphs_on_a_dataset_print_the_contract(setup, capsys):
    tmp, data, graph_a, graph_b = setup
    code, result = _run_json(capsys, [
        "compare", str(graph_a), str(graph_b), "--dataset", str(data), "--output",
        "fusion.results", "--output-b", "plain.results", "--json", "--report",
        str(tmp / "cmp.json"), "--cache-dir", str(tmp / "cache")])
    assert code == 0 and result["comparable"]
    assert set(result["metrics"]) >= {"ndcg@10", "recall@10", "hit@10", "mrr@10"}
    for values in result["metrics"].values():
        assert set(values) >= {"a", "b", "delta", "ci95", "p_value"}
        assert values["delta"] == pytest.approx(values["b"] - values["a"], abs=2e-4)
        assert values["ci95"][0] <= values["delta"] + 1e-9 <= values["ci95"][1] + 2e-9
        assert 0 < values["p_value"] <= 1
    q = result["queries"]
    assert q["wins"] + q["losses"] + q["ties"] == len(QUERIES) == q["n"]
    assert "randomization" in result["test"]["name"] and result["test"]["seed"] is not None
    # every ranked output both graphs have is compared node by node
    assert set(result["nodes"]) == {"stemmed.results", "plain.results", "fusion.results"}
    ids = result["variants"]
    assert ids["a"]["graph_sha256"] != ids["b"]["graph_sha256"]
    assert len(ids["a"]["graph_sha256"]) == 64
    for key in ("corpus_sha256", "queries_sha256", "qrels_sha256", "split"):
        assert result["dataset"][key]
    assert json.loads((tmp / "cmp.json").read_text()) == result
    for flip in result["flipped"]:
        assert flip["outcome"] in ("gained", "lost") and flip["query"] == QUERIES[flip[
            "query_id"]]


def test_variant_of_one_graph_against_its_base(setup, capsys):
    tmp, data, graph_a, _ = setup
    code, result = _run_json(capsys, [
        "compare", str(graph_a), "--variant", "convex", "--variant", "convex:fusion.top_k=1",
        "--dataset", str(data), "--output", "fusion.results", "--json",
        "--cache-dir", str(tmp / "cache")])
    assert code == 0
    assert (result["variants"]["a"]["name"], result["variants"]["b"]["name"]) == ("base",
                                                                                  "convex")
    # only the fusion changed: the retrievers' rankings are the same on both sides
    plain = result["nodes"]["plain.results"]
    assert plain["metrics"]["ndcg@10"]["delta"] == 0 and plain["metrics"]["ndcg@10"][
        "p_value"] == 1.0
    # top_k=1 keeps one chunk: recall@10 of the variant can only drop
    assert result["metrics"]["recall@10"]["delta"] <= 0


def test_eval_reports_compare_when_split_and_qrels_match(setup, capsys):
    tmp, data, graph_a, graph_b = setup
    for graph, name in ((graph_a, "ra.json"), (graph_b, "rb.json")):
        assert main(["eval", str(graph), "--dataset", str(data), "--output", "fusion.results",
                     "--report", str(tmp / name), "--cache-dir", str(tmp / "cache")]) == 0
    capsys.readouterr()
    code, result = _run_json(capsys, ["compare", str(tmp / "ra.json"), str(tmp / "rb.json"),
                                      "--json"])
    assert code == 0 and result["comparable"]
    assert result["output"] == {"a": "fusion.results", "b": "fusion.results"}
    other = write_dataset(tmp / "other", split="test")
    (other / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td4\t1\n")
    assert main(["eval", str(graph_b), "--dataset", str(other), "--output", "fusion.results",
                 "--report", str(tmp / "rc.json"), "--cache-dir", str(tmp / "cache")]) == 0
    capsys.readouterr()
    code, result = _run_json(capsys, ["compare", str(tmp / "ra.json"), str(tmp / "rc.json"),
                                      "--json"])
    assert code == 1 and not result["comparable"]
    assert result["not_comparable_because"] == ["qrels_sha256 differs"]


def test_one_question_node_by_node(setup, capsys):
    tmp, data, graph_a, _ = setup
    code, result = _run_json(capsys, [
        "compare", str(graph_a), "--variant", "few:plain.top_k=2", "--input",
        f"corpus={data / 'corpus.jsonl'}", "--input", "query=lung disease oxygen smokers",
        "--json", "--cache-dir", str(tmp / "cache")])
    assert code == 0
    assert result["changed_nodes"] == ["plain"]
    assert set(result["ran_b"]) - {"corpus", "query"} == {"plain", "fusion", "out"}
    nodes = result["nodes"]
    assert nodes["stemmed"]["status"] == "same" and nodes["load"]["badge"] == "same"
    plain = nodes["plain"]["ports"]["results"]
    assert plain["kind"] == "ranking" and not plain["same"]
    assert len(plain["left"]) >= 1 and plain["entered"] == []
    assert nodes["plain"]["badge"] == f"-{len(plain['left'])} out" + (
        f" {len(plain['moved'])} moved" if plain["moved"] else "")


def test_bad_command_lines_name_the_problem(setup, capsys):
    tmp, data, graph_a, graph_b = setup
    assert main(["compare", str(graph_a), str(graph_b), "--variant", "x:fusion.k=2",
                 "--input", "query=x"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["compare", str(graph_a), "--variant", "x:nope.k=2", "--dataset",
                 str(data), "--output", "fusion.results"]) == 2
    assert "no node 'nope'" in capsys.readouterr().err
    assert main(["compare", str(graph_a), str(graph_b), "--dataset", str(data)]) == 2
    assert "--output" in capsys.readouterr().err
