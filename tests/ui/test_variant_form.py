"""Variants as a user meets them: made in a form (node, param, a value editor of the param's
type), and the canvas rows and the Properties panel show the values the variant runs with."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QDialogButtonBox, QPlainTextEdit, QSpinBox, QWidget

from modrag_studio.engine.core.document import save
from modrag_studio.ui.panels.variant_overlay import VARIANT_COLOUR
from tests.evaluation.compare_helpers import two_bm25_graph

pytestmark = pytest.mark.ui
SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def _open(window, doc, tmp_path) -> None:
    path = tmp_path / "g.json"
    save(doc, path)
    assert window.open_path(path, offer_restore=False)


def _form(window, qtbot):
    variants = window.features.variants
    variants.new_action.trigger()
    qtbot.waitUntil(lambda: variants.form is not None and variants.form.isVisible())
    return variants.form


def _ok(form, qtbot) -> None:
    qtbot.mouseClick(form.buttons.button(QDialogButtonBox.StandardButton.Ok),
                     Qt.MouseButton.LeftButton)


def _row(window, node_id: str, name: str):
    return next(r for r in window.canvas.params.rows[node_id] if r.name == name)


def _type_into(qtbot, widget, text: str) -> None:
    widget.setFocus()
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(widget, text)


def test_a_variant_made_in_the_form_is_what_the_canvas_and_properties_show(
        main_window, qtbot, tmp_path):
    _open(main_window, two_bm25_graph(), tmp_path)
    main_window.canvas.select_nodes(["plain"])
    form = _form(main_window, qtbot)
    row = form.rows[0]
    assert row.node_id() == "plain"  # the selected node comes first
    assert row.node.currentText().endswith("(plain)")
    assert row.node.currentText() != "plain  (plain)"  # named as the canvas names it
    assert row.param_name() == "top_k"  # the param shown on the node comes first
    _type_into(qtbot, form.name, "few")
    row.param.setCurrentIndex(row.param.findData("top_k"))
    spin = row.field.widget
    assert isinstance(spin, QSpinBox) and spin.value() == 5  # pre-filled with the node's value
    _type_into(qtbot, spin, "2")
    _ok(form, qtbot)
    variants = main_window.features.variants
    qtbot.waitUntil(lambda: variants.form is None)
    assert variants.active == "few"
    assert main_window.editor.document().variants[0].params == {"plain": {"top_k": 2}}
    assert main_window.editor.document().node("plain").params["top_k"] == 5  # base kept

    # the canvas row shows what runs, marked as the variant's
    top_k = _row(main_window, "plain", "top_k")
    assert top_k.text().startswith("top_k  2") and "◆" in top_k.text()
    assert top_k.brush().color().name() == VARIANT_COLOUR
    assert "base graph: 5" in top_k.toolTip()
    assert _row(main_window, "stemmed", "top_k").text() == "top_k  5"  # untouched node

    # so does the Properties panel, with the overridden param labelled
    main_window.canvas.select_nodes(["plain"])
    panel = main_window.properties
    qtbot.waitUntil(lambda: panel.node_id == "plain")
    assert panel.fields["top_k"].widget.value() == 2
    assert "◆" in panel.labels["top_k"].text()
    assert "◆" not in panel.labels["tokenizer"].text() if "tokenizer" in panel.labels else True

    # editing the overridden row on the canvas changes the variant, not the base
    main_window.canvas.center_on(["plain"])
    view = main_window.canvas.view
    zoom_in = main_window.canvas.view.findChild(QWidget, "zoomControls").buttons["in"]
    for _ in range(8):  # zoom in until the rows are drawn
        if top_k.isVisible():
            break
        qtbot.mouseClick(zoom_in, Qt.MouseButton.LeftButton)
        view.viewport().repaint()
    qtbot.waitUntil(lambda: top_k.isVisible())
    main_window.canvas.center_on(["plain"])
    box = top_k.boundingRect()  # on the value, clear of the ports at the node's edge
    point = view.mapFromScene(top_k.mapToScene(QPointF(box.width() * 0.7, box.height() / 2)))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: main_window.canvas.params.editing == ("plain", "top_k"))
    editor_spin = main_window.canvas.params.field.widget
    assert editor_spin.value() == 2
    _type_into(qtbot, editor_spin, "3")
    qtbot.keyClick(editor_spin, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: main_window.editor.document().variants[0].params
                    == {"plain": {"top_k": 3}})
    assert main_window.editor.document().node("plain").params["top_k"] == 5
    qtbot.waitUntil(lambda: _row(main_window, "plain", "top_k").text().startswith("top_k  3"))
    assert panel.fields["top_k"].widget.value() == 3

    # back to the base: plain values, no marks
    variants.switcher.setCurrentText("(base)")
    assert _row(main_window, "plain", "top_k").text() == "top_k  5"
    assert panel.fields["top_k"].widget.value() == 5 and "◆" not in panel.labels["top_k"].text()


def test_a_bad_value_names_its_field_and_keeps_what_was_typed(main_window, qtbot, tmp_path):
    _open(main_window, two_bm25_graph(), tmp_path)  # split: chunk_size 200, overlap 0
    main_window.canvas.select_nodes(["split"])
    form = _form(main_window, qtbot)
    _type_into(qtbot, form.name, "wide")
    row = form.rows[0]
    row.param.setCurrentIndex(row.param.findData("overlap"))
    _type_into(qtbot, row.field.widget, "5000")  # not below chunk_size
    _ok(form, qtbot)
    assert form.isVisible()  # still open, nothing stored, the value still there
    assert row.error.isVisible() and row.error.text().startswith("split · overlap:")
    assert "chunk_size" in row.error.text()
    assert row.field.widget.value() == 5000
    assert main_window.editor.document().variants is None
    _type_into(qtbot, form.name, "2wide")  # a name that is not an id is named too
    _type_into(qtbot, row.field.widget, "30")
    _ok(form, qtbot)
    assert form.isVisible() and form.name_error.text().startswith("Name:")
    assert form.name.text() == "2wide" and not row.error.isVisible()
    _type_into(qtbot, form.name, "wide")
    _ok(form, qtbot)
    qtbot.waitUntil(lambda: not form.isVisible())
    assert main_window.editor.document().variants[0].params == {"split": {"overlap": 30}}


def test_a_multi_line_param_is_edited_in_a_text_box_whole(main_window, qtbot):
    assert main_window.open_path(SAMPLES / "basic_rag.json", offer_restore=False)
    instruction = main_window.editor.document().node("prompt").params["feedback_instruction"]
    assert "\n" in instruction
    main_window.canvas.select_nodes(["prompt"])
    form = _form(main_window, qtbot)
    row = form.rows[0]
    row.param.setCurrentIndex(row.param.findData("feedback_instruction"))
    box = row.field.widget
    assert isinstance(box, QPlainTextEdit) and box.toPlainText() == instruction
    box.setFocus()
    box.moveCursor(box.textCursor().MoveOperation.End)
    qtbot.keyClicks(box, " Be brief.")
    _ok(form, qtbot)
    qtbot.waitUntil(lambda: not form.isVisible())
    stored = main_window.editor.document().variants[0].params["prompt"]
    assert stored == {"feedback_instruction": instruction + " Be brief."}
    # Edit Variant opens the same form on the active variant's changes
    variants = main_window.features.variants
    variants.edit_action.trigger()
    qtbot.waitUntil(lambda: variants.form is not None and variants.form.isVisible())
    again = variants.form.rows[0]
    assert again.param_name() == "feedback_instruction"
    assert again.field.widget.toPlainText() == instruction + " Be brief."
    variants.form.reject()
