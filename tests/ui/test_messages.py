"""Messages a user reads say what is true in the studio's words: no false "working directory"
note for a sample's copy, no command-line flags, empty required paths in Problems, the
question a run answered in History."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.document import save
from tests.engine.helpers import edge, graph, node

pytestmark = pytest.mark.ui


def _template(tmp_path):
    folder = tmp_path / "samples"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("# Pumps\nThe pump is serviced every 500 hours.\n")
    path = folder / "files.json"
    save(graph([node("corpus", "graph.input", name="corpus", default="docs"),
                node("load", "load.files", glob="*.md"),
                node("out", "graph.output", name="documents")],
               [edge("corpus.value", "load.path"), edge("load.documents", "out.value")],
               name="files"), path)
    return path


def test_a_samples_copy_runs_without_a_working_directory_alarm(main_window, qtbot, tmp_path):
    assert main_window.features.studio_ux.open_sample(_template(tmp_path))
    run = main_window.features.run
    run.run_action.trigger()
    qtbot.waitUntil(lambda: run.controller.last_result is not None
                    and not run.controller.busy, timeout=20_000)
    assert run.controller.last_result.ok
    message = main_window.statusBar().currentMessage()
    assert message.startswith("Run ok") and "working directory" not in message, message


def test_the_tune_dialog_names_its_own_fields_not_command_flags(qtbot, tmp_path):
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.ui.evaluate.tune_dialog import TuneDialog
    from tests.evaluation.tune_helpers import (
        bm25_graph,
        write_stemming_corpus,
        write_stemming_evalset,
    )

    registry = default_registry()
    dialog = TuneDialog(bm25_graph(), registry, selected=["index", "bm25"],
                        evalset_path=str(write_stemming_evalset(tmp_path / "set.jsonl")),
                        inputs={"corpus": str(write_stemming_corpus(tmp_path / "docs"))},
                        executor=Executor(registry, NodeCache(disk_dir=tmp_path / "c")),
                        on_apply=lambda _v: None)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)  # nothing ticked
    assert "tick at least one row of the search space" in dialog.status.text()
    dialog.check("bm25.top_k", "5,10")
    dialog.method.setCurrentIndex(dialog.method.findData("held-out"))
    dialog.held_out.setValue(0.1)  # too few held-out questions for the paired test
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    text = dialog.status.text()
    assert text.startswith("Cannot start:") and "Held-out share" in text
    assert "--" not in text, text


def test_an_empty_required_path_is_listed_in_problems(main_window, qtbot):
    load = main_window.editor.add_node("load.files", (0, 0))
    problems = main_window.problems
    qtbot.waitUntil(lambda: any(p.node_id == load and p.field == "path"
                                for p in problems.problems))
    row = next(problems.tree.topLevelItem(i) for i in range(problems.tree.topLevelItemCount())
               if problems.tree.topLevelItem(i).text(1) == load)
    assert row.text(2) == "path" and "fill in a value" in row.text(3)
    main_window.canvas.select_nodes([])
    rect = problems.tree.visualItemRect(row)
    qtbot.mouseClick(problems.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: main_window.canvas.selected_node_ids() == [load])
    main_window.editor.set_param(load, "path", "docs")  # filled in: gone from the list
    qtbot.waitUntil(lambda: not any(p.node_id == load and p.field == "path"
                                    for p in problems.problems))


def test_history_shows_the_question_asked_even_the_default_one(qtbot, tmp_path, monkeypatch):
    from tests.server.mcp_helpers import DOCS
    from tests.tiny_rag import tiny_rag_graph
    from tests.ui.evidence_helpers import evidence_window
    from tests.ui.test_history_ui import recorded, reply

    folder = tmp_path / "g"
    folder.mkdir()
    doc = tiny_rag_graph(folder, DOCS, backend="test-fake", name="plant faq")
    with evidence_window(qtbot, tmp_path, monkeypatch, doc, reply) as win:
        question = next(n for n in win.editor.document().nodes if n.id == "question")
        win.editor.set_param(question.id, "default", "When is LP-07 serviced?")
        history = win.features.history
        history.show()
        run = win.features.run
        qtbot.waitUntil(lambda: "question" in run.run_bar.fields)
        assert run.run_bar.fields["question"].text() == ""  # the default question is asked
        run.run_action.trigger()
        qtbot.waitUntil(lambda: not run.controller.busy
                        and run.controller.last_result is not None, timeout=20_000)
        recorded(qtbot, win, 1)
        history.refresh(force=True)
        qtbot.waitUntil(lambda: history.panel.table.rowCount() == 1)
        assert history.panel.table.item(0, 1).text() == "When is LP-07 serviced?"
