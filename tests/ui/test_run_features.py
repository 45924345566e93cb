"""Run & inspect in the window: live states, cancel, inspector, streaming, overlays, exports."""

from __future__ import annotations

import json
import re

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QLabel

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.trace import Trace
from modrag_studio.ui.inspection.views import AnswerView, RecordTable
from modrag_studio.ui.present.presentation import PresentationWindow
from modrag_studio.ui.shell.main_window import MainWindow
from tests.ui.run_helpers import rag_graph, slow_graph, toy_registry

pytestmark = pytest.mark.ui
TIME = re.compile(r"\d+(\.\d+)? (ms|s)$")


@pytest.fixture
def make_window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    registry = toy_registry()
    made = []

    def make(doc: GraphDocument):
        window = MainWindow(registry, settings=settings, offer_restore=False)
        window.editor.reset(doc)
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        window.features.run.controller.shutdown()


def run_and_wait(qtbot, window, action: str = "run", timeout: int = 20_000, **kwargs) -> None:
    features = window.features.run
    assert getattr(features, action)(**kwargs) is not False
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=timeout)


def test_every_node_reaches_done_with_a_time(qtbot, make_window):
    window = make_window(rag_graph())
    run_and_wait(qtbot, window)
    features = window.features.run
    assert features.controller.last_result.ok
    for node_id in window.editor.document().node_ids():
        assert window.canvas.node_state(node_id) == "done", node_id
        assert TIME.search(features.captions[node_id]), features.captions[node_id]
    assert "8 ran" in window.statusBar().currentMessage()
    answer = features.controller.last_result.outputs["answer"].text  # said on the status bar
    assert f"Answer: {' '.join(answer.split())[:40]}" in window.statusBar().currentMessage()
    # a second run comes from the disk cache and says why
    run_and_wait(qtbot, window)
    trace = features.controller.last_result.trace
    assert window.canvas.node_state("fuse") == "cached"
    assert trace.last_visit("fuse").cache_reason == "unchanged since the last run"
    assert len(features.controller.history) == 2


def test_cancel_stops_a_slow_run_and_shows_what_completed(qtbot, make_window):
    window = make_window(slow_graph(seconds=60))
    features = window.features.run
    features.run()
    qtbot.waitUntil(lambda: window.canvas.node_state("slow") == "running", timeout=10_000)
    assert features.cancel_action.isEnabled() and not features.run_action.isEnabled()
    features.cancel_action.trigger()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=5_000)
    trace = features.controller.last_result.trace
    assert trace.status == "cancelled"
    assert window.canvas.node_state("start") == "done"
    assert window.canvas.node_state("slow") == "cancelled"
    assert window.canvas.node_state("after") == "cancelled"
    assert features.run_action.isEnabled()


def test_inspector_shows_a_sortable_filterable_chunk_table(qtbot, make_window):
    window = make_window(rag_graph())
    run_and_wait(qtbot, window)
    features = window.features.run
    features.select_node("split")
    table = features.inspector.findChild(RecordTable, "chunksTable")
    assert table is not None and table.proxy.rowCount() == 8
    table.filter.setText("vitamin")
    assert table.proxy.rowCount() == 2
    table.filter.clear()
    table.table.sortByColumn(5, Qt.SortOrder.DescendingOrder)
    lengths = [table.proxy.index(r, 5).data() for r in range(table.proxy.rowCount())]
    assert [int(x) for x in lengths] == sorted((int(x) for x in lengths), reverse=True)
    # scored chunks from the fusion node: a score table with input ranks
    features.select_node("fuse")
    scores = features.inspector.findChild(RecordTable, "scoresTable")
    assert scores is not None and scores.proxy.rowCount() == 8
    assert "words #" in scores.proxy.index(0, 6).data()


def test_streaming_text_shows_while_the_answer_is_written(qtbot, make_window):
    window = make_window(rag_graph(delay=0.02))
    features = window.features.run
    features.select_node("answer")
    seen: list[tuple[str, str]] = []

    def on_stream(node_id: str, _text: str) -> None:
        card = features.overlays.card(node_id)
        seen.append((card.content.title, card.content.body))
    features.controller.node_stream.connect(on_stream)
    run_and_wait(qtbot, window)
    assert seen and seen[0][0].startswith("Answer (streaming")
    assert seen[-1][1].startswith("Based on the sources")
    assert len(seen) < 60  # throttled: fewer signals than the ~25 tokens × slow pace allow
    final = features.overlays.card("answer").content
    assert final.title.startswith("Answer · 2 citations")


