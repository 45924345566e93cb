"""Output parser: citations checked against the evidence, JSON extraction and schemas."""

from __future__ import annotations

import json

import pytest

from modrag_nodes.generation import schema_check
from modrag_nodes.generation.parser import AnswerParser, extract_citations
from modrag_studio.engine.core.datatypes import Answer, ChatMessage, Prompt, Query


@pytest.fixture
def evidence(make_chunk):
    return [make_chunk("warranty", 0.9, chunk_id="warranty#2"),
            make_chunk("returns", 0.5, chunk_id="returns#0")]


def test_doc_id_and_number_citations(evidence) -> None:
    text = ("Two years [warranty]. Returns take 30 days [2]. See also [warranty#2] and "
            "[manual] and [7]. A [citation needed] phrase and a [x] box are not refs.")
    citations = extract_citations(text, evidence)
    assert [(c.ref, c.doc_id, c.chunk_id, c.valid) for c in citations] == [
        ("warranty", "warranty", "warranty#2", True),
        ("2", "returns", "returns#0", True),
        ("warranty#2", "warranty", "warranty#2", True),
        ("manual", "", None, False),
        ("7", "", None, False),
    ]


@pytest.mark.parametrize("text, refs", [
    ("Yes [warranty, returns].", ["warranty", "returns"]),
    ("Yes [warranty; 2].", ["warranty", "2"]),
    ("Yes [doc: warranty] [Source: returns]", ["warranty", "returns"]),
    ("Yes [1][2]", ["1", "2"]),
    ("A [link](http://x) is not a citation [warranty]", ["warranty"]),
    ("Repeated [warranty] [warranty]", ["warranty"]),
])
def test_citation_forms(evidence, text, refs) -> None:
    assert [c.ref for c in extract_citations(text, evidence)] == refs


def test_parser_text_mode(run_node, evidence) -> None:
    raw = Answer(text="<think>hmm</think>\nThe warranty is two years [warranty] [manual].",
                 model="m", evidence=evidence)
    out = run_node(AnswerParser, {}, answer=raw, query=Query(text="q?"))["answer"]
    assert out.text == "The warranty is two years [warranty] [manual]."
    assert [c.ref for c in out.citations if c.valid] == ["warranty"]
    assert out.invalid_citations == ["manual"]
    assert out.model == "m" and out.query == "q?" and out.evidence == evidence
    assert any("manual" in w for w in run_node.ctx.warnings)


def test_parser_uses_prompt_numbering(run_node, evidence) -> None:
    # the prompt dropped 'warranty': [1] now means 'returns', and 'warranty' is invalid
    prompt = Prompt(messages=[ChatMessage(role="user", content="x")], evidence=evidence[1:])
    out = run_node(AnswerParser, {}, answer="See [1] and [warranty].", prompt=prompt)["answer"]
    assert [(c.ref, c.doc_id, c.valid) for c in out.citations] == [
        ("1", "returns", True), ("warranty", "", False)]
    assert out.invalid_citations == ["warranty"]


def test_parser_require_citations(run_node, evidence) -> None:
    run_node(AnswerParser, {"require_citations": True}, answer="No refs.", evidence=evidence)
    assert "the answer cites no evidence" in run_node.ctx.warnings


