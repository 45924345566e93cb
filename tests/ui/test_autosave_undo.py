"""Undo back to the saved graph leaves no autosave behind (no false "did not close cleanly")."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import save
from modrag_studio.ui.shell import files
from modrag_studio.ui.shell.main_window import MainWindow
from tests.engine.helpers import graph, node

pytestmark = pytest.mark.ui


def test_undo_to_the_saved_graph_then_open_another_leaves_nothing_to_restore(
        qtbot, tmp_path, monkeypatch, studio_settings):
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))
    path, other = tmp_path / "g.json", tmp_path / "other.json"
    save(graph([node("c", "debug.constant", value="a")], [], name="g"), path)
    save(graph([node("c", "debug.constant", value="b")], [], name="other"), other)
    window = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(window)
    assert window.open_path(other, offer_restore=False)  # both in Open Recent
    assert window.open_path(path, offer_restore=False)
    window.editor.set_param("c", "value", "changed")
    window._autosave_timer.timeout.emit()  # the autosave timer fires
    side = files.autosave_path_for(path)
    assert side.is_file() and window.windowTitle().startswith("g.json*")
    window.actions["undo"].trigger()  # back to the saved graph: the "*" goes
    assert window.windowTitle().startswith("g.json ")
    recent = next(a for a in window.recent_menu.actions() if a.text() == str(other.resolve()))
    recent.trigger()  # File > Open Recent > other.json
    assert window.editor.path == other
    assert not side.exists()
    asked: list[str] = []  # the next launch asks nothing
    monkeypatch.setattr(MainWindow, "ask_restore", lambda self, p: asked.append(str(p)))
    again = MainWindow(default_registry(), path, settings=studio_settings)
    qtbot.addWidget(again)
    assert asked == [] and not again.editor.dirty
