"""Studio variants: create, switch, changed-param badges, diff badges and the side-by-side view."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.document import save
from tests.evaluation.compare_helpers import two_bm25_graph, write_dataset

pytestmark = pytest.mark.ui


def test_variant_diff_badges_and_side_by_side(main_window, qtbot, tmp_path):
    data = write_dataset(tmp_path / "data")
    graph = tmp_path / "g.json"
    save(two_bm25_graph(), graph)
    assert main_window.open_path(graph, offer_restore=False)
    variants = main_window.features.variants
    variants.new_variant("few", ["plain.top_k=2", "fusion.k=5"])
    switcher = variants.switcher
    assert [switcher.itemText(i) for i in range(switcher.count())] == ["(base)", "few"]
    assert switcher.currentText() == "few"
    assert {n: b.text for n, b in variants.change_badges.items()} == {
        "plain": "top_k", "fusion": "k"}
    assert main_window.editor.document().variants[0].params["plain"] == {"top_k": 2}

    assert variants.compare_with_base({"corpus": str(data / "corpus.jsonl"),
                                       "query": "lung disease oxygen smokers"})
    qtbot.waitUntil(lambda: variants.comparison is not None, timeout=60_000)
    badges = {n: (b.text, b.kind) for n, b in variants.diff_badges.items()}
    assert badges["load"] == ("same", "same") and badges["stemmed"] == ("same", "same")
    assert badges["plain"][1] == "changed" and badges["plain"][0].startswith("-")
    assert " out" in badges["plain"][0]
    assert badges["fusion"][1] == "changed"
    assert set(variants.comparison["ran_b"]) - {"corpus", "query"} == {"plain", "fusion", "out"}
    main_window.canvas.fit_all()
    shot = Path(os.environ.get("MODRAG_SCREENSHOT_DIR", tmp_path)) / "variants-diff.png"
    assert main_window.grab().save(str(shot))

    badge = variants.diff_badges["plain"]
    view = main_window.canvas.view
    point = badge.deviceTransform(view.viewportTransform()).map(
        badge.rect().center()).toPoint()  # drawn at screen size
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: variants.dialog is not None and variants.dialog.isVisible())
    assert variants.dialog.windowTitle() == "plain: base vs few"
    assert variants.dialog.sections == ["results"]

    switcher.setCurrentText("(base)")
    assert variants.active is None and not variants.change_badges and not variants.diff_badges


def test_a_bad_variant_is_refused_with_its_reason(main_window, tmp_path):
    graph = tmp_path / "g.json"
    save(two_bm25_graph(), graph)
    assert main_window.open_path(graph, offer_restore=False)
    with pytest.raises(Exception, match="no param 'kk'"):
        main_window.features.variants.new_variant("bad", ["fusion.kk=5"])
    assert main_window.editor.document().variants is None


def test_a_grid_cell_opens_as_a_variant(main_window, qtbot, tmp_path):
    graph = tmp_path / "g.json"
    save(two_bm25_graph(), graph)
    assert main_window.open_path(graph, offer_restore=False)
    grid = {"graph": "two_bm25", "dataset": "/d", "output": "fusion.results",
            "axes": {"split.chunk_size": [60, 200], "fusion": ["fuse.rrf", "fuse.convex"]},
            "cells": [{"settings": {"split.chunk_size": c, "fusion": f},
                       "metrics": {"fusion.results": {"ndcg@10": 0.5}}, "seconds": 1.0}
                      for c in (60, 200) for f in ("fuse.rrf", "fuse.convex")]}
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    dialog = main_window.features.variants.open_grid(tmp_path / "grid.json")
    assert dialog.table.rowCount() == 4 and dialog.table.item(3, 1).text() == "fuse.convex"
    dialog.open_row(3)
    doc = main_window.editor.document()
    assert doc.variants[0].name == "grid_4" and doc.variants[0].swap == {"fusion": "fuse.convex"}
    assert doc.variants[0].params == {"split": {"chunk_size": 200}}
    assert main_window.features.variants.active == "grid_4"
    variants = main_window.features.variants
    assert variants.change_badges["fusion"].text == "type fuse.rrf -> fuse.convex"


def test_run_uses_the_variant_the_toolbar_shows(main_window, qtbot, tmp_path):
    """F5 with a variant active runs the variant, the window names it, the trace records it;
    switching back to the base runs the base again."""
    from tests.engine.helpers import edge, graph, node

    path = tmp_path / "shout.json"
    save(graph([node("say", "debug.constant", value="base words"), node("up", "text.upper"),
                node("out", "graph.output", name="text")],
               [edge("say.value", "up.text"), edge("up.text", "out.value")], name="shout"), path)
    assert main_window.open_path(path, offer_restore=False)
    run, variants = main_window.features.run, main_window.features.variants
    variants.new_variant("loud", ["say.value=variant words"])
    assert variants.switcher.currentText() == "loud"
    assert "loud" in main_window.windowTitle()

    assert run.run()
    qtbot.waitUntil(lambda: not run.controller.busy, timeout=60_000)
    result = run.controller.last_result
    assert result.ok and result.outputs == {"text": "VARIANT WORDS"}
    assert result.trace.graph_name == "shout:loud"

    variants.set_active(None)
    assert "loud" not in main_window.windowTitle()
    assert run.run()
    qtbot.waitUntil(lambda: not run.controller.busy, timeout=60_000)
    assert run.controller.last_result.outputs == {"text": "BASE WORDS"}
