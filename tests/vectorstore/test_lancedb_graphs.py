"""store.lancedb in whole graphs: pre-flight (``modrag check``), the sample graphs' 'lancedb'
variant (a swap of store.chroma), the trust list, and a read-only mounted folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from modrag_nodes.vectorstore import handles
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.edit.variants import apply_variant
from tests.hardening.helpers import (
    ROOT,
    lock_held,
    registry,
    snapshot,
    sync_chroma,
    sync_read_only,
    unshare_allowed,
)
from tests.vectorstore.test_lancedb_store import lance_graph

CLAIMS = {
    "d1": ("Aspirin and the heart", "Low-dose aspirin lowers the risk of a heart attack."),
    "d2": ("Vitamin D", "Vitamin D deficiency is common in northern winters."),
    "d3": ("Sleep", "Adults who sleep less than six hours have a higher blood pressure."),
    "d4": ("Coffee", "Coffee drinking is linked with a lower risk of liver disease."),
}


@pytest.fixture(autouse=True)
def _fresh_handles():
    handles.forget()
    yield
    handles.forget()


def store_only(folder: Path) -> str:
    """A graph of the store alone (what ``modrag check`` looks at), table 'faults'."""
    return json.dumps({"metadata": {"name": "check"}, "nodes": [
        {"id": "store", "type": "store.lancedb",
         "params": {"path": str(folder), "collection": "faults"}},
        {"id": "out", "type": "graph.output", "params": {"name": "index"}}],
        "edges": [{"from": "store.index", "to": "out.value"}]})


def check(graph: Path, capsys) -> tuple[int, dict]:
    code = main(["check", str(graph), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_check_knows_a_missing_a_filled_and_a_locked_lancedb_folder(tmp_path, capsys):
    folder = tmp_path / "lance"
    graph = tmp_path / "g.json"
    graph.write_text(store_only(folder))
    code, report = check(graph, capsys)
    assert code == 0, report
    assert report["nodes"]["store"] == {"ok": True, "detail": f"LanceDB folder {folder} "
                                        "(created on the first run)"}
    assert Executor(registry(), NodeCache()).run(lance_graph(folder, 4)).ok
    code, report = check(graph, capsys)
    assert code == 0 and report["nodes"]["store"]["detail"].endswith("(table 'faults': 4 rows)")

    with lock_held("lancedb", folder, "faults") as holder:
        code, report = check(graph, capsys)
    assert code != 0 and not report["ok"]
    assert not report["nodes"]["store"]["ok"]
    assert f"locked by PID {holder.pid}" in report["nodes"]["store"]["detail"]

    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    graph.write_text(store_only(afile))
    code, report = check(graph, capsys)
    assert code != 0 and "is a file, not a folder" in report["nodes"]["store"]["detail"]


@pytest.mark.parametrize("sample", ["scifact_hybrid", "scifact_dense"])
def test_the_lancedb_variant_swaps_the_store_and_keeps_its_params(sample):
    doc = load(ROOT / "sample_graphs" / f"{sample}.json")
    swapped = apply_variant(doc, "lancedb", default_registry())
    store = swapped.node("store")
    assert store.type == "store.lancedb"
    assert store.params == {"collection": doc.node("store").params["collection"]}
    assert [e for e in swapped.edges if "store" in (e.source_node, e.target_node)] == \
        [e for e in doc.edges if "store" in (e.source_node, e.target_node)]


def test_scifact_hybrid_with_either_store_gives_the_same_rankings(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                              for k, (t, x) in CLAIMS.items()), encoding="utf-8")
    doc = load(ROOT / "sample_graphs" / "scifact_hybrid.json")
    executor = Executor(default_registry(), NodeCache(), work_dir=tmp_path / "work")
    rankings = {}
    for name, graph in (("chroma", doc), ("lancedb", apply_variant(doc, "lancedb",
                                                                   default_registry()))):
        for query in ("aspirin prevents heart attacks", "short sleep and hypertension"):
            result = executor.run(graph, {"corpus": str(corpus), "query": query})
            assert result.ok, [v.error.message for v in result.trace.visits if v.error]
            dense = result.output_of("dense", "results")
            rankings[name, query] = ([r.chunk.doc_id for r in dense],
                                     [round(r.score, 4) for r in dense],
                                     [r.chunk.doc_id for r in result.outputs["results"]])
        index = result.output_of("store", "index")
        assert index.backend == ("lancedb" if name == "lancedb" else "chroma-persistent")
        assert Path(index.path).parent == tmp_path / "work"
    assert rankings["lancedb", "aspirin prevents heart attacks"][0][0] == "d1"
    assert rankings["lancedb", "short sleep and hypertension"][0][0] == "d3"
    for query in ("aspirin prevents heart attacks", "short sleep and hypertension"):
        assert rankings["lancedb", query] == rankings["chroma", query]


def test_the_trust_list_names_the_shared_lancedb_folder_and_a_large_delete_share(tmp_path):
    store = default_registry().instance("store.lancedb")
    params = store.Params()
    found = dict(store.store_writes(params, lambda _path: True))
    assert "shared LanceDB folder" in found["path"] and found["path"].endswith("lancedb")
    outside = store.Params(path=str(tmp_path / "elsewhere"), max_delete_share=1.0)
    assert dict(store.store_writes(outside, lambda _path: True)) == {
        "max_delete_share": "may delete up to 100% of collection 'modrag' without asking"}
    assert store.store_writes(outside, lambda _path: False) == []


def test_a_read_only_lancedb_folder_is_named_and_left_alone(tmp_path):
    if (reason := unshare_allowed()) is not None:
        pytest.skip(reason)
    folder = tmp_path / "store"
    assert sync_chroma(folder, 5, "store.lancedb")["status"] == "ok"
    before = snapshot(folder)
    outcome = sync_read_only(folder, "lancedb", 6)
    assert outcome["status"] == "failed"
    message = outcome["errors"]["store"]
    assert str(folder) in message and "read-only" in message
    assert snapshot(folder) == before


def lance_index_graph(tmp_path: Path):
    from modrag_studio.engine.core.document import from_json_dict
    from tests.distributed.helpers import index_graph

    data = json.loads(index_graph({"path": str(tmp_path / "lance"), "collection": "c20"})
                      .model_dump_json(by_alias=True))
    for node in data["nodes"]:
        if node["id"] == "store":
            node["type"] = "store.lancedb"
    return from_json_dict(data)


def test_modrag_index_writes_a_lancedb_store_here_and_refuses_ray_naming_the_node(
        tmp_path, capsys, monkeypatch):
    from modrag_studio.engine.core.document import save
    from tests.distributed.helpers import write_corpus

    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    graph = tmp_path / "g.json"
    save(lance_index_graph(tmp_path), graph)
    code = main(["index", str(graph), "--input", f"corpus={corpus}", "--quiet",
                 "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "20 documents" in out and "c20" in out
    from modrag_nodes.vectorstore import lance_store as ls

    assert ls.open_table(tmp_path / "lance", "c20").count_rows() > 20
    monkeypatch.setitem(sys.modules, "ray", None)  # never reached
    code = main(["index", str(graph), "--input", f"corpus={corpus}", "--ray"])
    err = capsys.readouterr().err
    assert code != 0
    assert "node 'store' (store.lancedb)" in err and "without --ray" in err
