"""Palette ranking and the Developer category; required params flagged at once."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.ui.panels.palette import DEVELOPER, rank, ranked

pytestmark = pytest.mark.ui


def test_search_ranks_names_before_descriptions_and_hides_test_nodes():
    registry = default_registry()
    found = ranked(registry, "split", developer=False)
    titles = [t.display_title().lower() for t in found]
    first_by_description = next(i for i, t in enumerate(found) if rank(t, "split") == 3)
    assert all("split" in title or "split" in t.type_id
               for title, t in zip(titles[:first_by_description], found, strict=False))
    assert [rank(t, "split") for t in found] == sorted(rank(t, "split") for t in found)
    assert not any(t.category in ("Debug", "Test") for t in ranked(registry, "", False))
    assert any(t.type_id == "debug.fail" for t in ranked(registry, "fail", developer=True))
    assert not any(t.type_id == "debug.fail" for t in ranked(registry, "fail", False))


def test_palette_developer_category_is_hidden_until_asked(main_window):
    palette = main_window.palette
    assert DEVELOPER not in palette.categories()
    palette.search.setText("mutate")
    assert palette.visible_type_ids() == []
    palette.developer_box.setChecked(True)
    assert palette.categories() == [DEVELOPER]
    assert main_window.actions["developer_nodes"].isChecked()


def test_empty_required_param_is_flagged_at_once_and_cleared_when_set(main_window, qtbot):
    editor = main_window.editor
    loader = editor.add_node("load.files", (0, 0))
    main_window.canvas.select_nodes([loader])
    field = main_window.properties.fields["path"]
    assert field.error.isHidden() is False and "required" in field.error.text()
    field.widget.setText("/tmp")
    field.widget.editingFinished.emit()
    assert editor.document().node(loader).params["path"] == "/tmp"
    assert field.error.isHidden()
    editor.undo()
    field = main_window.properties.fields["path"]
    assert field.error.isHidden() is False
    source = editor.add_node("graph.input", (-300, 0))
    editor.connect(source, "value", loader, "path")  # the input now gives the path
    main_window.canvas.select_nodes([loader])
    assert main_window.properties.fields["path"].error.isHidden()


def test_error_under_a_field_goes_once_the_value_is_fixed(main_window):
    editor = main_window.editor
    node = editor.add_node("split.recursive", (0, 0))
    main_window.canvas.select_nodes([node])
    field = main_window.properties.fields["overlap"]
    shown = field.widget.value()
    field.widget.setValue(100_000)  # larger than chunk_size: refused
    field.widget.editingFinished.emit()
    assert field.error.isHidden() is False and "overlap" in field.error.text()
    assert "overlap" not in editor.document().node(node).params
    field.widget.setValue(shown)  # back to the value the graph has
    field.widget.editingFinished.emit()
    assert field.error.isHidden()


def test_a_path_param_has_a_browse_button_that_writes_a_graph_relative_path(
        main_window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QLineEdit

    from modrag_studio.engine.core.document import save
    from modrag_studio.ui.panels.path_edit import PathEdit
    from tests.engine.helpers import graph, node

    (tmp_path / "graphs" / "docs").mkdir(parents=True)
    path = tmp_path / "graphs" / "g.json"
    save(graph([node("load", "load.files"), node("store", "store.chroma")], [], name="g"), path)
    assert main_window.open_path(path, offer_restore=False)
    main_window.canvas.select_nodes(["load"])
    field = main_window.properties.fields["path"]
    assert isinstance(field.widget, PathEdit) and field.widget.kind == "any"
    assert isinstance(main_window.properties.fields["glob"].widget, QLineEdit)  # not a path
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        lambda *a, **k: str(tmp_path / "graphs" / "docs"))
    field.widget.browse("folder")
    assert main_window.editor.document().node("load").params["path"] == "docs"
    main_window.canvas.select_nodes(["store"])
    store = main_window.properties.fields["path"].widget
    assert isinstance(store, PathEdit) and store.kind == "folder"
    outside = tmp_path / "elsewhere.md"
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(outside), ""))
    main_window.canvas.select_nodes(["load"])
    main_window.properties.fields["path"].widget.browse("file")
    assert main_window.editor.document().node("load").params["path"] == str(outside.resolve())
