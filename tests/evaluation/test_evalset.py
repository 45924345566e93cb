"""Evaluation sets: loading, errors naming line and field, the sample set against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from modrag_nodes.generation.fact_match import fact_found
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.evalset import (
    EvalQuestion,
    EvalSetError,
    append_question,
    load_evalset,
    next_question_id,
    parse_evalset,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_corpus" / "eval_questions.jsonl"
SCHEMA = json.loads((ROOT / "resources" / "evalset.schema.json").read_text(encoding="utf-8"))


def _line(**fields) -> str:
    base = {"id": "q1", "question": "How often is LP-07 serviced?"}
    return json.dumps({**base, **fields})


def test_a_line_is_read_with_alternatives_and_evidence():
    evalset = parse_evalset(_line(expected_facts=["500 hours", ["LP-07", "lubrication pump"]],
                                  expected_evidence={"phrases": ["500 operating hours"]},
                                  language="en", tags=["one-hop"]))
    question = evalset.questions[0]
    assert question.expected_facts == [["500 hours"], ["LP-07", "lubrication pump"]]
    assert question.expected_evidence.specs == ["text:500 operating hours"]
    assert question.answerable and question.line == 1 and evalset.sha256


@pytest.mark.parametrize(("line", "needle"), [
    ('{"id": "q1", "question": ', "line 2: not valid JSON"),
    (_line(question=""), "line 2: field 'question'"),
    (_line(expected_facts=[3]), "line 2: field 'expected_facts[0]'"),
    (_line(answerable="no"), "line 2: field 'answerable'"),
    (_line(expected_evidence={"docs": ["a"]}), "line 2: field 'expected_evidence': "
                                               "expected_evidence: unknown field(s) docs"),
    (_line(answerable=False, expected_facts=["x"]), "line 2: field 'expected_facts'"),
    (_line(colour="red"), "line 2: unknown field(s) colour"),
    (_line(id="q0"), None),
])
def test_errors_name_the_line_and_the_field(line, needle):
    text = _line(id="q0") + "\n" + line + "\n"
    if needle is None:  # a duplicate id
        needle = "line 2: field 'id': 'q0' already used on line 1"
    with pytest.raises(EvalSetError) as info:
        parse_evalset(text, "set.jsonl")
    assert f"set.jsonl {needle}" in str(info.value)


def test_append_round_trips_and_refuses_a_duplicate_id(tmp_path):
    path = tmp_path / "new.jsonl"
    first = EvalQuestion(id="q01", question="Who mentors Wang Fang?",
                         expected_facts=[["Zhang Min", "张敏"]])
    append_question(path, first)
    append_question(path, EvalQuestion(id=next_question_id([first]), question="CEO?",
                                       answerable=False))
    loaded = load_evalset(path)
    assert [q.id for q in loaded.questions] == ["q01", "q02"]
    assert loaded.questions[0].expected_facts == [["Zhang Min", "张敏"]]
    assert loaded.questions[1].answerable is False
    with pytest.raises(EvalSetError, match="'q01' is already in the set"):
        append_question(path, first)


def test_the_sample_set_is_valid_balanced_and_grounded_in_the_corpus():
    lines = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    evalset = load_evalset(SAMPLE)
    questions = evalset.questions
    assert len(questions) >= 40
    assert {q.language for q in questions} == {"en", "zh"}
    assert sum(not q.answerable for q in questions) >= 8
    assert any("2-hop" in q.tags for q in questions) and any("1-hop" in q.tags for q in questions)
    docs = [Chunk(chunk_id=p.name, doc_id=p.name, text=p.read_text(encoding="utf-8"))
            for p in SAMPLE.parent.glob("*_*.md")]
    for question in questions:
        for item in question.expected_evidence.items:
            assert any(item.matches(doc) for doc in docs), (question.id, item.spec)
        support = " ".join(d.text for d in docs if question.expected_evidence.is_relevant(d))
        for alternatives in question.expected_facts:
            assert any(fact_found(a, support) for a in alternatives), (question.id, alternatives)
