"""Presentation mode narrates the expected evidence's path: per step and, last, the verdict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from modrag_nodes import register_builtin_nodes
from modrag_nodes.llm.client import register_backend, unregister_backend
from modrag_nodes.retrieval.rerank import EmbeddingRerank
from modrag_studio.engine.attribution import LOST_HERE
from modrag_studio.engine.document import from_json_dict
from modrag_studio.engine.registry import NodeRegistry
from modrag_studio.engine.trace import Trace
from modrag_studio.ui.evidence_debugger import evidence_narrator, narration_for
from modrag_studio.ui.main_window import MainWindow
from modrag_studio.ui.presentation import PresentationWindow
from tests.generation.conftest import ScriptedBackend
from tests.generation.test_counterfactual import DOCS, _reply

pytestmark = pytest.mark.ui
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / \
    "evidence-presentation.png"


class LongestFirstRerank(EmbeddingRerank):
    """A reranker without a model: the longest text first (pushes pump.md down)."""

    type_id = "rerank.test_longest"
    title = "Reranker"

    def scorer(self, ctx, params):
        return (lambda query, texts: [float(len(t)) for t in texts]), "similarity"


def rerank_graph() -> dict:
    def n(node_id: str, type_id: str, **params) -> dict:
        return {"id": node_id, "type": type_id, "params": params}

    return {"schema_version": 1, "metadata": {"name": "rerank_loss"},
            "nodes": [n("corpus", "graph.input", name="corpus"),
                      n("load", "load.files"),
                      n("split", "split.recursive", chunk_size=200),
                      n("index", "bm25.index"),
                      n("q", "graph.input", name="question"),
                      n("bm25", "retrieve.bm25", top_k=3),
                      n("rerank", "rerank.test_longest", top_n=2),
                      n("llm", "llm.model", backend="test-fake"),
                      n("prompt", "prompt.build"), n("gen", "llm.generate"),
                      n("parse", "parse.answer"),
                      n("out", "graph.output", name="answer")],
            "edges": [{"from": a, "to": b} for a, b in [
                ("corpus.value", "load.path"), ("load.documents", "split.documents"),
                ("split.chunks", "index.chunks"), ("index.index", "bm25.index"),
                ("q.value", "bm25.query"), ("q.value", "rerank.query"),
                ("bm25.results", "rerank.candidates"), ("q.value", "prompt.query"),
                ("rerank.results", "prompt.evidence"), ("prompt.prompt", "gen.prompt"),
                ("llm.llm", "gen.llm"), ("gen.answer", "parse.answer"),
                ("prompt.prompt", "parse.prompt"), ("parse.answer", "out.value")]]}


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    backend = ScriptedBackend()
    backend.respond_with(_reply)
    register_backend("test-fake", lambda: backend)
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(LongestFirstRerank)
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(registry, settings=settings, offer_restore=False)
    win.editor.reset(from_json_dict(rerank_graph()))
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    features = win.run_features
    assert features.controller.run(features.document(), {"question": "press pump checked",
                                                         "corpus": str(corpus)})
    qtbot.waitUntil(lambda: not features.controller.busy
                    and features.controller.last_result is not None, timeout=20_000)
    yield win
    features.controller.shutdown()
    unregister_backend("test-fake")


def test_presentation_narrates_the_evidence_per_step_and_the_verdict(qtbot, window) -> None:
    win = window
    features = win.run_features
    run_id = features.controller.last_result.trace.run_id
    assert evidence_narrator(win, run_id) is None  # nothing declared: no evidence sentences
    plain = features.present(full_screen=False)
    qtbot.addWidget(plain)
    assert plain.evidence is None and plain.current_evidence() == ""
    assert not plain.evidence_label.isVisible()
    plain.close()

    win.evidence_debugger.set_expected("text:500 operating hours")  # not checked yet
    shown = features.present(full_screen=False)
    qtbot.addWidget(shown)
    shown.resize(1280, 820)
    attribution = win.evidence_debugger.attribution
    assert attribution is not None and attribution.first_loss == "rerank"
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
    if os.environ.get("MODRAG_SCREENSHOTS", "1") == "1":
        shown.grab().save(str(SCREENSHOT))
    shown.close()
    # a recorded trace of another run gets no evidence sentences
    other = Trace(run_id="elsewhere", graph_name="rerank_loss",
                  visits=features.controller.last_result.trace.visits)
    assert evidence_narrator(win, "elsewhere") is None
    replay = PresentationWindow(other, win.canvas)
    qtbot.addWidget(replay)
    assert replay.current_evidence() == ""
    replay.close()
