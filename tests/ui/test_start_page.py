"""Start page, graph settings, node help and the Help menu."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load
from modrag_studio.ui.inspection.node_help import example_spec, node_help_html, param_rows
from modrag_studio.ui.shell.main_window import MainWindow
from modrag_studio.ui.shell.start_page import find_samples

pytestmark = pytest.mark.ui


def test_samples_carry_their_description_and_picture(root):
    samples = find_samples()
    files = sorted(p.stem for p in (root / "sample_graphs").glob("*.json"))
    assert sorted(s.path.stem for s in samples) == files
    basic = next(s for s in samples if s.path.stem == "basic_rag")
    described = json.loads(basic.path.read_text())["metadata"]["description"]
    assert basic.summary and described.startswith(basic.summary.rstrip("…").split("  ")[0][:40])
    assert basic.picture is not None and basic.picture.name == "basic_rag.png"
    assert samples[0].path.stem == "basic_rag"


def test_start_page_opens_a_sample_and_hides(main_window, qtbot):
    ux = main_window.features.studio_ux
    qtbot.waitUntil(lambda: ux.start_page.isVisible())
    assert len(ux.start_page.cards) == len(find_samples())
    card = next(c for c in ux.start_page.cards if c.sample.path.stem == "corrective_rag")
    qtbot.waitUntil(lambda: card.picture.pixmap() is not None
                    and not card.picture.pixmap().isNull())
    qtbot.mouseClick(card, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not ux.start_page.isVisible())
    # an untitled copy: saving asks where, the shipped sample is never written
    assert main_window.editor.path is None
    doc = main_window.editor.document()
    assert [n.id for n in doc.nodes] == [n.id for n in load(card.sample.path).nodes]
    ux.show_start_page()
    assert str(card.sample.path.resolve()) not in ux.start_page.recent_entries()


def test_a_sample_copy_keeps_its_relative_paths_working(main_window, qtbot, root):
    ux = main_window.features.studio_ux
    sample = root / "sample_graphs" / "basic_rag.json"
    before = sample.read_bytes()
    assert ux.open_sample(sample)
    doc = main_window.editor.document()
    corpus = next(n for n in doc.nodes if n.id == "corpus").params["default"]
    assert Path(corpus).is_absolute() and Path(corpus).is_dir()
    assert Path(corpus) == (root / "resources" / "sample_corpus").resolve()
    assert doc.source_path is None and main_window.editor.path is None
    called = []
    main_window.save_as = lambda: called.append("save_as") or False  # the dialog, not shown
    main_window.save()
    assert called == ["save_as"] and sample.read_bytes() == before


def test_the_canvas_zoom_buttons_stay_under_the_start_page(main_window, qtbot):
    page = main_window.features.studio_ux.start_page
    qtbot.waitUntil(lambda: page.isVisible())
    view = main_window.canvas.view
    fit = next(b for b in view.findChildren(QToolButton) if b.text() == "Fit")
    centre = fit.mapTo(view, fit.rect().center())
    qtbot.waitUntil(lambda: page.isAncestorOf(view.childAt(centre))
                    or view.childAt(centre) is page)


def test_new_graph_button_leaves_an_empty_canvas(main_window, qtbot):
    page = main_window.features.studio_ux.start_page
    qtbot.waitUntil(page.isVisible)
    qtbot.mouseClick(page.new_button, Qt.MouseButton.LeftButton)
    assert not page.isVisible()
    main_window.add_node_at("graph.input", main_window.canvas.view.mapToScene(0, 0))
    assert not page.isVisible()


def test_start_page_hidden_when_a_graph_is_opened(qtbot, studio_settings, root):
    window = MainWindow(default_registry(), root / "sample_graphs" / "basic_rag.json",
                        settings=studio_settings, offer_restore=False)
    qtbot.addWidget(window)
    window.show()
    assert not window.features.studio_ux.start_page.isVisible()


def test_graph_settings_rename_and_describe_undoably(main_window, qtbot):
    panel = main_window.features.studio_ux.graph_settings
    panel.name_edit.setText("my pipeline")
    panel.description_edit.setPlainText("Ask about pumps.")
    panel.commit()
    meta = main_window.editor.document().metadata
    assert (meta.name, meta.description) == ("my pipeline", "Ask about pumps.")
    main_window.editor.undo()
    assert main_window.editor.document().metadata.name == "untitled"
    assert panel.name_edit.text() == "untitled"


def test_help_menu_and_node_help(main_window, qtbot):
    texts = [a.text() for a in main_window.menus["Help"].actions()]
    assert "&Getting Started" in texts and "&Node Help" in texts
    registry = default_registry()
    splitter = registry.get("split.recursive")
    page = node_help_html(splitter, "split")
    names = [row[0] for row in param_rows(splitter)]
    assert names and all(name in page for name in names)
    assert all(p.name in page for p in splitter.inputs + splitter.outputs)
    assert example_spec(splitter)["type"] == "split.recursive"
    node_id = main_window.add_node_at("split.recursive", main_window.canvas.view.mapToScene(0, 0))
    main_window.actions["help_node"].trigger()
    dialog = main_window.features.studio_ux.help_dialog
    qtbot.waitUntil(dialog.isVisible)
    assert "chunk" in dialog.browser.toPlainText().lower() and node_id
