"""Answer in the question's language: translate an answer the model wrote in another one.

Small models answer a Chinese question in English when the evidence that holds the answer is
English, and asked again with the whole prompt they write the same English answer (measured
with Qwen2.5-Coder-1.5B on the demo corpus). Asked only to translate their one-sentence
answer, they do, in a short call (a prompt of about 70 tokens instead of about 900).

The translation is kept only when it is in the question's language and keeps every block
number, identifier and number of the answer; otherwise the answer goes on unchanged and the
trace says why (a grounding check after this node then sends it back as before). It runs
before the grounding check, so the check judges the text the user will read.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.llm_call import SamplingAware, ask, require_llm
from modrag_nodes.generation.parser import extract_citations
from modrag_nodes.grounding.claims import (
    Block,
    claim_found,
    extract_claims,
)
from modrag_nodes.llm.client import LLMSpec
from modrag_nodes.text.scripts import language_of
from modrag_studio.engine.core.node import (
    Answer,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

#: The translation request, by the question's language; {answer} is the answer's text.
TRANSLATE_PROMPTS = {
    "zh": "把下面这段话翻译成中文。保留型号、编号、数字和方括号中的块编号不变。只输出译文。"
          "\n\n{answer}",
    "en": "Translate the text below into English. Keep model names, codes, numbers and the "
          "block numbers in square brackets unchanged. Output only the translation."
          "\n\n{answer}",
}
_BLOCK = re.compile(r"\[(\d{1,3})\]")


class TranslateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompts: dict[str, str] = Field(
        default_factory=lambda: dict(TRANSLATE_PROMPTS),
        description="Translation request by the question's language (en, zh); {answer} is "
                    "the answer's text. A language without a prompt is left as it is")
    max_reply_tokens: int = Field(200, ge=8, description="Token cap of the translation")


class TranslateAnswer(SamplingAware, NodeType):
    type_id = "answer.translate"
    evidence_role = EvidenceRole("passes", inputs=("answer",))
    title = "Answer in the question's language"
    category = "Generation"
    description = ("Translates an answer written in another language than the question's "
                   "(a short model call); keeps it only when every block number, identifier "
                   "and number survives.")
    Params = TranslateParams
    inputs = (
        InputPort("answer", Answer, description="The parsed answer"),
        InputPort("llm", LLMSpec, description="The model that translates"),
        InputPort("query", Query, required=False,
                  description="The question (else the answer's own question)"),
    )
    outputs = (OutputPort("answer", Answer, "The answer in the question's language, or as "
                          "it came"),)

    def run(self, ctx: NodeContext, params: TranslateParams, answer: Answer, llm: LLMSpec,
            query: Query | None = None) -> dict[str, Any]:
        question = (query.original or query.text) if query is not None else answer.query
        if answer.fallback or not question.strip() or not answer.text.strip():
            ctx.note(translated=False, reason="nothing to translate")
            return {"answer": answer}
        language = language_of(question)
        written_in = language_of(answer.text)
        prompt = params.prompts.get(language, "")
        if written_in == language or not prompt.strip():
            ctx.note(translated=False, language=language,
                     reason=f"the answer is in {written_in}"
                     + ("" if written_in == language else "; no prompt for that language"))
            return {"answer": answer}
        llm = require_llm(llm, "to translate the answer")
        reply = ask(ctx, llm, "", prompt.replace("{answer}", answer.text),
                    purpose="translation", max_tokens=params.max_reply_tokens).strip()
        problem = translation_problem(answer.text, reply, language)
        if problem:
            ctx.note(translated=False, language=language, reason=problem)
            ctx.warn(f"the translation into {language} was not used: {problem}")
            return {"answer": answer}
        ctx.note(translated=True, language=language, original=answer.text)
        return {"answer": answer.model_copy(update={
            "text": reply, "citations": extract_citations(reply, answer.evidence),
            "claims": [], "absent_terms": []})}


def translation_problem(original: str, translated: str, language: str) -> str:
    """Why ``translated`` may not replace ``original`` (empty when it may): another language,
    or a block number, identifier or number lost or changed."""
    if not translated:
        return "the reply is empty"
    if language_of(translated) != language:
        return f"the reply is not in {language}"
    if sorted(set(_BLOCK.findall(original))) != sorted(set(_BLOCK.findall(translated))):
        return "the block numbers changed"
    block = Block.of(translated)  # the grounding check's own matcher
    for claim in extract_claims(original):
        if claim.kind in ("identifier", "number", "quantity", "date") and not claim_found(
                claim, block, []):
            return f"“{claim.text}” is not in the translation"
    return ""
