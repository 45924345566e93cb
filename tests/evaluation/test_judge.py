"""The answer judge: messy replies parsed, unreadable ones listed (never NaN), fallbacks skipped."""

from __future__ import annotations

import math

import pytest

from modrag_nodes.evaluation.judge import (
    judge_answer,
    parse_faithfulness,
    parse_relevance,
    split_sentences,
)
from modrag_studio.engine.core.datatypes import Answer, Chunk, Citation, ScoredChunk
from modrag_studio.evaluation.answer_metrics import mean


@pytest.mark.parametrize(("reply", "score"), [
    ("4", 0.75), ("Score: 4/5", 0.75), ("**5** - fully answers it", 1.0),
    ('```json\n{"score": 2}\n```', 0.25), ("I'd rate it 3 out of 5.", 0.5),
    ("Yes, it answers the question.", 1.0), ("No.", 0.0),
])
def test_relevance_replies_in_many_shapes(reply, score):
    assert parse_relevance(reply) == score


@pytest.mark.parametrize("reply", ["", "hmm, hard to say", "The answer talks about pumps."])
def test_unreadable_relevance_is_none(reply):
    assert parse_relevance(reply) is None


@pytest.mark.parametrize(("reply", "count", "score"), [
    ("1: yes\n2: no", 2, 0.5),
    ("Sure! Here are my verdicts:\n**1. Yes**\n2) NO\n3 - supported", 3, 2 / 3),
    ("[1] supported [2] not supported", 2, 0.5),
    ("[true, true, false]", 3, 2 / 3),
    ("yes\nyes", 2, 1.0),
])
def test_faithfulness_replies_in_many_shapes(reply, count, score):
    assert parse_faithfulness(reply, count) == pytest.approx(score)


def test_unreadable_faithfulness_is_none():
    assert parse_faithfulness("I cannot decide, the evidence is long.", 2) is None


def test_sentences_in_english_and_chinese_without_citations():
    assert split_sentences("LP-07 runs 3.5 hours [a.md]. It is fine! 冷却泵每3个月保养。李娜") == [
        "LP-07 runs 3.5 hours .", "It is fine!", "冷却泵每3个月保养。", "李娜"]


EVIDENCE = [
    ScoredChunk(chunk=Chunk(chunk_id="m#0", doc_id="maint.md",
                            text="LP-07 is serviced every 500 operating hours."), score=1.0),
    ScoredChunk(chunk=Chunk(chunk_id="o#0", doc_id="other.md", text="Unrelated text."),
                score=0.5),
]


def test_judge_keeps_raw_replies_lists_the_unreadable_and_shows_only_cited_evidence():
    asked: list[str] = []
    replies = iter(["1: yes\n2: no", "no idea"])

    def ask(system: str, user: str) -> str:
        asked.append(user)
        return next(replies)

    answer = Answer(text="LP-07 is serviced every 500 hours [maint.md]. It is blue.",
                    evidence=EVIDENCE,
                    citations=[Citation(ref="maint.md", doc_id="maint.md", chunk_id="m#0")])
    judgement = judge_answer(ask, "How often is LP-07 serviced?", answer)
    assert judgement["faithfulness"] == 0.5 and judgement["answer_relevance"] is None
    assert judgement["raw"] == {"faithfulness": "1: yes\n2: no",
                                "answer_relevance": "no idea"}
    assert judgement["unparsed"] == [{"metric": "answer_relevance", "reply": "no idea"}]
    assert "500 operating hours" in asked[0] and "Unrelated" not in asked[0]
    assert "1. LP-07 is serviced" in asked[0] and "2. It is blue." in asked[0]
    # the unreadable reply is left out of the mean, which stays a number
    value = mean([judgement["answer_relevance"], 1.0])
    assert value == 1.0 and not math.isnan(value)


def test_fallback_answers_are_not_judged():
    def ask(system: str, user: str) -> str:
        raise AssertionError("a fallback answer must not be sent to the judge")

    judgement = judge_answer(ask, "q", Answer(text="No reliable answer.", fallback=True))
    assert judgement["faithfulness"] is None and judgement["answer_relevance"] is None
    assert judgement["unparsed"] == [] and "skipped" in judgement
