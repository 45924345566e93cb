"""The kg node types run inside a graph document: build, link, search, path text, rerank,
routing rules, and an incremental update after a document changes."""

from __future__ import annotations

from pathlib import Path

from modrag_nodes.kg.routing import GRAPH_FIRST_ROUTER_PARAMS
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.run.executor import Executor

from .conftest import DICTIONARY


def _doc(corpus: Path, kg_folder: Path) -> dict:
    nodes = [
        ("question", "graph.input", {"name": "question"}),
        ("load", "load.files", {"path": str(corpus), "glob": "*.md"}),
        ("split", "split.recursive", {"chunk_size": 300, "overlap": 0}),
        ("extract", "kg.extract_rules", {"dictionary": str(DICTIONARY)}),
        ("kg", "kg.build", {"folder": str(kg_folder), "name": "t"}),
        ("link", "kg.link", {}),
        ("search", "kg.search", {"label": "graph"}),
        ("paths", "kg.path_text", {}),
        ("rerank", "kg.centrality_rerank", {"method": "degree"}),
        ("out_paths", "graph.output", {"name": "paths"}),
        ("out_evidence", "graph.output", {"name": "evidence"}),
        ("out_reranked", "graph.output", {"name": "reranked"}),
    ]
    edges = [
        ("load.documents", "split.documents"), ("split.chunks", "extract.chunks"),
        ("extract.extraction", "kg.extraction"), ("question.value", "link.query"),
        ("kg.graph", "link.graph"), ("question.value", "search.query"),
        ("kg.graph", "search.graph"), ("link.links", "search.links"),
        ("search.result", "paths.result"), ("search.chunks", "paths.evidence"),
        ("search.chunks", "rerank.chunks"), ("kg.graph", "rerank.graph"),
        ("paths.text", "out_paths.value"), ("paths.evidence", "out_evidence.value"),
        ("rerank.chunks", "out_reranked.value"),
    ]
    return {"schema_version": 1, "metadata": {"name": "kg-test"},
            "nodes": [{"id": i, "type": t, "params": p} for i, t, p in nodes],
            "edges": [{"from": a, "to": b} for a, b in edges]}


def test_graph_pipeline_and_incremental_update(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "services.md").write_text(
        "The Order Service depends on the Inventory Service.\n\n"
        "The Inventory Service depends on the Warehouse DB.\n", "utf-8")
    (corpus / "people.md").write_text("Chen Hao is responsible for the Order Service.\n", "utf-8")
    executor = Executor(default_registry(), work_dir=tmp_path / "work")
    doc = from_json_dict(_doc(corpus, tmp_path / "kg"))
    result = executor.run(doc, {"question": "What does the Order Service depend on?"})
    assert result.ok, result.trace.problems
    assert "Order Service -[depends on]-> Inventory Service" in result.outputs["paths"]
    assert "Inventory Service -[depends on]-> Warehouse DB" in result.outputs["paths"]
    evidence = result.outputs["evidence"]
    assert evidence[0].chunk.doc_id == "knowledge-graph"
    assert all(e.retriever == "graph" for e in evidence[1:])
    assert {e.chunk_id for e in result.outputs["reranked"]} == {e.chunk_id for e in evidence[1:]}
    uncut = result.output_of("rerank", "uncut")  # no top_k: the whole ranking was kept
    assert [e.chunk_id for e in uncut.items] == [e.chunk_id for e in result.outputs["reranked"]]
    assert uncut.cut == len(uncut.items)
    build = result.trace.visits_of("kg")[0]
    assert build.details["new_chunks"] >= 2 and build.details["nodes"] == 4
    assert (tmp_path / "kg" / "t.kg.json").is_file()

    (corpus / "services.md").write_text(
        "The Order Service depends on the Payment Gateway.\n\n"
        "The Inventory Service depends on the Warehouse DB.\n", "utf-8")
    result = executor.run(doc, {"question": "What does the Order Service depend on?"})
    assert result.ok, result.trace.problems
    details = result.trace.visits_of("kg")[0].details
    assert details["unchanged_chunks"] >= 1 and details["changed_chunks"] >= 1
    assert "Order Service -[depends on]-> Payment Gateway" in result.outputs["paths"]
    assert "Order Service -[depends on]-> Inventory Service" not in result.outputs["paths"]


