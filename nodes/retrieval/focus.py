"""``evidence.focus``: keep the sentences of each evidence chunk that are about the question.

A retrieved chunk is written for a document, not for one question: the chunk that answers
"How often is HP-03 serviced?" also holds the service intervals of two other pumps, and the
fused top 5 holds chunks that match a word or two only. A small model reads all of it at the
cost of its prompt processing (most of a local answer's time) and is led astray by the
neighbouring facts. This node cuts each chunk down to the sentences that share the question's
terms, deterministically and without a model call:

- the question's terms are its words (English stop words removed, stemmed) and, for Chinese,
  its character bigrams; with ``graph_terms`` the names in a knowledge-graph facts block
  (``kg.path_text``) count too, so a two-hop question keeps the sentences about the entity
  the graph links it to;
- a sentence scores the sum of its terms' rarity among the evidence sentences (``log(1 +
  N / df)``): an identifier that one sentence holds weighs more than a word every block has;
- a chunk is kept when its best sentence scores at least ``min_share`` of the best sentence
  of all chunks, and then keeps its sentences that score at least ``block_share`` of its own
  best, with its heading line and the ``follow`` sentences after each kept one (prose names
  its subject once: "It is 55 m tall."); a chunk with no kept sentence goes to ``dropped``;
  ``max_tokens`` caps the whole, best sentences first;
- with ``cover_key_terms``, each key term of the question in the grounding check's sense
  (identifiers, content words) that the evidence holds keeps one sentence that holds it, so
  the check's "no evidence block contains 'fitted'" means what it meant before the focus.

When no sentence holds any question term (a question in another language than the evidence,
say), the evidence passes on unchanged and the trace says so: lexical focus cannot judge it.
Graph facts blocks (a chunk a node wrote: ``metadata["derived"]``) pass unchanged. A focused
chunk keeps its ids, offsets and scores; its text is the kept sentences in document order,
and ``metadata["focus"]`` says how much of it was kept, so previews and the evidence
debugger show what the prompt got.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.prompt import estimate_tokens
from modrag_nodes.grounding.claims import Block, compound_terms, key_terms, term_present
from modrag_nodes.ingest.spans import sentence_spans, trim
from modrag_nodes.retrieval.tokenizers import StemmerName, Tokenizer, tokenize
from modrag_studio.engine.core.node import (
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

BRACKETS = ("()", "（）", "《》", "「」", "『』", "“”", "[]", "【】")
MAX_MERGED = 600  # characters: unbalanced brackets do not swallow the rest of a chunk


class FocusParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_share: float = Field(
        0.3, ge=0.0, le=1.0,
        description="A chunk is kept when its best sentence scores at least this share of the "
                    "best sentence of all chunks (0: every chunk with a question term)")
    block_share: float = Field(
        0.2, ge=0.0, le=1.0,
        description="In a kept chunk, a sentence is kept when it scores at least this share "
                    "of the chunk's best sentence (0: every sentence with a question term)")
    graph_terms: bool = Field(True, description="Names in a knowledge-graph facts block count "
                                                "as question terms")
    graph_weight: float = Field(0.5, ge=0.0, le=1.0,
                                description="Weight of a graph-facts term against a term of "
                                            "the question itself")
    follow: int = Field(1, ge=0, le=5,
                        description="Sentences kept after each kept sentence of a chunk (prose "
                                    "names its subject once: 'It is 55 m tall.')")
    cover_key_terms: bool = Field(
        True, description="Keep a sentence for each key term of the question (identifier, "
                          "content word) that the evidence holds and the kept sentences do "
                          "not, so a grounding check's absent terms stay as they were")
    drop_unmatched: bool = Field(True, description="A chunk with no kept sentence goes to "
                                                   "'dropped' (off: it is passed whole)")
    max_tokens: int = Field(0, ge=0, description="Token cap of the kept sentences, best first "
                                                 "(0: none)")
    stemmer: StemmerName = Field("english", description="Stemmer of the question and sentence "
                                                        "words")


class Sentence:
    """One sentence of one chunk, with its terms and score."""

    __slots__ = ("block", "start", "end", "terms", "heading", "score")

    def __init__(self, block: int, start: int, end: int, terms: set[str], heading: bool) -> None:
        self.block, self.start, self.end = block, start, end
        self.terms, self.heading, self.score = terms, heading, 0.0


def focus_texts(question: str, texts: list[str], *, context: Sequence[str] = (),
                params: FocusParams | None = None, **overrides: Any) -> list[str] | None:
    """Each text cut to its sentences about ``question`` (an empty string: none kept), or
    None when no sentence holds a question term. ``context`` texts (graph facts) add their
    terms to the question's at ``graph_weight``; ``overrides`` replace fields of ``params``."""
    params = params or FocusParams()
    if overrides:
        params = FocusParams.model_validate({**params.model_dump(), **overrides})
    min_share, block_share, follow = params.min_share, params.block_share, params.follow
    max_tokens, context_weight = params.max_tokens, params.graph_weight
    tokenizer = Tokenizer(kind="bigram", stopwords="english", stemmer=params.stemmer)
    own = set(tokenize(tokenizer, question))
    wanted = set(own)
    for text in context:
        wanted.update(tokenize(tokenizer, text))
    sentences: list[Sentence] = []
    for block, text in enumerate(texts):
        for start, end in _pieces(text):
            piece = text[start:end]
            heading = piece.startswith("#") and not _in_code(text, start)
            terms = set() if heading else set(tokenize(tokenizer, piece)) & wanted
            sentences.append(Sentence(block, start, end, terms, heading))
    frequency: dict[str, int] = {}
    for sentence in sentences:
        for term in sentence.terms:
            frequency[term] = frequency.get(term, 0) + 1
    count = len(sentences)
    weight = {term: math.log(1 + count / seen) * (1.0 if term in own else context_weight)
              for term, seen in frequency.items()}
    for sentence in sentences:
        sentence.score = sum(weight[term] for term in sentence.terms)
    best = max((s.score for s in sentences), default=0.0)
    if best <= 0:
        return None
    block_best: dict[int, float] = {}
    for sentence in sentences:
        block_best[sentence.block] = max(block_best.get(sentence.block, 0.0), sentence.score)
    kept: set[int] = set()
    used = 0
    for position in sorted(range(count), key=lambda i: -sentences[i].score):
        sentence = sentences[position]
        if sentence.score <= 0:
            break
        top = block_best[sentence.block]
        if top < min_share * best or sentence.score < block_share * top:
            continue
        cost = estimate_tokens(texts[sentence.block][sentence.start:sentence.end])
        if max_tokens and kept and used + cost > max_tokens:
            break
        kept.add(position)
        used += cost
    if params.cover_key_terms:
        kept |= _covering(question, texts, sentences, kept)
    for position in sorted(kept):  # the sentences after a kept one: "It is 55 m tall."
        for after in range(position + 1, min(position + 1 + follow, count)):
            if sentences[after].block != sentences[position].block or sentences[after].heading:
                break
            kept.add(after)
    return [_join(text, [(i, s) for i, s in enumerate(sentences) if s.block == block], kept)
            for block, text in enumerate(texts)]


