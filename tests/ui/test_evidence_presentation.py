"""Presentation mode narrates the expected evidence's path: per step and, last, the verdict."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from modrag_nodes.retrieval.rerank import EmbeddingRerank
from modrag_studio.engine.evidence.narration import LOST_HERE
from modrag_studio.engine.run.trace import Trace
from modrag_studio.ui.inspection.evidence_debugger import evidence_narrator, narration_for
from modrag_studio.ui.inspection.views import RecordTable
from modrag_studio.ui.present.presentation import PresentationWindow
from tests.generation.test_counterfactual import DOCS, _graph, _reply
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui
SCREENSHOT_NAME = "evidence-presentation.png"


class LongestFirstRerank(EmbeddingRerank):
    """A reranker without a model: the longest text first (pushes pump.md down)."""

    type_id = "rerank.test_longest"
    title = "Reranker"

    def scorer(self, ctx, params):
        return (lambda query, texts: [float(len(t)) for t in texts]), "similarity"


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    graph = _graph(top_k=3, reranker=LongestFirstRerank.type_id, top_n=2)
    with evidence_window(qtbot, tmp_path, monkeypatch, graph, _reply,
                         node_types=(LongestFirstRerank,)) as win:
        run_and_wait(qtbot, win, {"question": "press pump checked", "corpus": str(corpus)})
        yield win


def test_presentation_narrates_the_evidence_per_step_and_the_verdict(qtbot, window,
                                                                     shots) -> None:
    win = window
    features = win.features.run
    run_id = features.controller.last_result.trace.run_id
    assert evidence_narrator(win, run_id) is None  # nothing declared: no evidence sentences
    plain = features.present(full_screen=False)
    qtbot.addWidget(plain)
    assert plain.evidence is None and plain.current_evidence() == ""
    assert not plain.evidence_label.isVisible()
    plain.close()

    win.features.evidence_debugger.set_expected("text:500 operating hours")  # not checked yet
    shown = features.present(full_screen=False)
    qtbot.addWidget(shown)
    shown.resize(1280, 820)
    attribution = win.features.evidence_debugger.attribution
    assert attribution is not None and attribution.first_loss == "rerank"
    assert [v.node_id for v, _ in shown.steps] == ["q", "bm25", "rerank", "gen", "out"]
    qtbot.keyClick(shown, Qt.Key.Key_A)  # the short story -> every step
    assert not shown.story_mode
    steps = [visit.node_id for visit, _ in shown.steps]
    said = {}
    for index, node_id in enumerate(steps):
        shown.go(index)
        said[node_id] = shown.current_evidence()
    assert said["bm25"] == "Keyword search (bm25) has the right passage at position 2 of 3."
    assert said["rerank"].startswith("The reranker (rerank) moved it from position 2 to 3, "
                                     "below the cut of 2.")
    assert said["rerank"].endswith(LOST_HERE)
    assert said["rerank"] == narration_for(win, "rerank")
    sentence = dict((v.node_id, text) for v, text in shown.steps)["rerank"]
    assert "kept the best 2" in sentence and "re-scored" not in sentence  # uncut not retold
    assert said["q"] == ""  # graph inputs declare nothing
    assert said["prompt"] == "The right passage never reached the prompt."
    verdict = ("In short: The right passage was found by keyword search (bm25) at position 2, "
               "but the reranker (rerank) moved it from position 2 to 3, below the cut of 2.")
    assert said[steps[-1]].endswith(verdict)
    assert verdict.removeprefix("In short: ") == narration_for(win)
    shown.go(steps.index("rerank"))
    qtbot.waitUntil(lambda: shown.evidence_label.isVisible())
    assert "#ff8a7a" in shown.evidence_label.text()  # the losing step is drawn in red
    label, bar = shown.evidence_label.geometry(), shown.counter.geometry()
    assert label.bottom() <= bar.top() and label.height() >= 2 * shown.counter.height()
    shown.grab().save(str(shots / SCREENSHOT_NAME))
    shown.close()
    # the inspector shows the reranker's whole ranking before the cut as a score table
    inspector = features.inspector
    inspector.show_node("rerank")
    tabs = inspector.outputs_tabs
    uncut = tabs.widget([tabs.tabText(i) for i in range(tabs.count())].index("uncut"))
    assert isinstance(uncut, RecordTable) and uncut.model.rowCount() == 3
    # a recorded trace of another run gets no evidence sentences
    other = Trace(run_id="elsewhere", graph_name="force_test",
                  visits=features.controller.last_result.trace.visits)
    assert evidence_narrator(win, "elsewhere") is None
    replay = PresentationWindow(other, win.canvas)
    qtbot.addWidget(replay)
    assert replay.current_evidence() == ""
    replay.close()
