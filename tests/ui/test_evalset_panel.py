"""The evaluation-set panel: add the question just run, edit, run the set with progress off
the GUI thread, a results table, a click re-opening a question's run from the cache."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.ui.evaluate.evalset_panel import add_last_run_dialog
from modrag_studio.ui.shell.main_window import MainWindow
from tests.ui.run_helpers import rag_graph, toy_registry

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(toy_registry(), settings=settings, offer_restore=False)
    win.editor.reset(rag_graph())
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    win.features.evaluation_sets.panel.cancel()
    win.features.evaluation_sets.panel.wait(10)
    win.features.run.controller.shutdown()


def _run(qtbot, win, question: str) -> None:
    features = win.features.run
    features.run_bar.set_values({"question": question})
    assert features.run()
    qtbot.waitUntil(lambda: not features.controller.busy
                    and features.controller.last_result is not None, timeout=20_000)


def test_add_edit_run_and_open_a_question(qtbot, window, tmp_path):
    panel, path = window.features.evaluation_sets.panel, tmp_path / "set.jsonl"
    _run(qtbot, window, "what lowers blood pressure")
    dialog = add_last_run_dialog(window, panel)
    assert dialog is not None
    assert dialog.editor.question.text() == "what lowers blood pressure"
    assert dialog.chunks.count() == 2  # the answer's evidence
    dialog.path.setText(str(path))
    dialog.chunks.item(0).setCheckState(Qt.CheckState.Checked)
    expected_chunk = dialog.chunks.item(0).data(Qt.ItemDataRole.UserRole)
    dialog.editor.facts.setPlainText("exercise | walking")
    assert dialog.save()
    saved = load_evalset(path).questions
    assert [q.id for q in saved] == ["q01"]
    assert saved[0].expected_evidence.specs == [f"chunk:{expected_chunk}"]
    assert saved[0].expected_facts == [["exercise", "walking"]]
    assert panel.table.rowCount() == 1  # the panel shows the set it was saved to

    # a second, unanswerable question typed in the panel
    panel.new_question()
    panel.editor.question.setText("who founded the company")
    panel.editor.answerable.setChecked(False)
    assert panel.apply_edit()
    panel.save()
    assert [q.answerable for q in load_evalset(path).questions] == [True, False]

    shared = window.features.run.controller.executor.cache  # Run's cache: warm for the set
    held_before = shared.memory_used
    panel.parallel.setValue(2)  # both questions at once; the rows keep their order
    assert panel.run()
    assert not panel.parallel.isEnabled()  # fixed while the set runs
    qtbot.waitUntil(lambda: not panel.busy and panel.report is not None, timeout=30_000)
    assert panel.parallel.isEnabled()
    assert shared.memory_used > held_before  # the set ran on the controller's executor
    assert panel.progress.value() == 2 and panel.results.rowCount() == 2
    assert panel.results.item(0, 1).text() == "1.00"  # "exercise" is in the toy answer
    assert panel.results.item(1, 5).text() == "0.00"  # it answered instead of refusing
    assert "fact_recall 1.000" in panel.summary.text()

    show = next(a for a in window.menuBar().actions() if a.text() == "E&valuation").menu()
    next(a for a in show.actions() if a.text() == "Evaluation set panel").trigger()
    qtbot.waitUntil(lambda: panel.isVisible())
    assert window.grab().save(str(tmp_path / "evalset_panel.png"))

    # clicking the unanswerable question opens its run on the canvas, from the cache
    assert panel.open_result(1)
    features = window.features.run
    qtbot.waitUntil(lambda: not features.controller.busy and features.controller.last_result
                    .trace.inputs.get("question") == "who founded the company", timeout=20_000)
    trace = features.controller.last_result.trace
    assert "answer" in trace.from_cache() and set(trace.ran()) <= {"out"}


def test_invalid_evidence_typed_in_the_dialog_is_shown(qtbot, window, tmp_path):
    _run(qtbot, window, "what lowers blood pressure")
    dialog = add_last_run_dialog(window, window.features.evaluation_sets.panel)
    dialog.path.setText(str(tmp_path / "set.jsonl"))
    dialog.editor.evidence.setPlainText("page:3")
    assert not dialog.save()
    assert "field 'expected_evidence'" in dialog.error.text()
    assert not (tmp_path / "set.jsonl").exists()
