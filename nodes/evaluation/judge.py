"""Answer judge: faithfulness (is each sentence supported by the cited evidence?) and
answer relevance (does it address the question?), on any chat backend.

Small local models reply untidily; the parsing accepts numbered verdicts, yes/no words,
"4/5", "Score: 3" and JSON. A reply that still cannot be read gives ``None`` for its metric
and is listed in ``unparsed`` with the raw text, so a mean over questions skips it and is
never NaN. The raw replies are always kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.llm_call import SamplingAware, ask
from modrag_nodes.generation.messy_parsing import extract_json, parse_graded_lines
from modrag_nodes.generation.self_check import _clip
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_studio.engine.core.node import (
    Answer,
    ChatMessage,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
)

FAITHFULNESS_PROMPT = (
    "Evidence:\n{evidence}\n\nStatements:\n{sentences}\n\n"
    "For each numbered statement, say whether the evidence supports it. Reply with one line "
    "per statement, like \"1: yes\" or \"2: no\".\nVerdicts:"
)
RELEVANCE_PROMPT = (
    "Question: {question}\n\nAnswer: {answer}\n\n"
    "How well does the answer address the question? Reply with one number from 1 (not at "
    "all) to 5 (fully).\nScore:"
)
JUDGE_SYSTEM = "You are a strict grader of answers. You reply briefly in the format asked."

Ask = Callable[[str, str], str]  # (system, user) -> reply text

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_CITATION = re.compile(r"\[[^\[\]\n]{1,120}\]")
_SCORE = re.compile(
    r"(?:score|rating|relevance|grade)?\s*[:=]?\s*\**\s*(?P<n>[1-5])(?:\s*(?:/|out of)\s*5)?"
    r"(?![\d.])", re.IGNORECASE)

# "Yes." / "No, ..." as the whole verdict (not "no idea")
_LEADING_VERDICT = re.compile(r"^\W*(yes|no)\s*(?:[.,!;:]|$)", re.IGNORECASE)
# several numbered verdicts on one line: "[1] yes [2] no", "1: yes 2: no"
_INLINE_NUMBER = re.compile(r"[ \t]+(?=\[?\d{1,3}\s*[\]:.)]\s)")


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer (English or Chinese punctuation), citations removed."""
    cleaned = _CITATION.sub("", text)
    return [s.strip() for s in _SENTENCE_END.split(cleaned) if re.search(r"\w", s)]


def parse_relevance(reply: str) -> float | None:
    """A 1..5 score mapped to [0, 1], from "4", "Score: 4/5", '{"score": 4}', or a yes/no."""
    try:
        data = extract_json(reply)
        if isinstance(data, dict):
            for key in ("score", "relevance", "rating"):
                value = data.get(key)
                if isinstance(value, int | float) and 1 <= value <= 5:
                    return (float(value) - 1) / 4
    except ValueError:
        pass
    match = _SCORE.search(reply.replace("**", ""))
    if match:
        return (int(match.group("n")) - 1) / 4
    verdict = _LEADING_VERDICT.match(reply.replace("**", ""))
    return None if verdict is None else float(verdict.group(1).lower() == "yes")


def parse_faithfulness(reply: str, count: int) -> float | None:
    """Share of the ``count`` statements the reply calls supported (``None`` if unreadable)."""
    try:
        data = extract_json(reply)
    except ValueError:
        data = None
    if isinstance(data, list) and data and all(isinstance(v, bool) for v in data):
        return sum(data[:count]) / min(len(data), count)
    grades, _unreadable = parse_graded_lines(_INLINE_NUMBER.sub("\n", reply), count)
    if not grades:
        return None
    return sum(grades.values()) / len(grades)


