"""Files: save and reload, title, recent files, autosave and restore after a crash, exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QMessageBox

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load, save
from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.ui.shell import files
from modrag_studio.ui.shell.main_window import MainWindow

REAL_ASK_UNSAVED = MainWindow.ask_unsaved  # conftest answers it for every other test

pytestmark = pytest.mark.ui


def build(editor: GraphEditor) -> None:
    with editor.macro("build"):
        q = editor.add_node("graph.input", (0, 0), params={"name": "question"})
        up = editor.add_node("text.upper", (250, 0))
        out = editor.add_node("graph.output", (500, 0))
        editor.connect(q, "value", up, "text")
        editor.connect(up, "text", out, "value")
        editor.add_group("Main", (-30, -50, 700, 200))
        editor.add_note("a note", (0, 200))


def answer_dialog(button: QMessageBox.StandardButton, seen: list[str]) -> None:
    """Click ``button`` on the modal question box as soon as it is shown."""
    def click() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(box.text())
            box.button(button).click()
        else:
            QTimer.singleShot(20, click)
    QTimer.singleShot(20, click)


def test_save_reload_equal_graph_title_and_recent(main_window, tmp_path, qtbot, studio_settings):
    build(main_window.editor)
    assert main_window.windowTitle().startswith("untitled*")
    path = tmp_path / "g.json"
    assert main_window.save_to(path)
    assert main_window.windowTitle().startswith("g.json —")
    doc = main_window.editor.document()
    assert load(path) == doc
    data = json.loads(path.read_text())
    assert all(set(n) <= {"id", "type", "version", "title", "params"} for n in data["nodes"])
    assert set(data["layout"]) == {"nodes", "groups", "notes"}
    assert not list(tmp_path.glob(".g.json.*.tmp"))  # the temporary file was renamed
    assert main_window.recent_files() == [str(path.resolve())]
    other = MainWindow(default_registry(), path, settings=studio_settings, offer_restore=False)
    qtbot.addWidget(other)
    assert other.editor.document() == doc and not other.editor.dirty
    assert other.canvas.canvas_edges() == main_window.canvas.canvas_edges()
    assert len(other.canvas.node_ids()) == 3
    main_window.editor.add_node("debug.constant")
    assert main_window.windowTitle().startswith("g.json*")


def test_graph_without_layout_is_laid_out(main_window, tmp_path):
    path = tmp_path / "plain.json"
    doc = GraphEditor(default_registry())
    build(doc)
    save(doc.document().without_layout(), path)
    assert main_window.open_path(path)
    layout = main_window.editor.document().layout
    xs = [layout.nodes[n].x for n in main_window.editor.document().node_ids()]
    assert xs == sorted(xs) and len(set(xs)) == 3


def test_autosave_and_restore_after_a_crash(main_window, tmp_path, qtbot, studio_settings):
    path = tmp_path / "g.json"
    build(main_window.editor)
    main_window.save_to(path)
    assert main_window.autosave_now() is None  # nothing unsaved
    main_window.editor.add_node("debug.constant", (0, 300))
    side = main_window.autosave_now()
    assert side == path.with_name("g.json.autosave") and side.is_file()
    edited = main_window.editor.document()
    crashed = tmp_path / "left-by-crash.autosave"
    shutil.copy(side, crashed)  # the window below closes cleanly at teardown
    seen: list[str] = []
    answer_dialog(QMessageBox.StandardButton.Yes, seen)
    again = MainWindow(default_registry(), path, settings=studio_settings)
    qtbot.addWidget(again)
    assert seen and "Restore the unsaved changes" in seen[0]
    assert again.editor.document() == edited
    assert again.editor.dirty and again.editor.path == path
    assert again.windowTitle().startswith("g.json*")
    # saving forgets the side file; declining a restore deletes it
    again.save_to(path)
    assert not side.exists()
    shutil.copy(crashed, side)
    answer_dialog(QMessageBox.StandardButton.No, seen)
    third = MainWindow(default_registry(), path, settings=studio_settings)
    qtbot.addWidget(third)
    assert len(seen) == 2 and not side.exists()
    assert third.editor.document() == load(path)


def test_untitled_autosave_of_a_dead_process_is_offered(qtbot, studio_settings):
    editor = GraphEditor(default_registry())
    build(editor)
    orphan = files.autosave_path_for(None, pid=2**22 + 12345)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    save(editor.document(), orphan)
    seen: list[str] = []
    answer_dialog(QMessageBox.StandardButton.Yes, seen)
    window = MainWindow(default_registry(), settings=studio_settings)
    qtbot.addWidget(window)
    assert seen and window.editor.document() == editor.document()
    assert window.editor.path is None and window.editor.dirty
    assert not orphan.exists()
    own = window.autosave_now()
    assert own == files.autosave_path_for(None) and own.is_file()
    assert files.find_restorable(None) is None  # our own, living process: not offered
    window.close()
    assert not own.exists()


def test_exports(main_window, tmp_path):
    build(main_window.editor)
    main_window.canvas.fit_all()
    out = Path(tmp_path)
    png = main_window.export("png", out / "g.png")
    image = QImage(str(png))
    assert not image.isNull() and image.width() > 600 and image.height() > 200
    svg = main_window.export("svg", out / "g.svg").read_text()
    assert "<svg" in svg and "Input: question" in svg and "Output: answer" in svg and "Main" in svg
    assert load(main_window.export("json", out / "g.json")) == main_window.editor.document()
    dot = main_window.export("dot", out / "g.dot").read_text()
    assert dot.startswith("digraph") and "input_1:out_value:e -> upper_1:in_text:w" in dot
    mermaid = main_window.export("mermaid", out / "g.mmd").read_text()
    assert mermaid.startswith("flowchart LR") and mermaid.count("-->") == 2
    if shutil.which("dot"):
        gsvg = main_window.export("graphviz-svg", out / "gv.svg").read_text()
        assert "</svg>" in gsvg and "Upper case" in gsvg
    assert main_window.export("nope", out / "x") is None
    assert "unknown export kind" in main_window.last_error


def test_open_broken_file_reports_the_file(main_window, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    before = main_window.editor.document()
    assert not main_window.open_path(bad)
    assert str(bad) in main_window.last_error and "invalid JSON" in main_window.last_error
    assert main_window.editor.document() is before


def test_discarding_changes_leaves_no_autosave_to_restore(qtbot, tmp_path, monkeypatch):
    """Discard in the "unsaved changes" question removes the autosave, so opening the file
    again asks nothing ("did not close cleanly" was shown for changes the user threw away)."""
    from PySide6.QtWidgets import QMessageBox

    from modrag_studio.engine.core.document import save
    from tests.engine.helpers import graph, node

    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))
    path, other = tmp_path / "g.json", tmp_path / "other.json"
    save(graph([node("c", "debug.constant", value="a")], [], name="g"), path)
    save(graph([node("c", "debug.constant", value="b")], [], name="other"), other)
    window = MainWindow(default_registry(), offer_restore=False)
    qtbot.addWidget(window)
    assert window.open_path(path, offer_restore=False)
    window.editor.set_param("c", "value", "changed")
    autosave = window.autosave_now()
    assert autosave is not None and autosave.is_file()
    monkeypatch.setattr(MainWindow, "ask_unsaved", REAL_ASK_UNSAVED)
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: QMessageBox.StandardButton.Discard)
    assert window.ask_unsaved()
    assert window.open_path(other, offer_restore=False)
    assert not autosave.exists()
    assert files.find_restorable(path) is None


def test_window_and_dock_sizes_are_remembered(qtbot, studio_settings):
    first = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(first)
    first.show()
    first.resize(760, 560)
    first.resizeDocks([first.docks["properties"]], [400], Qt.Orientation.Horizontal)
    first.docks["problems"].hide()
    qtbot.waitUntil(lambda: first.docks["problems"].isHidden()  # laid out as asked
                    and abs(first.docks["properties"].width() - 400) <= 4)
    width, size = first.docks["properties"].width(), (first.width(), first.height())
    assert size != (1400, 900)
    first.close()  # closing remembers the layout

    second = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(second)
    second.show()
    qtbot.waitUntil(lambda: (second.width(), second.height()) == size)
    assert abs(second.docks["properties"].width() - width) <= 4
    assert second.docks["problems"].isHidden()


def test_a_window_made_without_settings_keeps_them_in_the_test_folder(tmp_path):
    """The tests never write the user's settings (their graphs showed up as recent files)."""
    from modrag_studio.ui.shell.main_window import default_settings

    assert default_settings().fileName().startswith(str(tmp_path))
