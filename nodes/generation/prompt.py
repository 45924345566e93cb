"""Prompt builder: a template, evidence as numbered blocks, a token budget, chat history.

Token estimator (``estimate_tokens``): one token per CJK character plus one per four other
characters, rounded up. It over-counts slightly for English prose with GPT-style and
SmolLM2 tokenizers, so a prompt within the budget fits the model's context in practice.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.llm.client import LLMSpec
from modrag_nodes.text.scripts import cjk_count, language_of
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    Answer,
    ChatMessage,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OptionalFilePath,
    OutputPort,
    Prompt,
    Query,
    ScoredChunk,
    resolve_path,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

CitationStyle = Literal["doc_id", "number"]
Preset = Literal["rich", "small_model", "auto"]
EvidenceFormat = Literal["header", "plain"]

DEFAULT_SYSTEM = (
    "You answer questions using only the evidence given below the question. "
    "If the evidence does not contain the answer, say that the evidence does not say, "
    "and do not guess. {citation_instruction}"
)
DEFAULT_TEMPLATE = "Evidence:\n{evidence}\n\nQuestion: {original}\n\nAnswer:"
CITATION_INSTRUCTIONS = {
    "doc_id": "After each statement, cite the evidence it comes from by its document id in "
              "square brackets, for example [{example}].",
    "number": "After each statement, cite the evidence it comes from by its block number in "
              "square brackets, for example [1].",
}
REFUSAL = "The evidence does not say."
# Measured with Qwen2.5-Coder-1.5B on basic_rag: "reply only: <refusal> if the evidence does
# not answer" made it refuse 9 of 26 English questions whose evidence was in the prompt;
# answering from the evidence first and refusing only when no block is about the question
# answered 7 of those 9. The answer pattern after the question keeps its citations (a plain
# "cite like [1]" reminder lost the citation of the LP-07 answer).
SMALL_SYSTEM = (
    "Answer the question from the numbered evidence. Write a short answer that states the "
    "facts the evidence gives, and after each sentence the number of the evidence block it "
    "comes from in square brackets, like [1] or [2]. Use only facts stated in the evidence. "
    f"If no evidence block is about the question, reply only: {REFUSAL} "
    "Answer in the language of the question."
)
SMALL_TEMPLATE = ("Evidence:\n{evidence}\n\nQuestion: {original}\n\n"
                  "Write the answer as: <sentence with the facts> [block number]")
SMALL_FAMILIES = re.compile(
    r"smollm|qwen|phi|gemma|llama-?3\.2|tinyllama|(?<![0-9.])(0\.[0-9]+|[1-4](\.[0-9])?)b\b",
    re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
BUILTIN_VARIABLES = ("question", "evidence", "history", "citation_instruction", "original")


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: CJK characters count one each, the rest one per 4."""
    cjk = cjk_count(text)
    return cjk + math.ceil((len(text) - cjk) / 4)


