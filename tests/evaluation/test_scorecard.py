"""The scorecard's computation without a model: the figures of a fixed run, the change the
tuner suggests (and its honest 'none'), the graph fitted to another folder, and the page."""

from __future__ import annotations

import json
import re

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.evaluation.report import QuestionResult
from modrag_studio.evaluation.scorecard.figures import (
    EvidenceTrail,
    Suggestion,
    scorecard_figures,
)
from modrag_studio.evaluation.scorecard.run import fit_to_corpus, suggest_change
from modrag_studio.reporting.scorecard_page import scorecard_html
from tests.evaluation.scorecard_helpers import scorecard_graph, write_two_document_set


def _row(qid: str, *, answerable: bool = True, refused: bool = False, recall: float | None = 1.0,
         missed: tuple[str, ...] = (), error: str = "") -> QuestionResult:
    return QuestionResult(qid, f"question {qid}?", answerable, f"answer {qid}", refused,
                          {"fact_recall": recall if answerable else None},
                          list(missed), error=error)


ROWS = [
    _row("a1"),                                               # right
    _row("a2"),                                               # right
    _row("a3", recall=0.5, missed=("500 hours",)),            # shown, half the facts
    _row("a4", recall=0.0, missed=("Voss",)),                 # shown, no fact
    _row("a5", refused=True, recall=0.0),                     # wrongly refused
    _row("a6", recall=None, error="node 'llm' failed"),       # failed run
    _row("u1", answerable=False, refused=True),               # rightly refused
    _row("u2", answerable=False),                             # answered, never right
]
TRAILS = {"a3": EvidenceTrail(None, "The expected evidence reaches the answer: cited [2]."),
          "a4": EvidenceTrail("fusion", "Lost at fusion: #7 after bm25, top_k is 5."),
          "a5": EvidenceTrail(None, "The expected evidence reaches prompt: block [1].")}
FUNNEL = {"bm25": {"reached": 5, "lost_here": 0, "never_reached": 0},
          "fusion": {"reached": 3, "lost_here": 2, "never_reached": 0},
          "prompt": {"reached": 3, "lost_here": 0, "never_reached": 2}}


def test_the_figures_of_a_fixed_run():
    card = scorecard_figures(ROWS, TRAILS, FUNNEL, graph="g", corpus="/docs", evalset="s.jsonl",
                             suggestion=Suggestion("not tested", "none"))
    h = card.headline
    assert (h.answerable, h.facts_right, h.unanswerable, h.unanswerable_refused) == (6, 2, 2, 1)
    assert h.wrongly_refused == 1
    # shown as grounded: a1 a2 a3 a4 a6 (a failure is not a refusal) u2; right: a1 a2
    assert (h.shown, h.shown_right) == (6, 2) and h.precision == 2 / 6
    assert h.lines()["facts right"] == "2/6"
    assert h.lines()["grounded-label precision"] == "0.33 (2/6)"
    assert [w.id for w in card.worst] == ["a6", "a4", "u2"]
    failed, lost, answered = card.worst
    assert failed.cause == "node 'llm' failed"
    assert lost.problem == "shown as grounded, but misses 'Voss'"
    assert lost.cause == "Lost at fusion: #7 after bm25, top_k is 5."
    assert answered.problem == "answered a question no document answers"
    data = card.to_dict()
    assert data["most_lost"] == {"node": "fusion", "questions": 1}  # a4's first loss
    assert data["first_losses"] == {"fusion": 1}
    assert data["failures"] == 1 and data["funnel_questions"] == 3


def test_a_row_that_reached_the_prompt_and_was_refused_says_so():
    rows = [_row("a5", refused=True, recall=0.0)]
    card = scorecard_figures(rows, TRAILS, {}, graph="g", corpus="", evalset="",
                             suggestion=Suggestion("not tested", ""))
    assert card.worst[0].problem == "refused, though the documents answer it"
    assert card.worst[0].cause.endswith("The answer written from it was refused.")


def _two_document_run(tmp_path, top_k: int = 1):
    data = scorecard_graph(tmp_path, backend="test-none")
    for node in data["nodes"]:
        if node["id"] == "retrieve":
            node["params"]["top_k"] = top_k
    doc = GraphDocument.model_validate_json(json.dumps(data))
    evalset = load_evalset(write_two_document_set(tmp_path / "set.jsonl"))
    return doc, evalset, {"corpus": str(tmp_path / "corpus")}


def test_the_tuner_suggests_passing_two_passages_on_for_two_document_questions(tmp_path):
    doc, evalset, inputs = _two_document_run(tmp_path)
    said: list[str] = []
    suggestion = suggest_change(doc, evalset, inputs, executor=Executor(default_registry()),
                                answer_node="answer", query_input="question",
                                on_status=said.append)
    assert "retrieve.top_k" in said[0] and "cross-validated" in said[0]
    assert suggestion.significant and suggestion.settings == {"retrieve.top_k": 2}
    assert suggestion.variant["params"] == {"retrieve": {"top_k": 2}}
    assert re.search(r"p = 0\.0\d\d", suggestion.text)


def test_no_change_is_found_significant_when_none_helps(tmp_path):
    doc, evalset, inputs = _two_document_run(tmp_path, top_k=2)
    suggestion = suggest_change(doc, evalset, inputs, executor=Executor(default_registry()),
                                answer_node="answer", query_input="question")
    assert not suggestion.significant and suggestion.variant is None
    assert suggestion.text.startswith("No change found significant")


def test_a_graph_pointed_at_another_folder_keeps_its_stores_apart(root, tmp_path):
    doc = load(root / "sample_graphs" / "basic_rag.json")
    fitted, warnings = fit_to_corpus(doc, default_registry(), {"corpus": str(tmp_path)})
    assert fitted.node("store").params["collection"].startswith("sample_corpus_")
    assert fitted.node("kg").params["name"].startswith("basic_rag_")
    assert doc.node("store").params["collection"] == "sample_corpus"  # the base is untouched
    assert any(w.startswith("load.exclude:") for w in warnings)
    assert any(w.startswith("store.collection:") for w in warnings)
    asked, _ = fit_to_corpus(doc, default_registry(), {"corpus": str(tmp_path),
                                                       "question": "another question?"})
    assert asked.node("store").params == fitted.node("store").params  # the folder names it
    same, none = fit_to_corpus(doc, default_registry(), {})
    assert none == [] and same is doc


def test_the_page_holds_every_section_and_loads_nothing():
    card = scorecard_figures(ROWS, TRAILS, FUNNEL, graph="g", corpus="/data/docs",
                             evalset="s.jsonl", suggestion=Suggestion(
                                 "significant", "Change fusion.top_k = 10.",
                                 {"fusion.top_k": 10},
                                 {"name": "scorecard", "params": {"fusion": {"top_k": 10}}}),
                             warnings=["load.glob: check it <fits>"])
    page = scorecard_html(card.to_dict())
    for anchor in ("figures", "funnel", "worst", "change", "checks"):
        assert f'<section id="{anchor}">' in page
    assert "2/6" in page and "0.33" in page and "first lost at fusion: 1 of the 3" in page
    assert "Lost at fusion: #7 after bm25" in page and "Change fusion.top_k = 10." in page
    assert "check it &lt;fits&gt;" in page  # escaped
    assert not re.search(r"(src|href)=\"(?!#)|url\(|@import|https?://", page)