def test_code_graph_node(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n", "utf-8")
    (pkg / "a.py").write_text('"""Module a."""\nfrom pkg import b\n', "utf-8")
    (pkg / "b.py").write_text("X = 1\n", "utf-8")
    doc = from_json_dict({
        "schema_version": 1, "metadata": {"name": "code"},
        "nodes": [{"id": "code", "type": "kg.code_graph",
                   "params": {"path": str(pkg), "folder": str(tmp_path / "kg")}},
                  {"id": "out", "type": "graph.output", "params": {"name": "graph"}},
                  {"id": "chunks", "type": "graph.output", "params": {"name": "chunks"}}],
        "edges": [{"from": "code.graph", "to": "out.value"},
                  {"from": "code.chunks", "to": "chunks.value"}]})
    result = Executor(default_registry(), work_dir=tmp_path / "work").run(doc)
    assert result.ok, result.trace.problems
    assert result.outputs["graph"].summary["edges"] == 2
    assert [c.chunk_id for c in result.outputs["chunks"]] == ["code:pkg", "code:pkg.a",
                                                              "code:pkg.b"]


def test_graph_first_router_preset(tmp_path: Path) -> None:
    doc = from_json_dict({
        "schema_version": 1, "metadata": {"name": "route"},
        "nodes": [{"id": "q", "type": "graph.input", "params": {"name": "question"}},
                  {"id": "router", "type": "route.intent", "params": GRAPH_FIRST_ROUTER_PARAMS},
                  {"id": "g", "type": "graph.output", "params": {"name": "graph"}},
                  {"id": "v", "type": "graph.output", "params": {"name": "vector"}}],
        "edges": [{"from": "q.value", "to": "router.query"},
                  {"from": "router.route_1", "to": "g.value"},
                  {"from": "router.default", "to": "v.value"}]})
    executor = Executor(default_registry(), work_dir=tmp_path)
    for question, route in [("Which services depend on the Inventory Service?", "graph"),
                            ("如果库存服务不可用，会影响哪些下游服务？", "graph"),
                            ("What calls the Order Service?", "graph"),
                            ("What are the canteen opening hours?", "vector"),
                            ("两个工厂之间的通勤班车单程需要多久？", "vector")]:
        result = executor.run(doc, {"question": question})
        assert result.ok and set(result.outputs) == {route}, question


def test_llm_extractor_node_with_fake_backend(tmp_path: Path) -> None:
    from modrag_nodes.llm.client import register_backend, unregister_backend

    from .test_extraction import FakeKGModel

    model = FakeKGModel()
    register_backend("fake-kg-node", lambda: model)
    try:
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        (corpus / "a.md").write_text("Alpha depends on Beta.\n", "utf-8")
        doc = from_json_dict({
            "schema_version": 1, "metadata": {"name": "llm-kg"},
            "nodes": [
                {"id": "load", "type": "load.files", "params": {"path": str(corpus)}},
                {"id": "split", "type": "split.recursive", "params": {"chunk_size": 200,
                                                                      "overlap": 0}},
                {"id": "model", "type": "llm.model", "params": {"backend": "fake-kg-node"}},
                {"id": "extract", "type": "kg.extract_llm", "params": {}},
                {"id": "kg", "type": "kg.build", "params": {"folder": str(tmp_path / "kg")}},
                {"id": "out", "type": "graph.output", "params": {"name": "graph"}}],
            "edges": [{"from": "load.documents", "to": "split.documents"},
                      {"from": "split.chunks", "to": "extract.chunks"},
                      {"from": "model.llm", "to": "extract.llm"},
                      {"from": "extract.extraction", "to": "kg.extraction"},
                      {"from": "kg.graph", "to": "out.value"}]})
        result = Executor(default_registry(), work_dir=tmp_path / "work").run(doc)
        assert result.ok, result.trace.problems
        summary = result.outputs["graph"].summary
        assert (summary["nodes"], summary["edges"]) == (2, 1)
        assert summary["relations"] == {"depends_on": 1}
    finally:
        unregister_backend("fake-kg-node")


def test_graph_file_removed_from_the_executor_work_folder_is_rebuilt(tmp_path: Path) -> None:
    """With no ``folder`` param the graph lives in the executor's work folder; deleting it
    there re-runs kg.build instead of serving a handle to a missing file from the cache."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "services.md").write_text(
        "The Order Service depends on the Inventory Service.\n", "utf-8")
    raw = _doc(corpus, tmp_path / "unused")
    for node in raw["nodes"]:
        if node["id"] == "kg":
            node["params"] = {"name": "t"}
    doc = from_json_dict(raw)
    executor = Executor(default_registry(), work_dir=tmp_path / "work")
    question = {"question": "What does the Order Service depend on?"}
    assert executor.run(doc, question).ok
    graph_file = tmp_path / "work" / "kg" / "t.kg.json"
    assert graph_file.is_file()

    again = executor.run(doc, question)
    assert again.trace.visits_of("kg")[0].status == "cached"

    graph_file.unlink()
    rebuilt = executor.run(doc, question)
    assert rebuilt.ok, rebuilt.trace.problems
    assert rebuilt.trace.visits_of("kg")[0].status == "done"
    assert graph_file.is_file()
    assert "Order Service -[depends on]-> Inventory Service" in rebuilt.outputs["paths"]
