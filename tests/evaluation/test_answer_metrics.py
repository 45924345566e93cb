"""Answer metrics on hand-made cases: facts with numbers and units (English and Chinese),
refusals, citations (valid, invalid, against expected evidence), ranking, cost."""

from __future__ import annotations

import pytest

from modrag_nodes.generation.fact_match import fact_found, fact_recall, is_refusal, quantities
from modrag_studio.engine.core.datatypes import Answer, Chunk, Citation, ScoredChunk
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.evaluation.answer_eval import score_question
from modrag_studio.evaluation.answer_metrics import (
    answer_length,
    citation_scores,
    mean,
    tokens_used,
)
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.evaluation.metrics import evidence_ranking


@pytest.mark.parametrize(("fact", "answer"), [
    ("500 hours", "LP-07 is serviced every 500 operating hours [en_maintenance_schedule.md]."),
    ("500 operating hours", "It needs service after 500 hours of operation."),
    ("500 h", "every 500 hours"),
    ("500小时", "The pump is serviced every ５００ h."),
    ("每500小时", "润滑泵 LP-07 每５００小时保养一次。"),
    ("每3个月", "The coolant pump CP-12 is serviced every 3 months."),
    ("四个小时", "更换密封件需要停机约4小时。"),
    ("四十分钟", "The shuttle takes about 40 minutes."),
    ("8,000 rpm", "above 8000 rpm"),
    ("about 640 people", "Norvale employs 640 people."),
    ("640", "诺维尔约有640人。"),
    ("Lumen Industrial Services", "It is LUMEN  industrial\nservices."),
])
def test_facts_with_numbers_and_units_match_across_spellings_and_languages(fact, answer):
    assert fact_found(fact, answer, fillers=DEMO_FILLERS)


# The demo corpus's words between a number and its unit: a param, not a default.
DEMO_FILLERS = ("operating", "operation", "service")


def test_corpus_words_between_number_and_unit_are_not_a_default() -> None:
    answer = "LP-07 is serviced every 500 operating hours."
    assert not fact_found("500 hours", answer)
    assert fact_found("500 hours", answer, fillers=("operating",))
    assert fact_found("500 operating hours", answer)  # said as the fact says it


@pytest.mark.parametrize(("fact", "answer"), [
    ("500 hours", "every 50 hours"),
    ("每3个月", "every 6 months"),
    ("3 months", "every 3 weeks"),
    ("640", "6400 people"),
    ("Kestrel Hydraulics", "Baltic Bearing Supply"),
])
def test_wrong_numbers_units_or_names_do_not_match(fact, answer):
    assert not fact_found(fact, answer)


def test_quantities_read_full_width_digits_chinese_numerals_and_ignore_ids():
    assert quantities("５００小时，四十分钟，CNC-A01 h") == [(500.0, "h"), (40.0, "min")]


def test_a_fact_word_is_stated_by_its_plural_but_not_by_a_longer_word():
    assert fact_found("Monday", "New versions are released on Mondays.")
    assert fact_found("batch", "It applies several edits in batches.")
    assert not fact_found("Monday", "It is released on Mondayish dates.")
    assert not fact_found("py311", "It targets py3110.")


def test_fact_recall_counts_an_item_when_any_alternative_is_stated():
    facts = [["王芳", "Wang Fang"], ["CNC-A01"], ["every 3 months"]]
    recall, missed = fact_recall(facts, "Li Na's mentor is Wang Fang, who runs CNC-A01.")
    assert recall == pytest.approx(2 / 3) and missed == ["every 3 months"]
    assert fact_recall([], "anything") == (None, [])


@pytest.mark.parametrize(("text", "refused"), [
    ("The documents do not contain this information.", True),
    ("I don't know.", True),
    ("There is not enough information to answer.", True),
    ("文档中没有提到首席执行官。", True),
    ("无法回答这个问题。", True),
    ("证据没有说。[1]", True),  # the prompt's refusal sentence, written in Chinese
    ("The information is not available in the provided evidence.", True),
    ("This is not found in the documents.", True),
    ("The evidence blocks do not cover the licence price.", True),
    ("LP-07 is serviced every 500 hours.", False),
    ("李娜负责空压机 AC-05。", False),
    # an answer that states what a thing does not do is an answer, not a refusal
    ("The 2.x series does not support Python 2; use 1.9.", False),
    ("Batch mode copies the table, because SQLite does not support ALTER in place.", False),
    ("get() returns None when the key is not found.", False),
    ("If no value is provided, the default of 0.1 seconds is used.", False),
])
def test_refusals_are_recognised_in_english_and_chinese(text, refused):
    assert is_refusal(text) is refused