def render_template(template: str, variables: dict[str, str], *, where: str) -> str:
    """Replace ``{name}`` placeholders; ``{{``/``}}`` give literal braces; other braces stay.

    An unknown ``{name}`` raises ``NodeConfigError`` naming ``where`` and the known names.
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name not in variables:
            known = ", ".join("{" + n + "}" for n in sorted(variables))
            raise NodeConfigError(f"{where}: unknown variable {{{name}}} (known: {known})")
        return variables[name]

    return _PLACEHOLDER.sub(replace, template)


def badness(item: ScoredChunk) -> float:
    """Sort key putting the weakest evidence first, whatever the score direction."""
    return item.score if item.higher_is_better else -item.score


def evidence_label(item: ScoredChunk, number: int, style: CitationStyle) -> str:
    return f"[{number}]" if style == "number" else f"[{item.doc_id}]"


def is_small_model(llm: LLMSpec | None) -> bool:
    """Whether ``llm`` is a small local model (embedded, or a small family on a server)."""
    if llm is None:
        return False
    return llm.backend == "embedded" or bool(SMALL_FAMILIES.search(llm.model))


def resolve_preset(preset: Preset, llm: LLMSpec | None) -> Literal["rich", "small_model"]:
    """``auto``: the small-model preset for small models, else the rich one. With no model
    on ``llm`` it is the small-model one: the chat model a graph starts with is embedded (small),
    and small-model prompts read well to large models too, while the rich one misleads small
    ones (they copy its headers)."""
    if preset == "auto":
        return "small_model" if llm is None or is_small_model(llm) else "rich"
    return preset


def render_plain(evidence: list[ScoredChunk]) -> str:
    """``[n] text`` blocks: what small models cite best (no header line for them to copy)."""
    if not evidence:
        return "(no evidence was found)"
    return "\n\n".join(f"[{number}] {item.chunk.text.strip()}"
                        for number, item in enumerate(evidence, start=1))


def render_evidence(evidence: list[ScoredChunk], style: CitationStyle,
                    evidence_format: EvidenceFormat = "header") -> str:
    """Numbered blocks: a header with label, doc id, source, page and score, then the text
    (``plain``: just ``[n] text``)."""
    if evidence_format == "plain":
        return render_plain(evidence)
    if not evidence:
        return "(no evidence was found)"
    blocks = []
    for number, item in enumerate(evidence, start=1):
        chunk = item.chunk
        fields = [] if style == "doc_id" else [f"doc_id: {chunk.doc_id}"]
        source = chunk.source or str(chunk.metadata.get("source", ""))
        if source:
            fields.append(f"source: {source}")
        page = chunk.metadata.get("page", chunk.metadata.get("page_number"))
        if page not in (None, ""):
            fields.append(f"page: {page}")
        fields.append(f"score: {item.score:.4g}")
        label = evidence_label(item, number, style)
        head = f"Evidence {number} {label}" if style == "doc_id" else label
        blocks.append(f"{head} " + " | ".join(fields) + "\n" + chunk.text.strip())
    return "\n\n".join(blocks)


def render_history(history: list[ChatMessage]) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in history)


class PromptParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    preset: Preset = Field(
        "rich", description="rich: the template and system below, evidence headers with doc "
        "id, source and score; small_model: plain [n] text evidence, [n] citations and a "
        "fixed refusal sentence (small models copy headers and seldom refuse); auto: "
        "small_model for embedded or small models on 'llm' (or none connected), rich for a "
        "large one (new nodes in the studio start on auto)")
    template: str = Field(
        DEFAULT_TEMPLATE,
        description="User message template; variables {original} (the user's question), "
                    "{question} (the query as transformed for retrieval), {evidence}, "
                    "{history} and the names in 'variables'; {{ and }} give literal braces",
        json_schema_extra={"multiline": True},
    )
    template_file: OptionalFilePath = Field(
        None, description="Read the user message template from this UTF-8 file instead"
    )
    system: str = Field(
        DEFAULT_SYSTEM, description="System instructions (same variables as the template)",
        json_schema_extra={"multiline": True},
    )
    variables: dict[str, str] = Field(
        default_factory=dict, description="Extra template variables by name"
    )
    citation_style: CitationStyle = Field(
        "doc_id", description="Cite as [doc_id] or as [n] (the evidence block number)"
    )
    context_budget_tokens: int | None = Field(
        1700, ge=64, description="Estimated tokens the whole prompt may use; the lowest-scored "
                                 "evidence is dropped first until it fits (empty: no limit). "
                                 "With 'llm' connected, at most its context minus max tokens"
    )
    max_evidence: int | None = Field(None, ge=0, description="Use at most this many blocks")
    max_history_messages: int = Field(
        6, ge=0, description="Most recent history messages kept (0: ignore history)"
    )
    feedback_instruction: str = Field(
        "A previous answer to this question was judged not supported by the evidence:\n"
        "{feedback}\nWrite a new answer that states only what the evidence supports.",
        description="Appended to the user message when a 'feedback' answer arrives "
                    "(a self-check loop); {feedback} is that answer's text, {ungrounded} "
                    "the claims a grounding check found in no evidence block, {reason} "
                    "why the check sent it back",
    )
    answer_language: Literal["any", "question"] = Field(
        "any", description="question: end the user message with an instruction, in the "
                           "question's language, to answer in that language")


class PromptBuilder(NodeType):
    type_id = "prompt.build"
    key_params = ("preset", "max_evidence")
    evidence_role = EvidenceRole("prompt", top_param="context_budget_tokens", inputs=("evidence",))
    title = "Prompt builder"
    category = "Generation"
    description = (
        "Renders a chat prompt from a template: the question, evidence as numbered blocks with "
        "doc id, source, page and score, citation and answer-only-from-evidence instructions, "
        "optional chat history; drops the lowest-scored evidence to fit a token budget."
    )
    Params = PromptParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("evidence", list[ScoredChunk], required=False,
                  description="Retrieved chunks to answer from"),
        InputPort("history", list[ChatMessage], required=False,
                  description="Earlier turns of the conversation"),
        InputPort("feedback", Answer, required=False,
                  description="An answer judged unsupported (loop-back from a self-check)"),
        InputPort("llm", LLMSpec, required=False,
                  description="The model that will answer: caps the budget to its context"),
    )
    outputs = (OutputPort("prompt", Prompt, "Chat messages plus the evidence used"),)

    @classmethod
    def new_node_params(cls) -> dict[str, Any]:
        return {"preset": "auto"}

    def fingerprint(self, params: PromptParams, inputs: dict[str, Any],
                    run_inputs: dict[str, Any]) -> str | None:
        if params.template_file is None:
            return None
        return stable_hash(_read_template(params.template_file))

    def run(self, ctx: NodeContext, params: PromptParams, query: Query,
            evidence: list[ScoredChunk] | None = None,
            history: list[ChatMessage] | None = None,
            feedback: Answer | None = None, llm: LLMSpec | None = None) -> dict[str, Any]:
        template = (_read_template(params.template_file) if params.template_file
                    else params.template)
        preset = resolve_preset(params.preset, llm)
        style: CitationStyle = params.citation_style
        evidence_format: EvidenceFormat = "header"
        system_text = params.system
        if preset == "small_model":
            style, evidence_format = "number", "plain"
            if not params.template_file and template == DEFAULT_TEMPLATE:
                template = SMALL_TEMPLATE
            if system_text == DEFAULT_SYSTEM:
                system_text = SMALL_SYSTEM
        where = "param 'template_file'" if params.template_file else "param 'template'"
        clash = sorted(set(params.variables) & set(BUILTIN_VARIABLES))
        if clash:
            raise NodeConfigError(f"param 'variables': {', '.join(clash)} are built-in names")
        kept = list(evidence or [])
        dropped: list[ScoredChunk] = []
        if params.max_evidence is not None and len(kept) > params.max_evidence:
            for item in sorted(kept, key=badness)[: len(kept) - params.max_evidence]:
                kept.remove(item)
                dropped.append(item)
        turns = list(history or [])[-params.max_history_messages:] \
            if params.max_history_messages else []
        inline_history = "{history}" in template or "{history}" in system_text

        def build(items: list[ScoredChunk]) -> list[ChatMessage]:
            values = {
                "question": query.text,
                "original": query.original or query.text,
                "evidence": render_evidence(items, style, evidence_format),
                "history": render_history(turns) if turns else "(no earlier messages)",
                **params.variables,
            }
            example = items[0].doc_id if items else "doc_id"
            values["citation_instruction"] = CITATION_INSTRUCTIONS[style].format(
                example=example)
            system = render_template(system_text, values, where="param 'system'")
            user = render_template(template, values, where=where)
            if feedback is not None:
                user += "\n\n" + _feedback(params.feedback_instruction, feedback)
            if params.answer_language == "question":
                user += "\n\n" + LANGUAGE_LINES[language_of(query.original or query.text)]
            messages = [ChatMessage(role="system", content=system)] if system.strip() else []
            if turns and not inline_history:
                messages.extend(turns)
            messages.append(ChatMessage(role="user", content=user))
            return messages

        messages = build(kept)
        tokens = _count(messages)
        budget = params.context_budget_tokens
        if llm is not None:
            room = max(64, llm.context_length - llm.max_tokens)
            budget = room if budget is None else min(budget, room)
        while budget is not None and tokens > budget and kept:
            weakest = min(kept, key=badness)
            kept.remove(weakest)
            dropped.append(weakest)
            messages = build(kept)
            tokens = _count(messages)
        if budget is not None and tokens > budget:
            ctx.warn(f"prompt needs about {tokens} tokens without any evidence, more than the "
                     f"budget of {budget} (param 'context_budget_tokens' or the model's context)")
        dropped_ids = [item.chunk_id for item in dropped]
        ctx.note(token_estimate=tokens, budget=budget, evidence_used=len(kept),
                 dropped=dropped_ids, citation_style=style, preset=preset,
                 history_messages=len(turns), feedback=feedback is not None)
        if dropped:
            ctx.note(dropped_reason="lowest-scored evidence dropped first to fit the budget")
        return {"prompt": Prompt(messages=messages, evidence=kept, dropped=dropped_ids,
                                 token_estimate=tokens)}


LANGUAGE_LINES = {"en": "Answer in English.", "zh": "请用中文回答。"}


def _feedback(instruction: str, feedback: Answer) -> str:
    named = [c.text for c in feedback.claims if c.verdict in ("missing", "mismatch")] or [
        c.text for c in feedback.claims if c.verdict == "evidence"]
    named += [f"“{t}”" for t in feedback.absent_terms]
    return (instruction.replace("{feedback}", feedback.text)
            .replace("{ungrounded}", ", ".join(dict.fromkeys(named)) or "(none named)")
            .replace("{reason}", feedback.check_reason or "it is not supported by the evidence"))


def _count(messages: list[ChatMessage]) -> int:
    # about 4 tokens of chat-template overhead per message
    return sum(estimate_tokens(m.content) + 4 for m in messages)


def _read_template(path: str) -> str:
    file = resolve_path(path)
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NodeConfigError(f"param 'template_file': no file at {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NodeConfigError(f"param 'template_file': cannot read {file}: {exc}") from None