def judge_answer(ask_model: Ask, question: str, answer: Answer,
                 max_chars_per_chunk: int = 800) -> dict[str, Any]:
    """Faithfulness and relevance of ``answer``, the raw replies and what was unreadable.

    A fallback answer claims nothing: it is not judged (both metrics ``None``).
    """
    result: dict[str, Any] = {"faithfulness": None, "answer_relevance": None, "raw": {},
                              "unparsed": [], "sentences": 0}
    if answer.fallback or not answer.text.strip():
        result["skipped"] = "fallback or empty answer: nothing to judge"
        return result
    sentences = split_sentences(answer.text)
    result["sentences"] = len(sentences)
    evidence = _cited_evidence(answer)
    if sentences and evidence:
        blocks = "\n\n".join(f"[{item.doc_id}] {_clip(item.chunk.text, max_chars_per_chunk)}"
                             for item in evidence)
        numbered = "\n".join(f"{n}. {s}" for n, s in enumerate(sentences, start=1))
        reply = ask_model(JUDGE_SYSTEM, FAITHFULNESS_PROMPT.format(
            evidence=blocks, sentences=numbered))
        result["raw"]["faithfulness"] = reply
        result["faithfulness"] = parse_faithfulness(reply, len(sentences))
        if result["faithfulness"] is None:
            result["unparsed"].append({"metric": "faithfulness", "reply": reply})
    elif sentences:
        result["faithfulness"] = 0.0  # statements with no evidence at all
    reply = ask_model(JUDGE_SYSTEM, RELEVANCE_PROMPT.format(
        question=question or answer.query, answer=_CITATION.sub("", answer.text).strip()))
    result["raw"]["answer_relevance"] = reply
    result["answer_relevance"] = parse_relevance(reply)
    if result["answer_relevance"] is None:
        result["unparsed"].append({"metric": "answer_relevance", "reply": reply})
    return result


def _cited_evidence(answer: Answer) -> list[Any]:
    """The evidence the answer cites; all of it when it cites nothing valid."""
    cited_docs = {c.doc_id for c in answer.citations if c.valid and c.doc_id}
    cited_chunks = {c.chunk_id for c in answer.citations if c.valid and c.chunk_id}
    picked = [item for item in answer.evidence
              if item.chunk_id in cited_chunks or item.doc_id in cited_docs]
    return picked or list(answer.evidence)


def chat_asker(llm: LLMSpec, max_tokens: int = 96) -> Ask:
    """An ``Ask`` that calls ``llm`` directly (outside a graph run)."""
    spec = llm.model_copy(update={"max_tokens": min(max_tokens, llm.max_tokens)})

    def ask_model(system: str, user: str) -> str:
        messages = [ChatMessage(role="system", content=system),
                    ChatMessage(role="user", content=user)]
        return chat(spec, messages, stream=False).text

    return ask_model


class JudgeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_reply_tokens: int = Field(96, ge=4, description="Token cap of each judge reply")
    max_chars_per_chunk: int = Field(800, ge=50, description="Evidence text shown per chunk")


class AnswerJudge(SamplingAware, NodeType):
    type_id = "eval.judge"
    span_kind = "evaluator"
    title = "Answer judge"
    category = "Evaluation"
    description = (
        "Asks a chat model whether each sentence of the answer is supported by the cited "
        "evidence (faithfulness) and whether the answer addresses the question (relevance). "
        "Passes the answer through; 'judgement' holds the scores and the raw replies."
    )
    Params = JudgeParams
    inputs = (
        InputPort("answer", Answer, description="The answer to judge"),
        InputPort("llm", LLMSpec, description="The judge model"),
        InputPort("query", Query | str, required=False,
                  description="The question (else the answer's own)"),
    )
    outputs = (
        OutputPort("answer", Answer, "The answer, unchanged"),
        OutputPort("judgement", dict, "faithfulness, answer_relevance (0..1 or null), raw "
                                      "replies, unparsed replies"),
    )

    def run(self, ctx: NodeContext, params: JudgeParams, answer: Answer, llm: LLMSpec,
            query: Query | str | None = None) -> dict[str, Any]:
        question = query.original or query.text if isinstance(query, Query) else (query or "")

        def ask_model(system: str, user: str) -> str:
            return ask(ctx, llm, system, user, purpose="judge",
                       max_tokens=params.max_reply_tokens)

        judgement = judge_answer(ask_model, question, answer, params.max_chars_per_chunk)
        for item in judgement["unparsed"]:
            ctx.warn(f"unreadable judge reply for {item['metric']}: {item['reply'][:80]!r}")
        ctx.note(faithfulness=judgement["faithfulness"],
                 answer_relevance=judgement["answer_relevance"])
        return {"answer": answer, "judgement": judgement}