def test_overlays_follow_the_value_type_and_can_be_hidden(qtbot, make_window):
    window = make_window(rag_graph())
    run_and_wait(qtbot, window)
    overlays = window.features.run.overlays
    kinds = {node: overlays.card(node).content.kind for node in ("docs", "split", "fuse")}
    assert kinds == {"docs": "documents", "split": "chunks", "fuse": "scores"}
    assert overlays.card("question") is None  # a plain string gets no card
    card = overlays.card("fuse")
    assert card.pages() == 2 and len(card.visible_rows()) == 4
    moves = [cell.text for row in card.content.rows(0, 8) for cell in row[3:]]
    assert any("↑" in m or "↓" in m or "=" in m for m in moves)
    rect = window.canvas.node_scene_rect("fuse")
    assert card.pos().y() > rect.bottom() and abs(card.pos().x() - rect.left()) < 1
    window.features.run.overlay_action.trigger()
    assert not card.isVisible()
    window.features.run.overlay_action.trigger()
    assert card.isVisible()
    window.editor.reset(slow_graph())  # another graph: the last run's cards go
    assert overlays.cards == {} and card.scene() is None


def test_citation_opens_the_chunk_in_its_document(qtbot, make_window):
    window = make_window(rag_graph())
    run_and_wait(qtbot, window)
    inspector = window.features.run.inspector
    inspector.show_node("answer")
    view = inspector.findChild(AnswerView, "answerView")
    assert view is not None
    answer = view.answer
    view.citation_clicked.emit(answer.citations[0])
    chunk = answer.evidence[0].chunk
    start, end = inspector.highlighted
    assert inspector.source_view.toPlainText()[start:end] == chunk.text
    assert inspector.tabs.currentWidget() is inspector.source_tab
    assert chunk.doc_id in inspector.source_label.text()
    # the answer card on the canvas: its second citation row opens the second chunk
    card = window.features.run.overlays.card("answer")
    top = card._rows_top + card._row_h[0] + 1
    assert card.row_at(top) == 1
    window.features.run.open_card_row("answer", card.content.kind, card.row_at(top))
    start, end = inspector.highlighted
    assert inspector.source_view.toPlainText()[start:end] == answer.evidence[1].chunk.text


def test_failed_node_shows_its_error(qtbot, make_window):
    doc = GraphDocument.model_validate({
        "metadata": {"name": "fails"},
        "nodes": [{"id": "c", "type": "debug.constant", "params": {"value": "x"}},
                  {"id": "boom", "type": "debug.fail", "params": {"message": "disk full"}}],
        "edges": [{"from": "c.value", "to": "boom.value"}]})
    window = make_window(doc)
    run_and_wait(qtbot, window)
    assert window.canvas.node_state("boom") == "failed"
    window.features.run.select_node("boom")
    inspector = window.features.run.inspector
    assert "disk full" in inspector.error_view.toPlainText()
    assert "Traceback" in inspector.error_view.toPlainText()
    assert "boom failed: disk full" in window.statusBar().currentMessage()
    # for people: one line naming the node; the traceback only behind "Details"
    assert inspector.error_cause.text() == "Node 'boom' failed: disk full"
    assert "Traceback" not in inspector.error_cause.text()
    assert inspector.error_view.isHidden() and inspector.error_details.isVisible()
    inspector.error_details.click()
    assert not inspector.error_view.isHidden()


def test_loop_iterations_are_counted_and_pickable(qtbot, make_window):
    doc = GraphDocument.model_validate({
        "metadata": {"name": "loop"},
        "nodes": [{"id": "count", "type": "debug.counter"},
                  {"id": "gate", "type": "debug.threshold", "params": {"limit": 3}},
                  {"id": "out", "type": "graph.output", "params": {"name": "n"}}],
        "edges": [{"from": "count.count", "to": "gate.count"},
                  {"from": "gate.retry", "to": "count.count", "loop": {"max_iterations": 5}},
                  {"from": "gate.passed", "to": "out.value"}]})
    window = make_window(doc)
    run_and_wait(qtbot, window)
    features = window.features.run
    assert features.captions["count"].startswith("×3 · ")
    features.select_node("count")
    picker = features.inspector.iterations
    assert picker.count() == 3 and picker.isVisibleTo(features.inspector)
    picker.setCurrentIndex(0)
    assert features.inspector.iteration == 0


def test_run_to_and_rerun_selected_node(qtbot, make_window):
    window = make_window(rag_graph())
    features = window.features.run
    window.canvas.select_nodes(["split"])
    run_and_wait(qtbot, window, "run_to_selected")
    assert features.controller.last_result.trace.ran() == ["docs", "split"]
    run_and_wait(qtbot, window)
    window.canvas.select_nodes(["fuse"])
    run_and_wait(qtbot, window, "rerun_selected")
    trace = features.controller.last_result.trace
    assert trace.ran() == ["fuse", "answer", "out"]
    assert "split" in trace.from_cache()


