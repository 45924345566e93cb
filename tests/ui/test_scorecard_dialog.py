"""Evaluation > Score this folder…: through the menu and real clicks, the scorecard runs off
the GUI thread (the packaged SmolLM2 answers), its page is saved and shown, and Apply as
variant stores the tuner's significant change in the graph (one undo step)."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.document import GraphDocument
from tests.evaluation.scorecard_helpers import scorecard_graph, write_two_document_set

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def test_score_this_folder_shows_the_page_and_applies_the_change(qtbot, tmp_path, main_window):
    pytest.importorskip("modrag_nodes.llm.embedded").packaged_gguf()
    doc = GraphDocument.model_validate_json(json.dumps(scorecard_graph(tmp_path)))
    main_window.editor.reset(doc)
    menu = main_window.features.evaluation_sets.menu
    next(a for a in menu.actions() if a.text() == "Score this folder…").trigger()
    dialog = main_window.features.scorecards.dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.corpus.text() == str(tmp_path / "corpus")  # the corpus input's default
    dialog.evalset.setText(str(write_two_document_set(tmp_path / "set.jsonl")))
    page = tmp_path / "out" / "card.html"
    dialog.page_path.setText(str(page))
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert "Cannot start" in dialog.status.text() and "does not exist" in dialog.status.text()
    page.parent.mkdir()
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert not dialog.start_button.isEnabled() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled(), timeout=280_000)
    assert dialog.card is not None, dialog.status.text()
    html = page.read_text(encoding="utf-8")
    assert '<section id="funnel">' in html and "Change retrieve.top_k = 2" in html
    shown = dialog.view.toPlainText()
    assert "Where the evidence is lost" in shown and "The three worst questions" in shown
    assert f"Saved as {page}" in dialog.status.text()
    assert dialog.apply_button.isEnabled()
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    variants = main_window.editor.document().variants
    assert [v.name for v in variants] == ["scorecard"]
    assert variants[0].params == {"retrieve": {"top_k": 2}} and "p=" in variants[0].description
    assert main_window.features.variants.active == "scorecard"
    assert not dialog.apply_button.isEnabled()
    main_window.editor.undo()
    assert not main_window.editor.document().variants
    dialog.close()
