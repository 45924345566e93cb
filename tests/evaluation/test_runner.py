"""The evaluation loop: indexes built once, one graph run per query, scores, GC left as found."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache, stable_hash
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.evaluation import evaluate_graph, load_beir

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"d1": "Aspirin lowers the risk of heart attack.",
        "d2": "Vitamin D deficiency is common in the north.",
        "d3": "Oxygen therapy helps patients with lung disease."}
QUERIES = {"1": "aspirin heart attack", "2": "vitamin D deficiency", "3": "lung oxygen therapy"}


def write_dataset(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n3\td3\t1\n")


def test_a_dataset_path_relative_to_the_shell_is_not_read_from_the_graph_folder(
        tmp_path, monkeypatch):
    write_dataset(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    dataset = load_beir("data", "test")
    assert dataset.corpus_path == tmp_path / "data" / "corpus.jsonl"
    report = evaluate_graph(load(ROOT / "sample_graphs" / "scifact_bm25.json"), dataset,
                            ["bm25.results"],
                            executor=Executor(default_registry(),
                                              cache=NodeCache(disk_dir=tmp_path / "cache")))
    assert not report.failures and report.outputs["bm25.results"]["ndcg@10"] == 1.0


def test_indexes_are_built_once_and_every_query_is_scored(tmp_path, monkeypatch):
    write_dataset(tmp_path)
    ran: list[str] = []

    class Spy(RunHook):
        def on_node_end(self, *, run_id, visit, inputs, outputs):
            if visit.status == "done":
                ran.append(visit.node_id)

    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))
    run = executor.run
    monkeypatch.setattr(executor, "run",
                        lambda *a, hooks=(), **k: run(*a, hooks=[*hooks, Spy()], **k))
    progress: list[int] = []
    report = evaluate_graph(load(ROOT / "sample_graphs" / "scifact_bm25.json"),
                            load_beir(tmp_path, "test"), ["bm25.results"], executor=executor,
                            on_progress=lambda done, total: progress.append(done))
    assert progress == [1, 2, 3] and report.queries == 3 and not report.failures
    assert report.outputs["bm25.results"]["ndcg@10"] == 1.0
    assert ran.count("bm25_index") == 1 and ran.count("load") == 1
    assert ran.count("bm25") == 3
    assert gc.get_freeze_count() == 0  # the collector is given back everything it froze


def test_a_failure_that_does_not_depend_on_the_query_stops_at_the_first_query(tmp_path):
    import pytest

    from modrag_studio.evaluation.runner import EvalError

    write_dataset(tmp_path)
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))
    runs: list[object] = []
    run = executor.run
    executor.run = lambda *a, **k: runs.append(a) or run(*a, **k)  # type: ignore[method-assign]
    with pytest.raises(EvalError, match="first query failed at node 'load'.*does not exist"):
        evaluate_graph(load(ROOT / "sample_graphs" / "scifact_bm25.json"),
                       load_beir(tmp_path, "test"), ["bm25.results"], executor=executor,
                       extra_inputs={"corpus": str(tmp_path / "missing.jsonl")},
                       batch_queries=False)
    assert len(runs) == 1


def test_per_query_results_stay_out_of_the_disk_cache(tmp_path):
    write_dataset(tmp_path)
    cache_dir = tmp_path / "cache"
    stored = []
    for limit in (1, 3):
        executor = Executor(default_registry(), cache=NodeCache(disk_dir=cache_dir))
        report = evaluate_graph(load(ROOT / "sample_graphs" / "scifact_bm25.json"),
                                load_beir(tmp_path, "test"), ["bm25.results"],
                                executor=executor, limit=limit)
        assert report.outputs["bm25.results"]["ndcg@10"] == 1.0
        stored.append(sorted(p.name for p in (cache_dir / "results").rglob("*.pkl")))
        stored.append(sorted(p.name for p in (cache_dir / "signatures").glob("*.json")))
    assert stored[0] and stored[0] == stored[2]  # the index is stored, no query's results
    # nor the per-query nodes' signatures ("why did this re-run"), kept in memory only
    doc = load(ROOT / "sample_graphs" / "scifact_bm25.json")
    scope = executor.scope_of(doc)
    names = {node: f"{stable_hash([scope, node])}.json" for node in ("load", "bm25")}
    assert names["load"] in stored[3] and names["bm25"] not in stored[3]


def test_qrels_naming_documents_missing_from_the_corpus_are_reported(tmp_path, capsys):
    from modrag_studio.cli import main

    write_dataset(tmp_path / "data")
    with (tmp_path / "data" / "qrels" / "test.tsv").open("a") as fh:
        fh.write("1\tgone-7\t1\n3\tgone-9\t2\n3\tnot-relevant\t0\n")
    dataset = load_beir(tmp_path / "data", "test")
    assert dataset.missing_relevant_docs(["1", "2", "3"]) == {"1": ["gone-7"], "3": ["gone-9"]}
    report_file = tmp_path / "report.json"
    code = main(["eval", str(ROOT / "sample_graphs" / "scifact_bm25.json"), "--dataset",
                 str(tmp_path / "data"), "--output", "bm25.results", "--report",
                 str(report_file), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: the qrels name 2 relevant document(s) missing from the corpus " \
           "(gone-7, gone-9), for 2 of the 3 queries" in err
    data = json.loads(report_file.read_text())
    assert data["missing_docs"] == {"1": ["gone-7"], "3": ["gone-9"]}
    assert "gone-7" in data["warnings"][0]
