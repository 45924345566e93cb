"""Key params on the canvas (shown on nodes, edited in place, undoable) and the node detail
view (inputs | params | outputs of the last run)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QSpinBox

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.run.executor import Executor

pytestmark = pytest.mark.ui


def _rows(window, node_id: str) -> list[str]:
    return window.canvas.params.row_texts(node_id)


def _row(window, node_id: str, name: str):
    return next(r for r in window.canvas.params.rows[node_id] if r.name == name)


def test_key_params_are_drawn_on_the_node_with_defaults_and_own_values(main_window):
    editor = main_window.editor
    plain = editor.add_node("retrieve.vector", (0, 0))
    fused = editor.add_node("fuse.rrf", (300, 0), params={"top_k": 5})
    assert _rows(main_window, plain) == ["top_k  10"]  # the default
    assert _rows(main_window, fused) == ["top_k  5", "k  60"]
    upper = editor.add_node("text.upper", (0, 300))  # no key params: no rows
    assert _rows(main_window, upper) == []
    # the node is taller by its rows, and the rows sit inside it, under the ports
    item = main_window.canvas.node_item(fused)
    rows = main_window.canvas.params.rows[fused]
    bottom = max(r.mapToParent(r.boundingRect().bottomLeft()).y() for r in rows)
    assert bottom <= item.boundingRect().bottom() + 1
    ports_bottom = max(p.mapToParent(p.boundingRect().bottomLeft()).y() for p in item.inputs)
    assert min(r.pos().y() for r in rows) >= ports_bottom - 1


def test_an_inline_spin_box_edit_is_one_undo_step(main_window, qtbot):
    editor = main_window.editor
    node = editor.add_node("retrieve.vector", (0, 0))
    main_window.show()
    field = main_window.canvas.params.edit(node, _row(main_window, node, "top_k"))
    assert isinstance(field.widget, QSpinBox) and field.widget.value() == 10
    assert field.widget.minimum() == 1 and field.widget.maximum() == 10000
    field.widget.setValue(7)
    field.widget.editingFinished.emit()
    assert editor.document().node(node).params["top_k"] == 7
    assert _rows(main_window, node) == ["top_k  7"]
    assert editor.undo_label() == f"set {node}.top_k"
    qtbot.waitUntil(lambda: main_window.canvas.params.editing is None)  # closed after commit
    editor.undo()
    assert "top_k" not in editor.document().node(node).params
    assert _rows(main_window, node) == ["top_k  10"]
    editor.redo()
    assert _rows(main_window, node) == ["top_k  7"]


def test_a_drop_down_edit_and_escape(main_window, qtbot):
    editor = main_window.editor
    node = editor.add_node("llm.model", (0, 0))
    main_window.show()
    rows = main_window.canvas.params
    field = rows.edit(node, _row(main_window, node, "backend"))
    box = field.widget
    assert isinstance(box, QComboBox)
    choices = [box.itemData(i) for i in range(box.count())]
    assert {"embedded", "ollama", "openai"} <= set(choices)  # tests may register more
    box.hidePopup()
    QTest.keyClick(box, Qt.Key.Key_Escape)  # closes, nothing changes
    assert rows.editing is None and "backend" not in editor.document().node(node).params
    field = rows.edit(node, _row(main_window, node, "backend"))
    ollama = field.widget.findData("ollama")
    field.widget.setCurrentIndex(ollama)
    field.widget.activated.emit(ollama)
    assert editor.document().node(node).params["backend"] == "ollama"
    assert _rows(main_window, node)[0] == "backend  ollama"
    editor.undo()
    assert _rows(main_window, node)[0] == "backend  embedded"


def test_a_value_the_params_refuse_changes_nothing_and_says_why(main_window):
    editor = main_window.editor
    node = editor.add_node("split.recursive", (0, 0))
    said: list[str] = []
    main_window.canvas.on_message.append(said.append)
    field = main_window.canvas.params.edit(node, _row(main_window, node, "overlap"))
    field.widget.setValue(5000)  # not below chunk_size (1000)
    field.widget.editingFinished.emit()
    assert "overlap" not in editor.document().node(node).params
    assert not editor.can_undo or editor.undo_label() != f"set {node}.overlap"
    assert any("overlap" in m and "chunk_size" in m for m in said), said
    assert _rows(main_window, node) == ["chunk_size  1000", "overlap  100"]


def test_zoomed_out_nodes_show_their_key_params_in_large_type(main_window):
    editor = main_window.editor
    node = editor.add_node("retrieve.vector", (0, 0), params={"top_k": 25})
    canvas = main_window.canvas
    canvas.decor.set_zoomed_out(node, True)
    detail = canvas.decor.states[node].detail
    assert detail.isVisible() and "top_k" in detail.toPlainText()
    assert "25" in detail.toPlainText()
    editor.set_param(node, "top_k", 3)  # an edit while zoomed out redraws the face
    assert "top_k\xa03" in detail.toPlainText() or "top_k 3" in detail.toPlainText()


def test_every_key_param_is_a_param_of_its_type_and_at_most_three():
    for node_type in default_registry():
        assert len(node_type.key_params) <= 3, node_type.type_id
        for name in node_type.key_params:
            assert name in node_type.Params.model_fields, (node_type.type_id, name)


def test_the_detail_view_shows_inputs_params_and_outputs_of_the_last_run(main_window):
    editor = main_window.editor
    q = editor.add_node("graph.input", (0, 0), params={"name": "question"})
    up = editor.add_node("text.upper", (250, 0))
    out = editor.add_node("graph.output", (500, 0), params={"name": "answer"})
    editor.connect(q, "value", up, "text")
    editor.connect(up, "text", out, "value")
    details = main_window.features.node_details
    before = details.open(up)  # not run yet: says so, params still editable
    assert before.input_ports() == ["—"] and before.output_ports() == ["—"]
    before.close()
    result = Executor(default_registry(), cache=NodeCache()).run(editor.document(),
                                                                  {"question": "hello"})
    main_window.features.run.inspector.set_run(result)
    main_window.canvas.select_nodes([up])
    details.open_selected()
    dialog = details.dialog
    assert dialog.input_ports() == ["text"] and dialog.output_ports() == ["text"]
    shown = dialog.outputs.widget(0)
    text = shown.toPlainText() if hasattr(shown, "toPlainText") else shown.findChild(
        type(shown)).toPlainText()
    assert "HELLO" in text
    assert dialog.params.node_id == up
    assert "done" in dialog.summary.text()


def test_a_double_click_on_a_node_opens_its_details(main_window):
    editor = main_window.editor
    node = editor.add_node("retrieve.vector", (0, 0))
    item = main_window.canvas.node_item(node)
    main_window.canvas.view.node_double_clicked.emit(item.id)  # what NodeGraphQt's item sends
    dialog = main_window.features.node_details.dialog
    assert dialog is not None and dialog.isVisible() and dialog.node_id == node
    assert "not run yet" in dialog.summary.text()
