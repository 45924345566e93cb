"""Self-check verdicts, fallback answer and answer selection (single nodes)."""

from __future__ import annotations

import pytest

from modrag_nodes.generation.self_check import FallbackAnswer, SelectAnswer, SupportCheck
from modrag_studio.engine.core.datatypes import Answer, Query


@pytest.fixture
def answer(make_chunk) -> Answer:
    return Answer(text="Two years [warranty].", query="How long?",
                  evidence=[make_chunk("warranty", 0.9, text="The warranty lasts two years.")])


@pytest.mark.parametrize("reply, port", [
    ("Yes", "supported"), ("yes, supported.", "supported"), ("**YES**", "supported"),
    ("Verdict: yes", "supported"), ("No.", "unsupported"), ("not supported", "unsupported"),
    ("The answer is not supported by the evidence.", "unsupported"),
    ("The evidence says two years. The answer is yes.", "supported"),
    ("hmm", "unsupported"),
])
def test_support_verdicts(run_node, fake_llm, answer, reply, port) -> None:
    backend, llm = fake_llm
    backend.script(reply)
    out = run_node(SupportCheck, {}, answer=answer, llm=llm, iteration=2)
    assert list(out) == [port] and out[port] == answer
    assert run_node.ctx.details["attempt"] == 3
    assert backend.specs[0].max_tokens == 24  # a verdict needs few tokens
    assert "The warranty lasts two years." in backend.calls[0][-1].content


def test_unreadable_verdict_param(run_node, fake_llm, answer) -> None:
    backend, llm = fake_llm
    backend.script("hmm")
    out = run_node(SupportCheck, {"unreadable_as": "supported"}, answer=answer, llm=llm)
    assert list(out) == ["supported"] and run_node.ctx.warnings


def test_no_evidence_or_fallback_needs_no_call(run_node, fake_llm) -> None:
    backend, llm = fake_llm
    out = run_node(SupportCheck, {}, answer=Answer(text="x"), llm=llm)
    assert list(out) == ["unsupported"]
    out = run_node(SupportCheck, {}, answer=Answer(text="x", fallback=True), llm=llm)
    assert list(out) == ["supported"]
    assert backend.calls == []


def test_fallback_answer(run_node, answer) -> None:
    out = run_node(FallbackAnswer, {"message": "Cannot say."}, trigger=answer)["answer"]
    assert out.fallback and out.text == "Cannot say." and out.query == "How long?"
    out = run_node(FallbackAnswer, {}, trigger=Query(text="rewritten", original="orig"))
    assert out["answer"].query == "orig"


def test_select_answer(run_node, answer) -> None:
    other = Answer(text="fallback", fallback=True)
    assert run_node(SelectAnswer, primary=answer, fallback=other)["answer"] == answer
    assert run_node(SelectAnswer, fallback=other)["answer"] == other
    with pytest.raises(ValueError, match="neither input"):
        run_node(SelectAnswer)


def test_the_judge_sees_the_cited_chunks_with_their_block_numbers(run_node, fake_llm,
                                                                   make_chunk) -> None:
    from modrag_studio.engine.core.datatypes import Citation

    backend, llm = fake_llm
    evidence = [make_chunk("a", 0.9, text="Pumps are serviced every 500 operating hours."),
                make_chunk("b", 0.8, text="Presses are inspected weekly.")]
    cited = Answer(text="Every 500 operating hours [2].", query="How often?", evidence=evidence,
                   citations=[Citation(ref="2", doc_id="b", chunk_id=evidence[1].chunk.chunk_id)])
    backend.script("no", "no", "no")
    run_node(SupportCheck, {"check_against": "cited"}, answer=cited, llm=llm)
    prompt = backend.calls[0][-1].content
    assert "[2] (b) Presses are inspected weekly." in prompt and "Pumps are" not in prompt
    assert run_node.ctx.details["checked_blocks"] == [2]
    run_node(SupportCheck, {"check_against": "all"}, answer=cited, llm=llm)
    assert "[1] (a) Pumps are serviced" in backend.calls[1][-1].content
    uncited = cited.model_copy(update={"citations": []})
    run_node(SupportCheck, {}, answer=uncited, llm=llm)
    assert run_node.ctx.details["checked_blocks"] == [1, 2]


def test_an_answer_citing_the_wrong_block_is_checked_against_all_the_evidence(
        run_node, fake_llm, make_chunk) -> None:
    from modrag_studio.engine.core.datatypes import Citation

    backend, llm = fake_llm
    evidence = [make_chunk("a", 0.9, text="Pumps are serviced every 500 operating hours."),
                make_chunk("b", 0.8, text="Presses are inspected weekly.")]
    cited = Answer(text="Every 500 operating hours [2].", query="How often?", evidence=evidence,
                   citations=[Citation(ref="2", doc_id="b", chunk_id=evidence[1].chunk.chunk_id)])
    backend.script("no", "yes")
    out = run_node(SupportCheck, {}, answer=cited, llm=llm)
    assert set(out) == {"supported"}
    assert len(backend.calls) == 2 and "Pumps are" in backend.calls[1][-1].content
    assert run_node.ctx.details["checked_blocks"] == [1, 2]
    assert run_node.ctx.details["judge_replies"] == ["no", "yes"]
    assert any("cites [2]" in w for w in run_node.ctx.warnings)
    backend.script("no", "no")  # supported nowhere: unsupported after both calls
    out = run_node(SupportCheck, {}, answer=cited, llm=llm)
    assert set(out) == {"unsupported"} and len(backend.calls) == 4
    backend.script("yes")  # the cited block supports it: one call
    out = run_node(SupportCheck, {}, answer=cited, llm=llm)
    assert set(out) == {"supported"} and len(backend.calls) == 5
