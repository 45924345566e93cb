"""The run bar shows a palette-built graph's default input names and keeps typed values."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from modrag_nodes.graph_io import GraphInput, GraphOutput
from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.engine.trust.reach import trust
from modrag_studio.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, studio_settings, monkeypatch):
    monkeypatch.setenv("MODRAG_RUN_MODE", "thread")
    from modrag_studio.composition import default_registry

    made = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.features.run.controller.shutdown()


def _build_from_palette(editor: GraphEditor) -> str:
    source = editor.add_node(GraphInput.type_id)
    upper = editor.add_node("text.upper", (200, 0))
    sink = editor.add_node(GraphOutput.type_id, (400, 0))
    editor.connect(source, "value", upper, "text")
    editor.connect(upper, "text", sink, "value")
    return source


def _labels(bar) -> list[str]:
    return [w.text() for w in bar.findChildren(QLabel, "inputLabel") if w.isVisibleTo(bar)]


def test_default_names_run_and_typed_value_survives_save_as_and_rename(qtbot, window,
                                                                     tmp_path):
    in_name = GraphInput.Params.model_fields["name"].default
    out_name = GraphOutput.Params.model_fields["name"].default
    source = _build_from_palette(window.editor)
    bar, features = window.features.run.run_bar, window.features.run
    qtbot.waitUntil(lambda: list(bar.fields) == [in_name])
    assert _labels(bar) == [f"{in_name}:"]
    qtbot.keyClicks(bar.fields[in_name], "hello")
    assert window.canvas.node_item(source).name == f"Input: {in_name}"

    assert window.save_to(tmp_path / "palette.json")
    assert bar.graph_key.endswith("palette.json")
    assert bar.values() == {in_name: "hello"}

    window.editor.set_param(source, "name", "question")
    qtbot.waitUntil(lambda: list(bar.fields) == ["question"])
    assert bar.values() == {"question": "hello"}

    qtbot.keyClick(bar.fields["question"], Qt.Key.Key_Return)  # same as F5
    qtbot.waitUntil(lambda: features.controller.last_result is not None
                    and not features.controller.busy, timeout=20_000)
    result = features.controller.last_result
    assert result.ok and result.outputs == {out_name: "HELLO"}
    assert features.last_error == ""


def test_another_graph_does_not_inherit_typed_values(qtbot, window):
    _build_from_palette(window.editor)
    bar = window.features.run.run_bar
    qtbot.waitUntil(lambda: len(bar.fields) == 1)
    qtbot.keyClicks(next(iter(bar.fields.values())), "typed")
    other = GraphEditor(window.editor.registry)
    _build_from_palette(other)
    window.editor.reset(other.document())
    qtbot.waitUntil(lambda: len(bar.fields) == 1)
    assert bar.values() == {}


def test_studio_runs_a_sample_opened_from_another_folder(qtbot, window, tmp_path,
                                                         monkeypatch):
    from tests.foundations.test_graph_paths import cheap_sample

    path = cheap_sample(tmp_path / "project")
    trust(path)  # it reaches the bundled corpus outside its folder: the user trusted it before
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    window.open_path(path)
    features = window.features.run
    qtbot.waitUntil(lambda: "corpus" in features.run_bar.fields)
    assert features.run()
    qtbot.waitUntil(lambda: features.controller.last_result is not None
                    and not features.controller.busy, timeout=20_000)
    result = features.controller.last_result
    assert result.ok, [v.error for v in result.trace.visits if v.error]
    assert len(result.outputs["chunks"]) >= 3
    assert "never been saved" not in window.statusBar().currentMessage()


def test_unsaved_graph_says_where_relative_paths_go(qtbot, window):
    source = _build_from_palette(window.editor)
    window.editor.set_param(source, "name", "folder")  # a path input given a relative path
    features = window.features.run
    bar = features.run_bar
    qtbot.waitUntil(lambda: list(bar.fields) == ["folder"])
    qtbot.keyClicks(bar.fields["folder"], "docs")
    assert features.run()
    qtbot.waitUntil(lambda: features.controller.last_result is not None
                    and not features.controller.busy, timeout=20_000)
    assert "never been saved" in window.statusBar().currentMessage()
