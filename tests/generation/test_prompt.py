"""Prompt builder: evidence blocks, variables, budget, history, template files."""

from __future__ import annotations

import pytest

from modrag_nodes.generation.prompt import PromptBuilder, estimate_tokens
from modrag_studio.engine.core.datatypes import Answer, ChatMessage, Query
from modrag_studio.engine.core.errors import NodeConfigError

Q = Query(text="How long is the warranty?")


def test_evidence_blocks_and_instructions(run_node, make_chunk) -> None:
    evidence = [make_chunk("warranty", 0.91, text="Two years.", page=3),
                make_chunk("returns", 0.52, text="Thirty days.")]
    prompt = run_node(PromptBuilder, {}, query=Q, evidence=evidence)["prompt"]
    assert [m.role for m in prompt.messages] == ["system", "user"]
    assert "only the evidence" in prompt.system and "does not say" in prompt.system
    assert "[warranty]" in prompt.system  # citation instruction with a real id as example
    user = prompt.user
    assert "Evidence 1 [warranty] source: corpus/warranty.md | page: 3 | score: 0.91" in user
    assert "Evidence 2 [returns] source: corpus/returns.md | score: 0.52" in user
    assert user.index("Two years.") < user.index("Thirty days.")
    assert "Question: How long is the warranty?" in user
    assert prompt.evidence == evidence and prompt.dropped == []
    assert prompt.token_estimate == sum(estimate_tokens(m.content) + 4 for m in prompt.messages)


def test_numbered_citation_style(run_node, make_chunk) -> None:
    evidence = [make_chunk("warranty", 0.9)]
    prompt = run_node(PromptBuilder, {"citation_style": "number"}, query=Q,
                      evidence=evidence)["prompt"]
    assert "[1] doc_id: warranty | source: corpus/warranty.md" in prompt.user
    assert "for example [1]" in prompt.system


def test_variables_and_escapes(run_node) -> None:
    params = {"template": "{lang}: {question} {{\"answer\": ...}} {original}",
              "variables": {"lang": "EN"}, "system": ""}
    prompt = run_node(PromptBuilder, params, query=Query(text="q2", original="q1"))["prompt"]
    assert [m.role for m in prompt.messages] == ["user"]
    assert prompt.user == 'EN: q2 {"answer": ...} q1'


def test_unknown_variable_names_the_param(run_node) -> None:
    with pytest.raises(NodeConfigError, match=r"param 'template': unknown variable \{lang\}"):
        run_node(PromptBuilder, {"template": "{lang} {question}"}, query=Q)


def test_budget_drops_lowest_scored_first(run_node, make_chunk) -> None:
    text = "word " * 100  # about 125 tokens per block
    evidence = [make_chunk(f"d{i}", s, text=text)
                for i, s in enumerate([0.5, 0.9, 0.1, 0.7, 0.3])]
    three = run_node(PromptBuilder, {"context_budget_tokens": None, "max_evidence": 3},
                     query=Q, evidence=evidence)["prompt"]
    assert three.dropped == ["d2#0", "d4#0"]
    budget = three.token_estimate  # exactly what the three best blocks need
    prompt = run_node(PromptBuilder, {"context_budget_tokens": budget}, query=Q,
                      evidence=evidence)["prompt"]
    assert prompt.dropped == ["d2#0", "d4#0"]  # scores 0.1 then 0.3
    assert [e.doc_id for e in prompt.evidence] == ["d0", "d1", "d3"]  # input order kept
    assert prompt.token_estimate <= budget
    assert run_node.ctx.details["dropped"] == ["d2#0", "d4#0"]
    tighter = run_node(PromptBuilder, {"context_budget_tokens": budget - 1}, query=Q,
                       evidence=evidence)["prompt"]
    assert tighter.dropped == ["d2#0", "d4#0", "d0#0"]


def test_budget_respects_lower_is_better(run_node, make_chunk) -> None:
    text = "word " * 100
    evidence = [make_chunk(f"d{i}", s, text=text, kind="distance", higher=False)
                for i, s in enumerate([0.2, 0.9, 0.4])]
    two = run_node(PromptBuilder, {"max_evidence": 2}, query=Q, evidence=evidence)["prompt"]
    prompt = run_node(PromptBuilder, {"context_budget_tokens": two.token_estimate}, query=Q,
                      evidence=evidence)["prompt"]
    assert prompt.dropped == ["d1#0"]  # the largest distance is the weakest


def test_budget_too_small_warns(run_node) -> None:
    run_node(PromptBuilder, {"context_budget_tokens": 64, "template": "x " * 400}, query=Q)
    assert any("context_budget_tokens" in w for w in run_node.ctx.warnings)


def test_history_as_messages_or_inline(run_node) -> None:
    history = [ChatMessage(role="user", content="Hi"),
               ChatMessage(role="assistant", content="Hello! Ask me.")]
    prompt = run_node(PromptBuilder, {}, query=Q, history=history)["prompt"]
    assert [m.role for m in prompt.messages] == ["system", "user", "assistant", "user"]
    inline = run_node(PromptBuilder, {"template": "{history}\n{question}"}, query=Q,
                      history=history)["prompt"]
    assert [m.role for m in inline.messages] == ["system", "user"]
    assert "assistant: Hello! Ask me." in inline.user
    limited = run_node(PromptBuilder, {"max_history_messages": 1}, query=Q,
                       history=history)["prompt"]
    assert [m.content for m in limited.messages[1:-1]] == ["Hello! Ask me."]


