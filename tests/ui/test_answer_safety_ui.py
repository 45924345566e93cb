"""A graph built from the palette shows its answer unchecked: the Problems panel says so on the
parser, Edit > Make Answers Safe adds the grounding check, the refusal and the selector in one
undoable edit, and the warning goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from modrag_studio.composition import default_registry
from modrag_studio.engine.evidence.safety import UNCHECKED
from modrag_studio.ui.shell.main_window import MainWindow
from tests.tiny_rag import tiny_rag_graph

pytestmark = pytest.mark.ui


@pytest.fixture
def palette_file(tmp_path: Path) -> Path:
    data = tiny_rag_graph(tmp_path, {"pumps.md": "LP-07 is serviced every 500 hours.\n"},
                          backend="embedded")
    path = tmp_path / "palette.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def studio(qtbot, tmp_path, palette_file):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(default_registry(), path=palette_file, settings=settings,
                        offer_restore=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.features.run.controller.shutdown()


def _unchecked(window) -> list:
    return [p for p in window.problems.problems if p.code == UNCHECKED]


def test_make_answers_safe_from_the_edit_menu(qtbot, studio) -> None:
    qtbot.waitUntil(lambda: bool(_unchecked(studio)))
    assert [p.node_id for p in _unchecked(studio)] == ["parse"]
    rows = [studio.problems.tree.topLevelItem(i).text(3)
            for i in range(studio.problems.tree.topLevelItemCount())]
    assert any("Edit > Make Answers Safe" in row for row in rows)
    action = studio.actions["make_answers_safe"]
    assert action in studio.menus["Edit"].actions()
    before = set(studio.editor.document().node_ids())
    action.trigger()
    added = set(studio.editor.document().node_ids()) - before
    assert added == {"ground", "refuse", "select"}
    studio.problems.refresh()
    assert _unchecked(studio) == []
    assert "ground" in studio.canvas._nodes  # drawn on the canvas
    studio.actions["undo"].trigger()
    assert set(studio.editor.document().node_ids()) == before
    action.trigger()
    action.trigger()  # nothing left to do: said so, nothing added twice
    assert "already passes a check" in studio.statusBar().currentMessage()
