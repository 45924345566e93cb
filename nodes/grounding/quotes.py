"""Supporting quotes (no model call): the sentences of the cited evidence that state what the
answer says, appended to the answer verbatim.

A small model restates its evidence in its own words ("纽西兰鸡毛松的高度可达55米" for the
document's "树高可达55米"), so a reader cannot see at a glance which words of the document
carry the answer. ``answer.quote`` picks, in the blocks the answer cites, the sentences that
hold most of the answer's own words (those the question does not already hold), greedily, up
to ``max_quotes``, joins neighbouring sentences of one block into one quote, and appends each
as a line ``> “…” [n]``. An answer whose words no cited sentence holds gets no quote (a quote
must show where the answer comes from, not what the question resembles); a refusal or a
fallback answer gets none; a sentence the answer already copies whole is not quoted again.
Typical wiring: ``answer.select -> answer.quote -> graph.output``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.fact_match import is_refusal
from modrag_nodes.grounding.sentences import cited_blocks
from modrag_nodes.ingest.spans import sentence_spans
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.numbers import DECIMAL
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import words
from modrag_studio.engine.core.node import (
    Answer,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

_MARKER = re.compile(r"\[\s*\d+(?:\s*[,，、]\s*\d+)*\s*\]")


class QuoteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_quotes: int = Field(2, ge=1, le=6, description="Quotes appended at most")
    min_share: float = Field(
        0.4, ge=0.0, le=1.0,
        description="Share of the answer's own words (those not in the question) the quoted "
                    "sentences must hold together; below it, no quote")
    quote_format: str = Field("> “{quote}” [{block}]",
                              description="One quote line ({quote}, {block}: the block number)")


@dataclass(frozen=True)
class Quote:
    """A span of one evidence block: its 1-based block number and the text, verbatim."""

    block: int
    text: str
    start: int
    end: int


def tokens(text: str) -> set[str]:
    """Latin words (no stop words, case-folded), numbers, CJK bigrams (a lone CJK character
    as itself), of the normalised ``text`` without citation markers."""
    stop = english_stopwords()
    return {w for w in words(_MARKER.sub(" ", text)) if w not in stop
            and not (len(w) == 1 and w.isascii() and w.isalpha())}


def pick_quotes(answer_text: str, question: str, blocks: dict[int, str], *,
                max_quotes: int = 2, min_share: float = 0.4) -> list[Quote]:
    """The sentences of ``blocks`` (number -> text) that together hold at least
    ``min_share`` of the answer's own words (and one of its numbers, if it states any),
    picked greedily (most new words first, up to
    ``max_quotes``), in block and text order, neighbours of one block joined; [] when the
    answer has no words of its own or the sentences hold too few of them."""
    own = tokens(answer_text) - tokens(question)
    if not own:
        return []
    answer_norm = normalise(answer_text)
    numbers = set(DECIMAL.findall(normalise(_MARKER.sub(" ", answer_text))))
    # (block, sentence index, start, end, the answer's own words it holds)
    candidates: list[tuple[int, int, int, int, set[str]]] = []
    for number, text in blocks.items():
        for index, (start, end) in enumerate(sentence_spans(text)):
            sentence = normalise(text[start:end])
            if sentence in answer_norm:
                continue  # the answer copies this sentence already
            if numbers and not numbers & set(DECIMAL.findall(sentence)):
                continue  # the answer's numbers are what a quote must show
            candidates.append((number, index, start, end, tokens(text[start:end]) & own))
    chosen: list[tuple[int, int, int, int]] = []
    covered: set[str] = set()
    while len(chosen) < max_quotes and candidates:
        best = max(candidates, key=lambda c: (len(c[4] - covered), -c[0], -c[2]))
        gain = best[4] - covered
        if len(gain) < max(2, len(own) // 10):
            break
        chosen.append(best[:4])
        covered |= gain
        candidates.remove(best)
    if len(covered) < min_share * len(own):
        return []
    return _joined(sorted(chosen), blocks)


def _joined(chosen: list[tuple[int, int, int, int]], blocks: dict[int, str]) -> list[Quote]:
    """Quotes of the chosen sentences (block, sentence index, start, end), each run of
    neighbouring sentences of one block as one span."""
    quotes: list[Quote] = []
    previous: tuple[int, int] | None = None  # (block, sentence index) of the last one
    for number, index, start, end in chosen:
        if previous == (number, index - 1):
            last = quotes[-1]
            quotes[-1] = Quote(number, blocks[number][last.start:end], last.start, end)
        else:
            quotes.append(Quote(number, blocks[number][start:end], start, end))
        previous = (number, index)
    return quotes


class SupportingQuotes(NodeType):
    type_id = "answer.quote"
    evidence_role = EvidenceRole("passes", inputs=("answer",))
    title = "Supporting quotes"
    category = "Checks"
    description = ("Appends, verbatim, the sentences of the cited evidence that state what the "
                   "answer says (no model call), so a reader sees the document's own words.")
    Params = QuoteParams
    inputs = (
        InputPort("answer", Answer, description="The answer, with its citations and evidence"),
        InputPort("query", Query, required=False,
                  description="The question (its words are not the answer's own)"),
    )
    outputs = (OutputPort("answer", Answer, "The answer with its supporting quotes appended"),)

    def run(self, ctx: NodeContext, params: QuoteParams, answer: Answer,
            query: Query | None = None) -> dict[str, Any]:
        if answer.fallback or is_refusal(answer):
            ctx.note(quotes=[], reason="a refusal states nothing to quote")
            return {"answer": answer}
        question = (query.original or query.text) if query is not None else answer.query
        blocks = {n: answer.evidence[n - 1].chunk.text
                  for n in sorted(cited_blocks(answer, answer.evidence))}
        quotes = pick_quotes(answer.text, question, blocks, max_quotes=params.max_quotes,
                             min_share=params.min_share)
        ctx.note(quotes=[{"block": q.block, "text": q.text} for q in quotes],
                 cited_blocks=sorted(blocks))
        if not quotes:
            return {"answer": answer}
        lines = [params.quote_format.format(quote=" ".join(q.text.split()), block=q.block)
                 for q in quotes]
        added = "\n\n" + "\n".join(lines)
        return {"answer": answer.model_copy(update={
            "text": answer.text.rstrip() + added, "appended": [*answer.appended, added]})}
