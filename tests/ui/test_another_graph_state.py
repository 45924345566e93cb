"""What belongs to one graph leaves the screen when another opens (the forced answers, the
evaluation set's results), expanded subgraph nodes keep the last run's state, and the
inspector's Timing tab speaks of the run going now."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.document import save
from tests.engine.helpers import edge, graph, node
from tests.generation.test_counterfactual import DOCS, _graph, _reply
from tests.ui.evidence_helpers import evidence_window, run_and_wait
from tests.ui.run_helpers import rag_graph, slow_graph
from tests.ui.test_run_features import run_and_wait as run_toy
from tests.ui.test_subgraphs_ui import HYBRID, make

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text)
    with evidence_window(qtbot, tmp_path, monkeypatch, _graph(), _reply) as win:
        yield win, tmp_path


def test_forced_answers_and_set_results_go_with_their_graph(qtbot, window, tmp_path):
    win, corpus = window
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    save(win.editor.document(), first)
    save(win.editor.document(), second)
    assert win.open_path(second, offer_restore=False)  # both in Open Recent
    assert win.open_path(first, offer_restore=False)
    debugger = win.features.evidence_debugger
    debugger.set_expected(["text:500 operating hours"])
    run_and_wait(qtbot, win, {"question": "press pump checked", "corpus": str(corpus)})
    qtbot.mouseClick(debugger.dock.force_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: debugger.counterfactual is not None, timeout=20_000)
    assert "500 operating hours" in debugger.dock.forced_answer.toPlainText()
    panel = win.features.evaluation_sets.panel
    panel.results.setRowCount(1)  # a result row of this graph's run of the set
    panel.summary.setText("answer_correct 1.000   (1 questions, 0.1 s)")

    recent = next(a for a in win.recent_menu.actions() if a.text() == str(second.resolve()))
    win._autosave_timer.stop()
    recent.trigger()  # File > Open Recent > second.json
    assert win.editor.path == second
    assert debugger.dock.forced_answer.toPlainText() == ""
    assert debugger.dock.first_answer.toPlainText() == ""
    assert panel.results.rowCount() == 0 and "answer_correct" not in panel.summary.text()


def test_expanded_subgraph_nodes_keep_the_last_runs_state(qtbot, make_window):
    window = make_window(rag_graph())
    make(window, HYBRID, title="Subgraph")
    run_toy(qtbot, window)
    window.canvas.select_nodes(["subgraph"])
    window.actions["expand_subgraph"].trigger()
    captions = window.features.run.captions
    for node_id in HYBRID:
        assert window.canvas.node_state(node_id) == "done", node_id
        assert captions.get(node_id), node_id  # "0.0 s", not blank


def test_the_timing_tab_speaks_of_the_run_going_now(qtbot, make_window):
    window = make_window(slow_graph(seconds=30.0))
    run = window.features.run
    inspector = run.inspector
    window.canvas.select_nodes(["slow"])
    qtbot.waitUntil(lambda: inspector.node_id == "slow")
    run.run_action.trigger()
    qtbot.waitUntil(lambda: "slow" in inspector.live_started, timeout=10_000)
    text = inspector.history_view.toPlainText()
    assert "No runs in this session yet" not in text
    assert text.startswith("this run (going now): running")
    run.cancel_action.trigger()
    qtbot.waitUntil(lambda: not run.controller.busy, timeout=10_000)


def test_file_new_with_a_variant_active_leaves_no_old_run_inputs(main_window, qtbot, tmp_path):
    doc = graph([node("q", "graph.input", name="question"),
                 node("say", "debug.constant", value="base words"),
                 node("out", "graph.output", name="text")],
                [edge("say.value", "out.value")], name="shout")
    path = tmp_path / "shout.json"
    save(doc, path)
    assert main_window.open_path(path, offer_restore=False)
    main_window.features.variants.new_variant("loud", ["say.value=variant words"])
    bar = main_window.features.run.run_bar
    qtbot.waitUntil(lambda: list(bar.fields) == ["question"])
    main_window.actions["new"].trigger()  # File > New (the unsaved variant: discarded)
    qtbot.waitUntil(lambda: not bar.fields)  # the old graph's inputs are gone
    assert main_window.features.variants.active is None
