"""Self-check (is the answer supported by the evidence?), fallback answer, answer merge.

Typical loop: ``check.support``'s ``unsupported`` output goes back to the query transform's
(or the prompt builder's) ``feedback`` port through an edge with
``"loop": {"max_iterations": N}``, and also forward to ``answer.fallback``. While fewer than N
loops have run, the engine takes the loop-back edge and re-runs from its target; once the
bound is reached, ``unsupported`` follows its ordinary edges to the fallback. An
``answer.select`` node merges the ``supported`` and fallback branches.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.guard import NO_EVIDENCE
from modrag_nodes.generation.llm_call import SamplingAware, ask
from modrag_nodes.generation.messy_parsing import parse_yes_no
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.core.node import (
    Answer,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

CHECK_PROMPT = (
    "Evidence:\n{evidence}\n\nAnswer to check:\n{answer}\n\n"
    "Is every statement of the answer supported by the evidence? Reply with one word, "
    "yes or no.\nVerdict:"
)
CHECK_SYSTEM = "You check answers against evidence. You reply with yes or no."


class CheckParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(CHECK_PROMPT, json_schema_extra={"multiline": True},
                        description="Judge prompt ({evidence}, {answer}, {question})")
    system: str = Field(CHECK_SYSTEM, description="System instructions for the judge")
    unreadable_as: Literal["supported", "unsupported"] = Field(
        "unsupported", description="Verdict when the judge's reply has no yes or no")
    max_reply_tokens: int = Field(24, ge=1, description="Token cap of the judge's reply")
    max_chars_per_chunk: int = Field(800, ge=50, description="Evidence text shown per chunk")
    check_against: Literal["cited_then_all", "cited", "all"] = Field(
        "cited_then_all",
        description="Evidence shown to the judge: cited: the chunks the answer cites (all of "
                    "them when it cites none); cited_then_all: those, and when the judge says "
                    "no, every chunk (an answer that cites the wrong block but is supported "
                    "passes, with a warning; small models often cite a neighbouring block); "
                    "all: every evidence chunk")
    pass_fallback_answers: bool = Field(
        True, description="A fallback answer (fallback=True) claims nothing: pass it as "
                          "supported without asking")


class SupportCheck(SamplingAware, NodeType):
    type_id = "check.support"
    key_params = ("check_against",)
    evidence_role = EvidenceRole("passes", inputs=("answer",), checks_answer=True)
    title = "Self-check"
    category = "Checks"
    description = (
        "Asks the model whether the answer is supported by the evidence; emits it on "
        "'supported' or 'unsupported' (loop 'unsupported' back to rewrite or the prompt)."
    )
    routes = True
    Params = CheckParams
    inputs = (
        InputPort("answer", Answer, description="The answer to check"),
        InputPort("llm", LLMSpec, description="The judge model"),
        InputPort("evidence", list[ScoredChunk], required=False,
                  description="Evidence to check against (else the answer's own)"),
    )
    outputs = (
        OutputPort("supported", Answer, "The answer, when the judge says yes"),
        OutputPort("unsupported", Answer, "The answer, when the judge says no"),
    )

    def run(self, ctx: NodeContext, params: CheckParams, answer: Answer, llm: LLMSpec,
            evidence: list[ScoredChunk] | None = None) -> dict[str, Any]:
        attempt = ctx.iteration + 1
        if answer.fallback and params.pass_fallback_answers:
            ctx.note(attempt=attempt, verdict="supported", route="supported",
                     reason="fallback answer: nothing to check")
            return {"supported": answer}
        items = evidence if evidence is not None else answer.evidence
        if not items:
            ctx.note(attempt=attempt, verdict="unsupported", route="unsupported",
                     reason="no evidence to support the answer")
            return {"unsupported": answer}
        shown = _shown_evidence(items, answer, params.check_against)
        verdict, reply = _judge(ctx, params, llm, answer, shown)
        replies = [reply]
        checked = [n for n, _ in shown]
        wrong_block = False
        if (verdict is False and params.check_against == "cited_then_all"
                and len(shown) < len(items)):
            everything = list(enumerate(items, start=1))
            verdict, reply = _judge(ctx, params, llm, answer, everything)
            replies.append(reply)
            wrong_block = verdict is True
            checked = [n for n, _ in everything]
        if verdict is None:
            port = params.unreadable_as
            ctx.warn(f"the judge's reply has no yes or no; treated as {port}")
            reason = f"unreadable reply, param 'unreadable_as' = {port}"
        else:
            port = "supported" if verdict else "unsupported"
            reason = f"the judge said {'yes' if verdict else 'no'}"
        if wrong_block:
            cited = ", ".join(f"[{n}]" for n, _ in shown)
            reason = (f"the cited block(s) {cited} do not support the answer, the whole "
                      "evidence does")
            ctx.warn(f"the answer cites {cited}, but its support is elsewhere in the evidence")
        ctx.note(attempt=attempt, verdict=port, route=port, reason=reason,
                 checked_blocks=checked, judge_replies=replies)
        return {port: answer}


def _judge(ctx: NodeContext, params: CheckParams, llm: LLMSpec, answer: Answer,
           shown: list[tuple[int, ScoredChunk]]) -> tuple[bool | None, str]:
    """One judge call on the ``shown`` blocks: its verdict, True (yes), False (no) or None
    (unreadable), and its reply."""
    blocks = "\n\n".join(
        f"[{n}] ({item.doc_id}) {_clip(item.chunk.text, params.max_chars_per_chunk)}"
        for n, item in shown)
    prompt = (params.prompt.replace("{evidence}", blocks)
              .replace("{answer}", answer.text).replace("{question}", answer.query))
    reply = ask(ctx, llm, params.system, prompt, purpose="judge",
                max_tokens=params.max_reply_tokens)
    return parse_yes_no(reply), reply


def _shown_evidence(items: list[ScoredChunk], answer: Answer,
                    mode: str) -> list[tuple[int, ScoredChunk]]:
    """The evidence blocks the judge sees, keeping their numbers so the answer's ``[n]`` still
    point at them: the cited ones (all when none of the citations names a given chunk)."""
    numbered = list(enumerate(items, start=1))
    if mode == "all":
        return numbered
    cited = {c.chunk_id for c in answer.citations if c.valid and c.chunk_id}
    picked = [(n, item) for n, item in numbered if item.chunk.chunk_id in cited]
    return picked or numbered


class FallbackParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(NO_EVIDENCE, description="The fallback answer's text")


class FallbackAnswer(NodeType):
    type_id = "answer.fallback"
    title = "Fallback answer"
    category = "Checks"
    description = "Turns whatever arrives into a fixed answer marked fallback=True."
    Params = FallbackParams
    inputs = (InputPort("trigger", Any, description="Any value; its arrival triggers"),)
    outputs = (OutputPort("answer", Answer, "The fixed fallback answer"),)

    def run(self, ctx: NodeContext, params: FallbackParams, trigger: Any) -> dict[str, Any]:
        question = ""
        if isinstance(trigger, Query):
            question = trigger.original or trigger.text
        elif isinstance(trigger, Answer):
            question = trigger.query
        elif isinstance(trigger, str):
            question = trigger
        evidence = trigger.evidence if isinstance(trigger, Answer) else []
        ctx.note(triggered_by=type(trigger).__name__)
        return {"answer": Answer(text=params.message, fallback=True, query=question,
                                 evidence=evidence)}


class SelectAnswer(NodeType):
    type_id = "answer.select"
    evidence_role = EvidenceRole("passes")
    title = "Select answer"
    category = "Checks"
    description = "Merges branches: outputs the primary answer if it arrived, else the fallback."
    inputs = (
        InputPort("primary", Answer, required=False, description="Preferred answer"),
        InputPort("fallback", Answer, required=False, description="Used when no primary"),
    )
    outputs = (OutputPort("answer", Answer, "Whichever answer arrived"),)

    def run(self, ctx: NodeContext, params: Any, primary: Answer | None = None,
            fallback: Answer | None = None) -> dict[str, Any]:
        if primary is not None:
            ctx.note(selected="primary")
            return {"answer": primary}
        if fallback is not None:
            ctx.note(selected="fallback")
            return {"answer": fallback}
        raise ValueError("neither input 'primary' nor input 'fallback' received an answer "
                         "(both upstream branches were inactive)")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