def test_feedback_is_appended(run_node) -> None:
    prompt = run_node(PromptBuilder, {}, query=Q,
                      feedback=Answer(text="It is ten years."))["prompt"]
    assert "not supported by the evidence:\nIt is ten years." in prompt.user


def test_template_file_and_fingerprint(run_node, tmp_path) -> None:
    file = tmp_path / "t.txt"
    file.write_text("FILE {question}", encoding="utf-8")
    params = {"template_file": str(file)}
    assert run_node(PromptBuilder, params, query=Q)["prompt"].user == "FILE " + Q.text
    node, validated = PromptBuilder(), PromptBuilder.Params.model_validate(params)
    before = node.fingerprint(validated, {}, {})
    file.write_text("CHANGED {question}", encoding="utf-8")
    assert node.fingerprint(validated, {}, {}) != before
    with pytest.raises(NodeConfigError, match="param 'template_file': no file"):
        run_node(PromptBuilder, {"template_file": str(tmp_path / "missing.txt")}, query=Q)


def test_token_estimator() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("") == 0


def test_budget_capped_by_connected_model(run_node, make_chunk) -> None:
    from modrag_nodes.llm.client import LLMSpec

    evidence = [make_chunk(f"d{i}", 1.0 - i / 10, text="word " * 200) for i in range(6)]
    llm = LLMSpec(context_length=600, max_tokens=200)
    prompt = run_node(PromptBuilder, {}, query=Q, evidence=evidence, llm=llm)["prompt"]
    assert run_node.ctx.details["budget"] == 400
    assert prompt.token_estimate <= 400 and len(prompt.evidence) == 1
    assert prompt.dropped == ["d5#0", "d4#0", "d3#0", "d2#0", "d1#0"]


def test_small_model_preset_plain_blocks_and_refusal(run_node, make_chunk) -> None:
    from modrag_nodes.generation.prompt import REFUSAL

    evidence = [make_chunk("warranty", 0.91, text="Two years.", page=3),
                make_chunk("returns", 0.52, text="Thirty days.")]
    prompt = run_node(PromptBuilder, {"preset": "small_model"}, query=Q,
                      evidence=evidence)["prompt"]
    assert prompt.user.startswith("Evidence:\n[1] Two years.\n\n[2] Thirty days.\n\nQuestion: ")
    assert "doc_id" not in prompt.user and "score" not in prompt.user
    assert REFUSAL in prompt.system and "[1]" in prompt.system
    custom = run_node(PromptBuilder, {"preset": "small_model", "system": "Be terse."}, query=Q,
                      evidence=evidence)["prompt"]
    assert custom.system == "Be terse." and "[1] Two years." in custom.user


@pytest.mark.parametrize(("backend", "model", "small"), [
    ("embedded", "", True), ("ollama", "qwen2.5:1.5b", True), ("ollama", "llama3.1:70b", False),
    ("openai", "gpt-4o", False), ("openai", "phi-3-mini", True)])
def test_auto_preset_follows_the_model(run_node, make_chunk, backend, model, small) -> None:
    from modrag_nodes.llm.client import LLMSpec

    llm = LLMSpec(backend=backend, model=model)
    prompt = run_node(PromptBuilder, {"preset": "auto"}, query=Q,
                      evidence=[make_chunk("warranty", 0.9, text="Two years.")],
                      llm=llm)["prompt"]
    assert (prompt.user.startswith("Evidence:\n[1] Two years.")) is small
    assert ("Evidence 1 [warranty]" in prompt.user) is not small


@pytest.mark.parametrize("question, line", [
    ("How often is LP-07 serviced?", "Answer in English."),
    ("空压机 AC-05 多久保养一次？", "请用中文回答。"),
])
def test_answer_in_the_language_of_the_question(run_node, make_chunk, question, line) -> None:
    evidence = [make_chunk("pumps", 0.9)]
    params = {"preset": "small_model", "answer_language": "question"}
    prompt = run_node(PromptBuilder, params, query=Query(text=question),
                      evidence=evidence)["prompt"]
    assert prompt.user.endswith(line)
    plain = run_node(PromptBuilder, {"preset": "small_model"}, query=Query(text=question),
                     evidence=evidence)["prompt"]
    assert line not in plain.user


def test_feedback_names_the_ungrounded_claims(run_node, make_chunk) -> None:
    from modrag_studio.engine.core.datatypes import Claim

    feedback = Answer(text="It is 15,000 psi [1].", claims=[
        Claim(text="15,000 psi", kind="number", verdict="missing"),
        Claim(text="PR-300", kind="identifier", verdict="cited", block=1)])
    params = {"feedback_instruction": "Was: {feedback} Unsupported: {ungrounded}."}
    prompt = run_node(PromptBuilder, params, query=Q, evidence=[make_chunk("press", 0.9)],
                      feedback=feedback)["prompt"]
    assert prompt.user.endswith("Was: It is 15,000 psi [1]. Unsupported: 15,000 psi.")


def test_auto_preset_without_a_model_is_the_small_model_one(run_node, make_chunk) -> None:
    """A newcomer's prompt builder has no 'llm' wire: auto still gives small-model prompts."""
    prompt = run_node(PromptBuilder, {"preset": "auto"}, query=Q,
                      evidence=[make_chunk("warranty", 0.9, text="Two years.")])["prompt"]
    assert prompt.user.startswith("Evidence:\n[1] Two years.")
    assert PromptBuilder.new_node_params() == {"preset": "auto"}