def test_a_fallback_answer_is_a_refusal_whatever_its_text():
    assert is_refusal(Answer(text="Here is something.", fallback=True))


def _scored(chunk_id: str, doc_id: str, text: str, rank: int) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(chunk_id=chunk_id, doc_id=doc_id, text=text), score=1.0,
                       rank=rank)


EVIDENCE = [
    _scored("m#0", "maint.md", "The lubrication pump LP-07 is serviced every 500 operating hours.",
            1),
    _scored("c#0", "cnc.md", "CNC-A01 shows spindle vibration.", 2),
    _scored("o#0", "overview.md", "The canteen opens at 06:00.", 3),
]
EXPECTED = ExpectedEvidence.from_dict({"phrases": ["serviced every 500 operating hours"],
                                       "regex": [r"spindle\s+vibration"]})


def test_an_invalid_citation_lowers_validity_and_precision():
    answer = Answer(text="Every 500 hours [maint.md] [ghost.md].", evidence=EVIDENCE,
                    citations=[Citation(ref="maint.md", doc_id="maint.md", chunk_id="m#0"),
                               Citation(ref="ghost.md", valid=False)],
                    invalid_citations=["ghost.md"])
    scores = citation_scores(answer, EXPECTED)
    assert scores.invalid == ["ghost.md"]
    assert scores.validity == 0.5 and scores.precision == 0.5 and scores.recall == 0.5


def test_citing_every_expected_chunk_and_a_distractor():
    answer = Answer(text="x [1] [c#0] [overview.md]", evidence=EVIDENCE, citations=[
        Citation(ref="1", doc_id="maint.md", chunk_id="m#0"),
        Citation(ref="c#0", doc_id="cnc.md", chunk_id="c#0"),
        Citation(ref="overview.md", doc_id="overview.md", chunk_id="o#0")])
    scores = citation_scores(answer, EXPECTED)
    assert scores.validity == 1.0 and scores.recall == 1.0
    assert scores.precision == pytest.approx(2 / 3)


def test_no_citations_gives_none_not_zero_division():
    scores = citation_scores(Answer(text="no refs", evidence=EVIDENCE), EXPECTED)
    assert scores.validity is None and scores.precision is None and scores.recall == 0.0


def test_refusal_accuracy_and_facts_per_question():
    answerable = EvalQuestion(id="a", question="q", expected_facts=[["500 hours"]],
                              expected_evidence=EXPECTED)
    unanswerable = EvalQuestion(id="u", question="q", answerable=False)
    refusal = Answer(text="The documents do not support a reliable answer.", fallback=True)
    good = Answer(text="Every 500 hours [1].", evidence=EVIDENCE,
                  citations=[Citation(ref="1", doc_id="maint.md", chunk_id="m#0")])
    assert score_question(answerable, good, None, 1.5).metrics["refusal_accuracy"] == 1.0
    assert score_question(answerable, good, None, 1.5).metrics["fact_recall"] == 1.0
    wrongly_refused = score_question(answerable, refusal, None, 0.2)
    assert wrongly_refused.refused and wrongly_refused.metrics["refusal_accuracy"] == 0.0
    assert wrongly_refused.metrics["fact_recall"] == 0.0
    assert score_question(unanswerable, refusal, None, 0.2).metrics["refusal_accuracy"] == 1.0
    hallucinated = score_question(unanswerable, good, None, 0.2)
    assert hallucinated.metrics["refusal_accuracy"] == 0.0
    assert hallucinated.metrics["fact_recall"] is None


def test_ranking_against_expected_evidence():
    scores = evidence_ranking(list(reversed(EVIDENCE)), EXPECTED)  # ranks put m#0 first
    assert scores["hit@1"] == 1.0 and scores["recall@1"] == 0.5 and scores["recall@5"] == 1.0
    assert scores["mrr@10"] == 1.0


def test_length_tokens_and_mean_skip_missing_values():
    # "LP-07", "500": Latin words; 每, 小, 时, 保, 养: one each
    assert answer_length("LP-07 每500小时保养") == 7
    assert tokens_used([{"prompt_tokens": 10, "completion_tokens": 5},
                        {"judge_tokens": [7, 2]}, {"other": 3}]) == 24
    assert mean([1.0, None, 0.0]) == 0.5 and mean([None]) is None
