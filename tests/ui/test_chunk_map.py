"""Chunk map: boundaries, overlaps, sizes in the embedder's tokens, chunks over its window."""

from __future__ import annotations

import pytest

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.embedding.tokens import embedder_window, token_counts, warn_over_window
from modrag_nodes.ingest.splitters import split_fixed
from modrag_studio.engine.core.datatypes import Document
from modrag_studio.engine.core.node import NodeContext, node_context
from modrag_studio.engine.core.resources import process_resources
from modrag_studio.ui.inspection.chunk_map import (
    OVER,
    OVERLAP,
    ChunkMapView,
    chunks_in,
    embedder_model,
)

pytestmark = pytest.mark.ui

TEXT = " ".join(f"pump{i} needs oil every {i} weeks." for i in range(120))


def test_packaged_minilm_reads_256_word_pieces():
    assert embedder_window() == 256
    short, long = token_counts(["oil pump", TEXT])
    assert short < 10 < 256 < long


def test_embedder_token_splitter_keeps_every_chunk_inside_the_window():
    doc = Document(doc_id="manual", text=TEXT)
    chunks = split_fixed(doc, 256, 32, "embedder")
    sizes = token_counts([c.text for c in chunks])
    assert len(chunks) > 2 and max(sizes) <= 256 and max(sizes) >= 200
    assert chunks[1].start < chunks[0].end  # the overlap
    assert chunks[-1].end == len(TEXT.rstrip(".")) + 1 or chunks[-1].end == len(TEXT)


def _ctx() -> NodeContext:
    return node_context("store", "store.chroma", resources=process_resources())


def test_store_warns_when_chunks_exceed_the_window():
    ctx = _ctx()
    spec = EmbedderSpec()
    assert warn_over_window(ctx, spec, ["short text", TEXT]) == 1
    assert "1 of 2 chunks" in ctx.warnings[0] and "256" in ctx.warnings[0]
    assert warn_over_window(_ctx(), spec, ["short text"]) == 0


def test_chunk_map_colours_overlap_and_marks_long_chunks_red(qtbot):
    doc = Document(doc_id="manual", text=TEXT)
    chunks = split_fixed(doc, 1600, 200, "chars")  # some chunks exceed 256 word pieces
    view = ChunkMapView(chunks, embedder_model({"embedder": EmbedderSpec()}),
                        lambda doc_id: TEXT if doc_id == "manual" else None)
    qtbot.addWidget(view)
    counts = token_counts([c.text for c in chunks])
    assert [s.tokens for s in view.sizes] == counts
    assert [s.over for s in view.sizes] == [n > 256 for n in counts]
    assert any(s.over for s in view.sizes)
    page = view.browser.toHtml().lower()
    assert OVER.lower() in page and OVERLAP.lower() in page
    assert f"{counts[0]} tok" in view.browser.toPlainText()
    assert "longer than the window of 256" in view.info.text()
    assert chunks_in({"chunks": chunks}) == chunks


def test_inspector_of_a_splitter_has_a_chunk_map(main_window, qtbot, root):
    from modrag_studio.engine.core.document import GraphDocument

    corpus = str(root / "resources" / "sample_corpus")
    main_window.editor.reset(GraphDocument.model_validate({"nodes": [
        {"id": "load", "type": "load.files", "params": {"path": corpus, "glob": "en_*.md"}},
        {"id": "split", "type": "split.fixed", "params": {"chunk_size": 2400, "overlap": 300}},
    ], "edges": [{"from": "load.documents", "to": "split.documents"}]}))
    features = main_window.features.run
    features.run()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=120_000)
    assert features.controller.last_result.ok
    features.select_node("split")
    tabs = features.inspector.outputs_tabs
    names = [tabs.tabText(i) for i in range(tabs.count())]
    assert "Chunk map" in names
    view = features.inspector.chunk_map
    assert view.sizes and all(s.tokens for s in view.sizes)
    assert view.browser.toPlainText().count("⟨#") == len(view.sizes)
    assert any(s.over for s in view.sizes)  # 2,400 characters is well over 256 word pieces
