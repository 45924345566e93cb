"""An answer in another language than the question's is translated, and kept only when it
keeps every block number, identifier and number."""

from __future__ import annotations

import pytest

from modrag_nodes.grounding.translate import TranslateAnswer
from modrag_studio.engine.core.datatypes import Answer, Query


@pytest.fixture
def english_answer(make_chunk) -> Answer:
    evidence = [make_chunk("en_cnc_machines", 0.9,
                           text="The spindle bearing SKF-6205 wears and CNC-A01 vibrates.")]
    return Answer(text="The spindle bearing SKF-6205 wears. [1]", evidence=evidence,
                  query="CNC-A01 主轴振动的根本原因是什么？")


def test_an_english_answer_to_a_chinese_question_is_translated(run_node, fake_llm,
                                                                english_answer):
    backend, llm = fake_llm
    backend.script("主轴轴承 SKF-6205 磨损。[1]")
    out = run_node(TranslateAnswer, {}, answer=english_answer, llm=llm)
    translated = out["answer"]
    assert translated.text == "主轴轴承 SKF-6205 磨损。[1]"
    assert [c.ref for c in translated.citations] == ["1"]
    assert translated.evidence == english_answer.evidence
    assert translated.query == english_answer.query
    request = backend.calls[0][-1].content
    assert "翻译成中文" in request and english_answer.text in request
    assert backend.specs[0].max_tokens == 200
    assert run_node.ctx.details["translated"] is True
    assert run_node.ctx.details["original"] == english_answer.text


@pytest.mark.parametrize("reply, why", [
    ("The spindle bearing SKF-6205 wears. [1]", "not in zh"),
    ("主轴轴承 SKF-6250 磨损。[1]", "SKF-6205"),
    ("主轴轴承 SKF-6205 磨损。[2]", "block numbers"),
    ("主轴轴承 SKF-6205 磨损。", "block numbers"),
    ("", "empty"),
])
def test_a_translation_that_loses_something_is_not_used(run_node, fake_llm, english_answer,
                                                        reply, why):
    backend, llm = fake_llm
    backend.script(reply)
    out = run_node(TranslateAnswer, {}, answer=english_answer, llm=llm)
    assert out["answer"] is english_answer
    assert why in run_node.ctx.details["reason"]
    assert run_node.ctx.warnings


def test_numbers_must_survive(run_node, fake_llm, make_chunk):
    backend, llm = fake_llm
    answer = Answer(text="AC-05 is serviced every 2,000 operating hours. [1]",
                    evidence=[make_chunk("en_maintenance", 0.9)], query="AC-05 多久保养一次？")
    backend.script("AC-05 每 200 小时保养一次。[1]", "AC-05 每 2,000 小时保养一次。[1]")
    assert run_node(TranslateAnswer, {}, answer=answer, llm=llm)["answer"] is answer
    kept = run_node(TranslateAnswer, {}, answer=answer, llm=llm)["answer"]
    assert kept.text == "AC-05 每 2,000 小时保养一次。[1]"


def test_no_call_when_nothing_needs_translating(run_node, fake_llm, english_answer):
    backend, llm = fake_llm
    same = english_answer.model_copy(update={"query": "What makes CNC-A01 vibrate?"})
    assert run_node(TranslateAnswer, {}, answer=same, llm=llm)["answer"] is same
    refusal = english_answer.model_copy(update={"fallback": True})
    assert run_node(TranslateAnswer, {}, answer=refusal, llm=llm)["answer"] is refusal
    no_prompt = run_node(TranslateAnswer, {"prompts": {"en": "Translate: {answer}"}},
                         answer=english_answer, llm=llm)
    assert no_prompt["answer"] is english_answer
    asked_in_english = run_node(TranslateAnswer, {}, answer=english_answer, llm=llm,
                                query=Query(text="Why does CNC-A01 vibrate?"))
    assert asked_in_english["answer"] is english_answer
    assert backend.calls == []


def test_a_chinese_answer_to_an_english_question_is_translated(run_node, fake_llm, make_chunk):
    backend, llm = fake_llm
    answer = Answer(text="空压机 AC-05 每月保养一次。[1]",
                    evidence=[make_chunk("zh_maintenance", 0.9)],
                    query="How often is AC-05 serviced?")
    backend.script("The AC-05 compressor is serviced every month. [1]")
    out = run_node(TranslateAnswer, {}, answer=answer, llm=llm)
    assert out["answer"].text == "The AC-05 compressor is serviced every month. [1]"
    assert "into English" in backend.calls[0][-1].content