SCHEMA = {"type": "object", "required": ["answer", "sources"],
          "properties": {"answer": {"type": "string"},
                         "sources": {"type": "array", "items": {"type": "string"}},
                         "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}


@pytest.mark.parametrize("reply", [
    '{"answer": "Two years.", "sources": ["warranty", "bogus"]}',
    'Sure!\n```json\n{"answer": "Two years.", "sources": ["warranty", "bogus"],}\n```',
    "{'answer': 'Two years.', 'sources': ['warranty', 'bogus']} -- done",
])
def test_parser_json_mode(run_node, evidence, reply) -> None:
    params = {"format": "json", "json_schema": SCHEMA}
    out = run_node(AnswerParser, params, answer=reply, evidence=evidence)["answer"]
    assert out.data == {"answer": "Two years.", "sources": ["warranty", "bogus"]}
    assert out.text == "Two years."
    assert [c.ref for c in out.citations] == ["warranty", "bogus"]
    assert out.invalid_citations == ["bogus"]


def test_parser_json_schema_violation(run_node, evidence) -> None:
    params = {"format": "json", "json_schema": SCHEMA}
    with pytest.raises(ValueError, match=r"\$\.confidence.*(maximum|more than)"):
        run_node(AnswerParser, params, evidence=evidence,
                 answer='{"answer": "x", "sources": [], "confidence": 3}')
    with pytest.raises(ValueError, match="no JSON object"):
        run_node(AnswerParser, params, answer="I don't know", evidence=evidence)
    out = run_node(AnswerParser, {**params, "on_invalid": "warn"}, answer="I don't know [1]",
                   evidence=evidence)["answer"]
    assert out.data is None and out.text == "I don't know [1]"
    assert out.citations[0].doc_id == "warranty"
    assert run_node.ctx.warnings


def test_parser_schema_file(run_node, evidence, tmp_path) -> None:
    file = tmp_path / "schema.json"
    file.write_text(json.dumps(SCHEMA), encoding="utf-8")
    out = run_node(AnswerParser, {"format": "json", "json_schema_file": str(file)},
                   answer='{"answer": "a", "sources": []}', evidence=evidence)["answer"]
    assert out.data == {"answer": "a", "sources": []}


@pytest.mark.parametrize("data, problems", [
    ({"answer": "a", "sources": ["x"]}, 0),
    ({"answer": 1, "sources": ["x"]}, 1),
    ({"sources": ["x"]}, 1),
    ({"answer": "a", "sources": [1, "x"]}, 1),
    ({"answer": "a", "sources": [], "confidence": True}, 1),
    ([], 1),
])
def test_builtin_schema_subset_agrees_with_jsonschema(data, problems) -> None:
    assert len(schema_check._check(data, SCHEMA, "$")) == problems
    assert len(schema_check.schema_errors(data, SCHEMA)) == problems


@pytest.mark.parametrize(("text", "refs"), [
    ("Serviced every 500 hours [1][2].", ["1", "2"]),
    ("Serviced every 500 hours [1, 2].", ["1", "2"]),
    ("Serviced every 500 hours (2).", ["2"]),
    ("保养周期为每1个月【1】。", ["1"]),
    ("保养周期为每1个月［2］（1）。", ["2", "1"]),
    ("See [Evidence 2] and [^1].", ["2", "1"]),
    ("Both say so [1-2].", ["1", "2"]),
    ("Cited by file [warranty.md].", ["warranty.md"]),
])
def test_citation_forms_small_models_write(evidence, text, refs) -> None:
    citations = extract_citations(text, evidence)
    assert [c.ref for c in citations] == refs and all(c.valid for c in citations)


def test_parenthesised_numbers_that_are_not_citations(evidence) -> None:
    text = "Steps:\n(1) open the cover (at 20 °C)\n(2) check it (5 times) within (3) days."
    assert extract_citations(text, evidence) == []


def _small_prompt(run_node, evidence, question: str = "How long is the warranty?"):
    from modrag_nodes.generation.prompt import PromptBuilder

    return run_node(PromptBuilder, {"preset": "small_model"}, query=Query(text=question),
                    evidence=evidence)["prompt"]


@pytest.mark.parametrize("reply, text", [
    ("<The evidence does not say.>", "The evidence does not say."),
    ("< sentence with the facts> The warranty is two years. [1]",
     "The warranty is two years. [1]"),
    ("<sentence with the facts> [block number]", "The evidence does not say."),
    ("Write the answer as: <sentence with the facts> [block number]\nTwo years [1].",
     "Two years [1]."),
    ("The evidence does not say. The warranty is two years [1].",
     "The warranty is two years [1]."),
    ("The warranty is two years [1].", "The warranty is two years [1]."),
    ("保修期为两年 <The evidence does not say.> [1]", "保修期为两年 [1]"),
    ("<句子 with the facts> 保修期为两年 [1]", "保修期为两年 [1]"),
    ("<The warranty is two years [1].", "The warranty is two years [1]."),
    ("<" + "The warranty is two years. " * 8 + "> [1]", ("The warranty is two years. " * 8
                                                       ).strip() + " [1]"),
])
def test_parser_never_passes_template_text(run_node, evidence, reply, text) -> None:
    prompt = _small_prompt(run_node, evidence)
    out = run_node(AnswerParser, {}, answer=reply, prompt=prompt)["answer"]
    assert out.text == text
    assert "<" not in out.text and "[block number]" not in out.text
    assert all(c.valid for c in out.citations)


@pytest.mark.parametrize("reply, text", [
    # a refusal after an answer that states something is dropped ...
    ("《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。\n\nThe evidence does not say.",
     "《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。"),
    ("The pump is serviced every 500 operating hours. The evidence does not say.",
     "The pump is serviced every 500 operating hours."),
    # ... one after an explanation of why it refuses is not
    ("The documents give the pump's service interval but not its warranty. The evidence does "
     "not say.", "The documents give the pump's service interval but not its warranty. The "
     "evidence does not say."),
    ("文档没有提到保修期。The evidence does not say.",
     "文档没有提到保修期。The evidence does not say."),
    ("Two years. The evidence does not say.", "Two years. The evidence does not say."),
    # a decimal written with a space after its point, running into a Chinese unit, is joined
    ("西施故里旅游区的总面积为1. 44平方公里。", "西施故里旅游区的总面积为1.44平方公里。"),
    ("Step 1. 2 pumps are checked [1].", "Step 1. 2 pumps are checked [1]."),
])
def test_parser_reads_what_small_models_append(run_node, evidence, reply, text) -> None:
    prompt = _small_prompt(run_node, evidence)
    assert run_node(AnswerParser, {}, answer=reply, prompt=prompt)["answer"].text == text


def test_parser_keeps_template_text_when_asked(run_node, evidence) -> None:
    prompt = _small_prompt(run_node, evidence)
    out = run_node(AnswerParser, {"strip_template": False},
                   answer="<The evidence does not say.>", prompt=prompt)["answer"]
    assert out.text == "<The evidence does not say.>"


def test_parser_unwraps_an_answer_in_angle_brackets(run_node, evidence) -> None:
    prompt = _small_prompt(run_node, evidence)
    reply = "<The warranty of the pump is two years. > [1]"
    out = run_node(AnswerParser, {}, answer=reply, prompt=prompt)["answer"]
    assert out.text == "The warranty of the pump is two years. [1]"
    kept = run_node(AnswerParser, {}, answer="Use the <b> tag [1]", prompt=prompt)["answer"]
    assert kept.text == "Use the <b> tag [1]"
