"""A graph opened without positions: painted with a quick layout, then laid out by the search."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, load, save
from modrag_studio.engine.layout.auto_layout import auto_layout, with_auto_layout

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


def _hundred_nodes() -> GraphDocument:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_ui_launch import hundred_node_graph
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return GraphDocument.model_validate(hundred_node_graph())


def _positions(doc: GraphDocument) -> dict[str, tuple[float, float]]:
    return {n: (p.x, p.y) for n, p in doc.layout.nodes.items()}


@pytest.fixture
def plain_modular(tmp_path) -> tuple[Path, GraphDocument]:
    """modular_rag without its layout block: the quick layout and the search differ on it."""
    doc = load(ROOT / "sample_graphs" / "modular_rag.json").without_layout()
    path = tmp_path / "modular.json"
    save(doc, path)
    return path, doc


def test_the_search_runs_after_the_first_paint_and_is_no_edit(main_window, qtbot,
                                                                plain_modular):
    path, doc = plain_modular
    registry = default_registry()
    quick = auto_layout(doc, registry, engine="bands")
    best = auto_layout(doc, registry)
    assert quick != best  # otherwise this test could not tell them apart
    assert main_window.open_path(path, offer_restore=False)
    assert main_window.editor.layout_due
    assert _positions(main_window.editor.document()) == quick  # what the first paint shows
    main_window.show()
    qtbot.waitUntil(lambda: not main_window.editor.layout_due, timeout=5000)
    assert _positions(main_window.editor.document()) == best
    moved = [n for n in doc.node_ids() if quick[n] != best[n]]
    assert moved
    for node_id in moved:  # the canvas moved the nodes too
        rect = main_window.canvas.node_scene_rect(node_id)
        assert (rect.left(), rect.top()) == pytest.approx(best[node_id], abs=1)
    assert not main_window.editor.dirty and not main_window.editor.can_undo
    assert not main_window.windowTitle().startswith("modular.json*")


def test_a_save_before_the_first_paint_writes_the_searched_layout(main_window, plain_modular,
                                                                  tmp_path):
    path, doc = plain_modular
    assert main_window.open_path(path, offer_restore=False)
    assert main_window.editor.layout_due
    out = tmp_path / "saved.json"
    assert main_window.save_to(out)
    saved = load(out)
    assert _positions(saved) == auto_layout(doc, default_registry())


def test_an_edit_before_the_search_keeps_the_quick_layout(main_window, plain_modular):
    path, doc = plain_modular
    assert main_window.open_path(path, offer_restore=False)
    added = main_window.editor.add_node("debug.constant", (0, 900))
    moved = main_window.editor.refine_layout()
    assert not moved and not main_window.editor.layout_due
    assert added in main_window.editor.document().layout.nodes
    quick = with_auto_layout(doc, default_registry(), engine="bands")
    assert all(main_window.editor.document().layout.nodes[n] == quick.layout.nodes[n]
               for n in doc.node_ids())


def test_a_graph_with_every_position_has_no_search_due(main_window, tmp_path):
    doc = with_auto_layout(_hundred_nodes(), default_registry(), engine="bands")
    path = tmp_path / "laid-out.json"
    save(doc, path)
    assert main_window.open_path(path, offer_restore=False)
    assert not main_window.editor.layout_due
    assert main_window.editor.document().layout == doc.layout
