"""The History dock and the playground: runs recorded from the studio, shown as they ran after
the graph changed, compared, set as baseline, added to an evaluation set; a follow-up
question in the playground reaching the prompt with the earlier turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.ui.history.run_view import ReadOnlyEditor
from tests.server.mcp_helpers import DOCS
from tests.tiny_rag import tiny_rag_graph
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui
PROMPTS: list[list[ChatMessage]] = []


def reply(messages: list[ChatMessage]) -> str:
    PROMPTS.append(list(messages))
    text = messages[-1].content
    if "who services" in text.lower():  # answerable only with the earlier turn
        earlier = any("500 hours" in m.content for m in messages[:-1] if m.role != "system")
        return ("The pump is serviced every 500 operating hours; the evidence names no "
                "team [1]." if earlier else "The evidence does not say.")
    if "LP-07" in text:
        return "LP-07 is serviced every 500 hours [1]."
    if "canteen" in text.lower():
        return "The canteen opens at 06:00 [1]."
    return "The evidence does not say."


def graph(tmp_path: Path, top_k: int = 1) -> dict:
    folder = tmp_path / f"g{top_k}"
    folder.mkdir(exist_ok=True)
    return tiny_rag_graph(folder, DOCS, backend="test-fake", history=True, top_k=top_k,
                          name="plant faq")


def recorded(qtbot, win, count: int) -> None:
    store = win.features.history.store
    qtbot.waitUntil(lambda: len(store.runs()) >= count, timeout=20_000)


def test_studio_runs_are_recorded_and_shown_as_they_ran_after_the_graph_changed(
        qtbot, tmp_path, monkeypatch, shots):
    with evidence_window(qtbot, tmp_path, monkeypatch, graph(tmp_path), reply) as win:
        history = win.features.history
        assert history.panel.graph is None  # not read at start-up: the dock is behind a tab
        run_and_wait(qtbot, win, {"question": "When is LP-07 serviced?"})
        recorded(qtbot, win, 1)
        record = history.store.runs()[0]
        assert record.origin == "studio" and record.status == "ok"
        assert record.answer.startswith("LP-07 is serviced every 500 hours")
        history.show()
        assert history.panel.table.rowCount() == 1
        win.editor.set_param("retrieve", "top_k", 3)
        win.editor.remove_nodes(["history"])
        history.panel.select(record.run_id)
        view = history.show_run(record.run_id)
        assert view is not None
        assert isinstance(view.editor, ReadOnlyEditor)
        assert view.editor.document().node("retrieve").params["top_k"] == 1
        assert "history" in view.editor.document().node_ids()  # the graph as it ran
        banner = view.banner.text()
        assert "nodes removed: history" in banner and "retrieve (top_k)" in banner
        assert view.mirror.captions.run["parse"]  # the run's captions on its nodes
        assert "parse" in view.overlays.cards  # and its output cards
        said = view.statusBar().currentMessage()
        assert said.startswith("Run ok") and "working directory" not in said, said
        view.editor.remove_nodes(["parse"])  # read-only: the edit is refused
        assert "parse" in view.editor.document().node_ids() and view.editor.refused
        view.inspector.show_node("parse")
        assert view.inspector.result is view.stored.result
        assert view.inspector.node_id == "parse"
        qtbot.waitUntil(view.isVisible)
        view.grab().save(str(shots / "history_run_view_changed.png"))
        view.activateWindow()
        qtbot.waitUntil(view.isActiveWindow)
        view.canvas.view.setFocus()
        qtbot.keyClick(view.canvas.view, Qt.Key.Key_Escape)  # Esc closes it, as Ctrl+W does
        qtbot.waitUntil(lambda: not view.isVisible())
        qtbot.waitUntil(lambda: not history.views, timeout=5_000)  # closed: freed


def test_two_runs_compared_baseline_deltas_and_add_to_evaluation_set(
        qtbot, tmp_path, monkeypatch, shots):
    with evidence_window(qtbot, tmp_path, monkeypatch, graph(tmp_path), reply) as win:
        history = win.features.history
        history.show()
        run_and_wait(qtbot, win, {"question": "When is LP-07 serviced?"})
        recorded(qtbot, win, 1)
        first = history.store.runs()[0]
        history.panel.select(first.run_id)
        history.panel.baseline_button.click()
        assert history.store.baseline(history.graph()).run_id == first.run_id
        run_and_wait(qtbot, win, {"question": "When does the canteen open?"})
        recorded(qtbot, win, 2)
        second = history.store.runs()[0]
        assert "vs baseline" in win.statusBar().currentMessage()
        panel = history.panel
        assert panel.table.item(0, 5).text().endswith("answer changed")
        assert panel.table.item(1, 0).text().startswith("★")
        panel.text.setText("canteen")
        assert panel.table.rowCount() == 1 and panel.records[0].run_id == second.run_id
        panel.text.setText("")
        panel.select(first.run_id, second.run_id)
        assert panel.compare_button.isEnabled()
        panel.compare_button.click()
        view = history.views[-1]
        assert view.stored.record.run_id == second.run_id
        assert view.badges["retrieve"].text != "same"
        assert view.badges["load"].text == "same"
        assert "answer differs" in panel.details.toPlainText()
        dialog = view.open_node("parse")
        assert dialog is not None and "parse" in dialog.windowTitle()
        panel.resize(1100, 420)
        win.resize(1500, 900)
        history.show()
        qtbot.waitUntil(lambda: win.width() == 1500 and history.dock.isVisible())
        view.resize(1200, 700)
        qtbot.waitUntil(lambda: view.width() == 1200)
        win.grab().save(str(shots / "history_panel_compare.png"))
        view.grab().save(str(shots / "history_run_view_compare.png"))
        dialog.close()
        add = history.add_to_evaluation_set(first.run_id)
        assert add is not None
        assert add.editor.question.text() == "When is LP-07 serviced?"
        assert add.chunks.count() >= 1
        add.path.setText(str(tmp_path / "set.jsonl"))
        add.chunks.item(0).setCheckState(add.chunks.item(0).checkState().Checked)
        assert add.save()
        saved = json.loads((tmp_path / "set.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert saved["question"] == "When is LP-07 serviced?"
        for open_view in list(history.views):
            open_view.close()


def test_compare_with_current_runs_the_current_graph_on_the_runs_question(
        qtbot, tmp_path, monkeypatch):
    with evidence_window(qtbot, tmp_path, monkeypatch, graph(tmp_path), reply) as win:
        history = win.features.history
        run_and_wait(qtbot, win, {"question": "When is LP-07 serviced?"})
        recorded(qtbot, win, 1)
        first = history.store.runs()[0]
        win.editor.set_param("prompt", "max_evidence", 0)
        assert history.compare_with_current(first.run_id)
        recorded(qtbot, win, 2)
        qtbot.waitUntil(lambda: history.last_comparison is not None, timeout=10_000)
        nodes = history.last_comparison["nodes"]
        assert nodes["prompt"]["status"] == "changed"  # no evidence block now
        assert nodes["retrieve"]["status"] == "same"
        newest = history.store.runs()[0]
        assert newest.question == first.question and newest.run_id != first.run_id
        for open_view in list(history.views):
            open_view.close()


def test_playground_follow_up_question_sees_the_earlier_turn(qtbot, tmp_path, monkeypatch,
                                                             shots):
    PROMPTS.clear()
    with evidence_window(qtbot, tmp_path, monkeypatch, graph(tmp_path), reply) as win:
        playground = win.features.playground.panel
        win.features.playground.show()
        controller = win.features.run.controller
        assert playground.send("When is LP-07 serviced?")
        qtbot.waitUntil(lambda: not playground.pending, timeout=20_000)
        assert playground.turns[0].status == "ok"
        assert playground.send("And who services LP-07 then?")
        qtbot.waitUntil(lambda: not playground.pending and not controller.busy,
                        timeout=20_000)
        second = playground.turns[1]
        assert second.text.startswith("The pump is serviced every 500 operating hours")
        last_prompt = PROMPTS[-1]
        assert [m.role for m in last_prompt] == ["system", "user", "assistant", "user"]
        assert last_prompt[1].content == "When is LP-07 serviced?"
        assert last_prompt[2].content.startswith("LP-07 is serviced every 500 hours")
        runs = win.features.history.store.runs(conversation=playground.conversation)
        assert sorted(r.turn for r in runs) == [0, 1]
        assert {r.origin for r in runs} == {"playground"}
        assert "cite:1:0" in playground.transcript.toHtml()
        assert playground.open_link(__import__("PySide6.QtCore").QtCore.QUrl("cite:1:0"))
        assert "maint.md" in win.features.run.inspector.source_label.text()
        win.resize(1500, 900)
        qtbot.waitUntil(lambda: win.width() == 1500)
        win.grab().save(str(shots / "playground_follow_up.png"))
        saved = playground.conversation
        playground.new_conversation()
        assert playground.turns == []
        playground.open_conversation(saved)
        assert [t.question for t in playground.turns] == ["When is LP-07 serviced?",
                                                          "And who services LP-07 then?"]
        assert playground.turns[1].answer is not None


def test_a_graph_without_a_question_input_is_named_in_the_playground(
        qtbot, tmp_path, monkeypatch):
    data = {"schema_version": 1, "metadata": {"name": "shout"},
            "nodes": [{"id": "a", "type": "graph.input", "params": {"name": "alpha"}},
                      {"id": "b", "type": "graph.input", "params": {"name": "beta"}}],
            "edges": []}
    with evidence_window(qtbot, tmp_path, monkeypatch, data, reply) as win:
        playground = win.features.playground.panel
        assert not playground.send("hello")
        assert "no question input" in playground.notice.text()
        assert from_json_dict(data).node_ids() == ["a", "b"]