def _covering(question: str, texts: list[str], sentences: list[Sentence],
              kept: set[int]) -> set[int]:
    """For each key term of the question (the grounding check's: identifiers, content words,
    "head of purchasing") that some sentence holds and no kept one does, the best-scoring
    sentence that holds it: the focus never makes a term the evidence has look absent."""
    terms = [*key_terms(question), *compound_terms(question)]
    if not terms:
        return set()
    blocks = [Block.of(texts[s.block][s.start:s.end]) for s in sentences]
    kept_blocks = [blocks[i] for i in kept]
    added: set[int] = set()
    for term in terms:
        if term_present(term, kept_blocks, []):
            continue
        holding = [i for i, block in enumerate(blocks)
                   if not sentences[i].heading and term_present(term, [block], [])]
        if holding:
            best = max(holding, key=lambda i: sentences[i].score)
            added.add(best)
            kept_blocks.append(blocks[best])
    return added


def _pieces(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``; a span that ends inside brackets or a book title runs on
    to where they close (``《卡拉OK.LIVE！‧台北‧我》``, ``（；「閦」音「触」）``), and a markdown
    heading line is always a piece of its own."""
    pieces: list[tuple[int, int]] = []
    spans = sentence_spans(text)
    position = 0
    while position < len(spans):
        start, end = spans[position]
        while (position + 1 < len(spans) and end - start < MAX_MERGED
               and _open_brackets(text[start:end]) > 0):
            position += 1
            end = spans[position][1]
        position += 1
        line_end = text.find("\n", start, end)
        if text.startswith("#", start) and line_end > 0 and not _in_code(text, start):
            rest = trim(text, line_end, end)
            pieces.append(trim(text, start, line_end))
            if rest[1] > rest[0]:
                pieces.append(rest)
        else:
            pieces.append((start, end))
    return pieces


_FENCE = re.compile(r"^[ ]{0,3}(?:```|~~~)", re.MULTILINE)


def _in_code(text: str, position: int) -> bool:
    """Whether ``position`` of ``text`` stands inside a fenced code block, where a line
    opening with '#' is a comment ("# Assume Python 3.11"), not a heading."""
    return len(_FENCE.findall(text, 0, position)) % 2 == 1


def _open_brackets(piece: str) -> int:
    return sum(piece.count(left) - piece.count(right) for left, right in BRACKETS)


def _join(text: str, own: list[tuple[int, Sentence]], kept: set[int]) -> str:
    """The kept sentences of one text in order, after its first heading; adjacent sentences
    keep the text between them, a gap becomes a line break."""
    chosen = [(i, s) for i, s in own if i in kept]
    if not chosen:
        return ""
    heading = next(((i, s) for i, s in own if s.heading), None)
    if heading is not None and heading[0] < chosen[0][0]:
        chosen.insert(0, heading)
    parts = [text[chosen[0][1].start:chosen[0][1].end]]
    for (i, before), (j, after) in pairwise(chosen):
        parts.append(text[before.end:after.start] if j == i + 1 else "\n")
        parts.append(text[after.start:after.end])
    return "".join(parts)


class FocusEvidence(NodeType):
    type_id = "evidence.focus"
    key_params = ("min_share",)
    evidence_role = EvidenceRole("filters", inputs=("evidence",), outputs=("evidence",),
                                 dropped_port="dropped", noun="the evidence focus",
                                 judges=False)
    title = "Focus the evidence"
    category = "Fusion & rerank"
    description = ("Keeps the sentences of each chunk that share the question's terms "
                   "(rare terms weigh more), so the prompt is shorter and holds fewer "
                   "unrelated facts. No model call.")
    Params = FocusParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("evidence", list[ScoredChunk], description="Ranked evidence, graph facts "
                                                             "included"),
    )
    outputs = (
        OutputPort("evidence", list[ScoredChunk], "The chunks cut to their sentences about "
                                                  "the question, in the same order"),
        OutputPort("dropped", list[ScoredChunk], "Chunks none of whose sentences was kept"),
    )

    def run(self, ctx: NodeContext, params: FocusParams, query: Query,
            evidence: list[ScoredChunk]) -> dict[str, Any]:
        question = query.original or query.text
        # a block a node wrote (kg.path_text's graph facts: metadata "derived", the mark the
        # grounding check reads too) passes unchanged; a chunk of a document is focused, the
        # text chunks kg.search returns with score_kind "graph" included
        derived = [bool(item.chunk.metadata.get("derived")) for item in evidence]
        texts = [item.chunk.text for item, made in zip(evidence, derived, strict=True)
                 if not made]
        facts = [item.chunk.text for item, made in zip(evidence, derived, strict=True) if made]
        focused = focus_texts(question, texts, context=facts if params.graph_terms else [],
                              params=params)
        if focused is None:
            ctx.note(focused=False, reason="no evidence sentence holds a question term")
            return {"evidence": list(evidence), "dropped": []}
        cuts = iter(focused)
        kept: list[ScoredChunk] = []
        dropped: list[ScoredChunk] = []
        shares: dict[str, str] = {}
        before = after = 0
        for item, made in zip(evidence, derived, strict=True):
            if made:
                kept.append(item)
                continue
            text = next(cuts)
            before += len(item.chunk.text)
            if not text and params.drop_unmatched:
                dropped.append(item)
                shares[item.chunk_id] = "dropped"
                continue
            text = text or item.chunk.text
            after += len(text)
            shares[item.chunk_id] = f"{len(text)}/{len(item.chunk.text)} chars"
            kept.append(_with_text(item, text))
        ctx.note(focused=True, kept=len(kept), dropped=len(dropped), chunks=shares,
                 chars_before=before, chars_after=after)
        return {"evidence": kept, "dropped": dropped}


def _with_text(item: ScoredChunk, text: str) -> ScoredChunk:
    if text == item.chunk.text:
        return item
    metadata = {**item.chunk.metadata,
                "focus": {"kept_chars": len(text), "of_chars": len(item.chunk.text)}}
    chunk = item.chunk.model_copy(update={"text": text, "metadata": metadata})
    return item.model_copy(update={"chunk": chunk})