def test_trace_export_timeline_and_presentation(qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    run_and_wait(qtbot, window)
    features = window.features.run
    path = features.export_trace(tmp_path / "trace.json")
    trace = Trace.model_validate_json(path.read_text(encoding="utf-8"))
    assert [v.node_id for v in trace.visits][-1] == "out"
    assert len(features.timeline.canvas.bars) == len(trace.visits)
    shown = features.present(full_screen=False)
    qtbot.addWidget(shown)
    assert isinstance(shown, PresentationWindow) and len(shown.steps) == 8
    sentences = [sentence for _, sentence in shown.steps]
    assert any("cut 4 documents into 8 chunks" in s for s in sentences)
    assert any("merged 2 rankings into 8 passages" in s for s in sentences)
    assert any("wrote the answer" in s and "citing 2 sources" in s for s in sentences)
    shown.next()
    assert shown.index == 1 and shown.current_sentence() == sentences[1]
    assert shown.highlight is not None and shown.highlight.scene() is window.canvas.scene
    shown.close()
    assert shown.highlight is None


def test_evaluation_metrics_show_on_their_nodes(qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"nodes": {"fuse.results": {"ndcg@10": 0.6523,
                                                             "recall@100": 0.91}}}))
    features = window.features.run
    metrics = features.show_evaluation(report)
    assert metrics == {"fuse": {"ndcg@10": 0.6523, "recall@100": 0.91}}
    assert features.overlays.card("fuse", "metrics").content.kind == "metrics"
    assert features.metric_captions["fuse"] == "ndcg@10 0.652 · recall@100 0.910"
    features.clear_evaluation()
    assert features.overlays.card("fuse", "metrics") is None


def test_run_bar_remembers_inputs_per_graph(qtbot, make_window):
    window = make_window(rag_graph())
    features = window.features.run
    field = features.run_bar.fields["question"]
    field.setText("does coffee raise alertness")
    run_and_wait(qtbot, window)
    assert features.controller.last_result.trace.inputs == {
        "question": "does coffee raise alertness"}
    other = make_window(rag_graph())
    assert other.features.run.run_bar.fields["question"].text() == "does coffee raise alertness"
    third = make_window(rag_graph(name="another-graph"))
    assert third.features.run.run_bar.fields["question"].text() == ""


def test_invalid_graph_reports_without_running(qtbot, make_window):
    doc = GraphDocument.model_validate({
        "metadata": {"name": "broken"},
        "nodes": [{"id": "up", "type": "text.upper"}], "edges": []})
    window = make_window(doc)
    run_and_wait(qtbot, window)
    assert "up" in window.features.run.last_error
    assert window.statusBar().currentMessage().startswith("Cannot run:")


def test_run_bar_follows_the_graph_inputs(qtbot, make_window):
    window = make_window(rag_graph())
    bar = window.features.run.run_bar
    assert list(bar.fields) == ["question"]
    window.editor.reset(slow_graph())
    assert bar.fields == {} and bar._empty.isVisibleTo(bar)
    window.editor.reset(rag_graph())
    labels = [w for w in bar.findChildren(QLabel) if w.isVisibleTo(bar) and w is not bar._empty]
    assert [w.text() for w in labels] == ["question:"]


def test_the_inspector_keeps_nothing_of_the_last_graph(qtbot, make_window):
    """The Error and Source tabs (and params, history) are emptied when another graph opens;
    a new run empties the Source tab."""
    from modrag_studio.engine.core.datatypes import Chunk
    from tests.engine.helpers import edge, graph, node

    failing = graph([node("f", "debug.fail", message="kaput"),
                     node("out", "graph.output", name="value")],
                    [edge("f.value", "out.value")], name="fails")
    window = make_window(failing)
    run_and_wait(qtbot, window)
    features = window.features.run
    inspector = features.inspector
    features.select_node("f")
    assert "kaput" in inspector.error_view.toPlainText()
    inspector.show_chunk_source(Chunk(chunk_id="d#0", doc_id="d", text="old source text"))
    assert "old source text" in inspector.source_view.toPlainText()

    run_and_wait(qtbot, window)
    assert inspector.source_view.toPlainText() == ""  # the new run's citations are its own

    inspector.show_chunk_source(Chunk(chunk_id="d#0", doc_id="d", text="old source text"))
    window.editor.reset(graph([node("c", "debug.constant", value="x"),
                               node("out", "graph.output", name="value")],
                              [edge("c.value", "out.value")], name="other"))
    assert inspector.error_view.toPlainText() == "No error."
    assert inspector.source_view.toPlainText() == ""
    index = inspector.tabs.indexOf(inspector.error_tab)
    assert inspector.tabs.tabText(index) == "Error"


def test_a_missing_input_says_where_to_type_it(qtbot, make_window):
    from tests.engine.helpers import edge, graph, node

    window = make_window(graph([node("q", "graph.input", name="question"),
                                node("out", "graph.output", name="answer")],
                               [edge("q.value", "out.value")], name="asks"))
    run_and_wait(qtbot, window)
    message = window.statusBar().currentMessage()
    assert "graph input 'question' was not given" in message
    assert "run bar" in message and "--input" not in message
