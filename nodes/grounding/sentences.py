"""An answer's sentences, as the grounding check rewrites them: its ``[n]`` citations moved
to the block that states a sentence's claims (a number no block has: or writes its words) or
added where it cites nothing, and its sentences cut when no evidence backs what they state
(after a backed first sentence, or beside a refusal, which is not checked)."""

from __future__ import annotations

import re
from collections.abc import Callable

from modrag_nodes.generation.fact_match import is_refusal
from modrag_nodes.generation.parser import extract_citations
from modrag_nodes.grounding.claims import Block, claim_found, key_terms, term_present
from modrag_nodes.text.normalise import normalise as flat
from modrag_nodes.text.scripts import cjk_count
from modrag_nodes.text.words import contains_phrase
from modrag_studio.engine.core.node import Answer, Claim, ScoredChunk

SENTENCE = re.compile(r"[^.!?。！？\n]+(?:[.!?。！？]+(?:\s*\[\d{1,3}\])*)?")
_NUMBERED = re.compile(r"\[(\d{1,3})\]")
_CITATION_RUN = re.compile(r"\[\d{1,3}\](?:\s*\[\d{1,3}\])*")
MIN_WRITTEN = 2  # words of a claimless sentence a block must write to take its wrong [n]


def repoint_citations(text: str, claims: list[Claim], blocks: list[Block],
                      aliases: list[set[str]],
                      derived: set[int] | None = None) -> tuple[str, list[str]]:
    """``text`` with a sentence's ``[n]`` citations moved to the first block that holds all
    of the sentence's claims, when some claim is not in the blocks it cites, or when it cites
    only ``derived`` blocks (the knowledge graph's facts, written from the documents: a
    document that says the same is the citation a reader can open)."""
    derived = derived or set()

    def targets(start: int, end: int, sentence: str, refs: list[int]) -> list[int]:
        mine = [c for c in claims if start <= c.start < end and c.verdict != "question"]
        if not (any(c.verdict == "evidence" for c in mine) or mine and set(refs) <= derived):
            return []
        holders = [n for n, block in enumerate(blocks, start=1) if n not in derived
                   and all(claim_found(c, block, aliases) for c in mine)]
        if any(n in refs for n in holders):
            return []
        return holders[:1] or (_covering_blocks(mine, blocks, aliases, derived)
                               if set(refs) <= derived else [])

    return _recite(text, targets)


def renumber_invalid(text: str, claims: list[Claim], blocks: list[Block],
                     aliases: list[set[str]], derived: set[int] | None = None,
                     question: str = "") -> tuple[str, list[str]]:
    """``text`` with each sentence that cites only block numbers the evidence does not have
    ([2] beside one block) citing instead the block that backs it: the first text block that
    holds all its claims, or, for a sentence without claims, the one text block that writes
    more than half (and ``MIN_WRITTEN`` or more) of the content words it adds to
    ``question``, and more of them than any other block. A sentence no block backs keeps its
    numbers (and the answer stays uncited)."""
    derived = derived or set()
    asked, asked_terms = flat(question), set(key_terms(question))
    texts = [n for n in range(1, len(blocks) + 1) if n not in derived]

    def targets(start: int, end: int, sentence: str, refs: list[int]) -> list[int]:
        if any(1 <= n <= len(blocks) for n in refs):
            return []
        mine = [c for c in claims if start <= c.start < end and c.verdict != "question"]
        if mine:
            return [n for n in texts
                    if all(claim_found(c, blocks[n - 1], aliases) for c in mine)][:1]
        added = [t for t in key_terms(_CITATION_RUN.sub(" ", sentence))
                 if t not in asked_terms and not contains_phrase(asked, t)]
        return _writing_block(added, blocks, texts, aliases)

    return _recite(text, targets)


def _recite(text: str, targets: Callable[[int, int, str, list[int]], list[int]]
            ) -> tuple[str, list[str]]:
    """``text`` with the citation run of each sentence that cites blocks replaced by the
    blocks ``targets(start, end, sentence, cited)`` names (none: the sentence unchanged),
    and the moves made ("[2] -> [1]")."""
    out, moves, last = [], [], 0
    for match in SENTENCE.finditer(text):
        start, end = match.span()
        sentence = text[start:end]
        refs = [int(n) for n in _NUMBERED.findall(sentence)]
        chosen = targets(start, end, sentence, refs) if refs else []
        if not chosen:
            continue
        cites = "".join(f"[{n}]" for n in chosen)
        out.append(text[last:start] + _CITATION_RUN.sub(cites, sentence))
        last = end
        moves.append(f"{'/'.join(f'[{r}]' for r in refs)} -> {cites}")
    out.append(text[last:])
    return "".join(out), moves


def _writing_block(terms: list[str], blocks: list[Block], texts: list[int],
                   aliases: list[set[str]]) -> list[int]:
    """[n] of the one block of ``texts`` that writes more than half of ``terms`` (and
    ``MIN_WRITTEN`` or more) and more of them than any other; [] when none does."""
    counts = {n: sum(term_present(t, [blocks[n - 1]], aliases) for t in terms) for n in texts}
    ranked = sorted(counts.items(), key=lambda pair: -pair[1])
    if not ranked or 2 * ranked[0][1] <= len(terms) or ranked[0][1] < MIN_WRITTEN:
        return []
    if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
        return []
    return [ranked[0][0]]


def cite_uncited(text: str, claims: list[Claim], blocks: list[Block],
                 aliases: list[set[str]], derived: set[int] | None = None
                 ) -> tuple[str, list[str]]:
    """``text`` (which cites nothing) with ``[n]`` after each sentence whose claims are all
    written in block n (the first such text block; else up to three blocks that state them
    between them): the check cites what it verified, and says so. Nothing is added unless
    every sentence with claims gets its blocks."""
    derived = derived or set()
    inserts: list[tuple[int, str]] = []
    for match in SENTENCE.finditer(text):
        start, end = match.span()
        mine = [c for c in claims if start <= c.start < end and c.verdict != "question"]
        if not mine:
            continue
        holders = [n for n, block in enumerate(blocks, start=1) if n not in derived
                   and all(claim_found(c, block, aliases) for c in mine)]
        targets = holders[:1] or _covering_blocks(mine, blocks, aliases, derived)
        if not targets:
            return text, []
        at = len(text[:end].rstrip())
        inserts.append((at, " " + "".join(f"[{n}]" for n in targets)))
    out = text
    for at, cite in reversed(inserts):
        out = out[:at] + cite + out[at:]
    return out, [cite.strip() for _, cite in inserts]


def _covering_blocks(claims: list[Claim], blocks: list[Block], aliases: list[set[str]],
                     derived: set[int], most: int = 3) -> list[int]:
    """At most ``most`` text blocks (not ``derived``) that state all ``claims`` between them,
    chosen greedily (most claims first); [] when they cannot."""
    found = {n: {i for i, c in enumerate(claims) if claim_found(c, block, aliases)}
             for n, block in enumerate(blocks, start=1) if n not in derived}
    left, chosen = set(range(len(claims))), []
    while left and len(chosen) < most:
        best = max(found, key=lambda n: (len(found[n] & left), -n), default=None)
        if best is None or not found[best] & left:
            return []
        chosen.append(best)
        left -= found[best]
    return sorted(chosen) if not left else []


def cited_blocks(answer: Answer, items: list[ScoredChunk]) -> set[int]:
    """Block numbers (1-based) of the evidence the answer's valid citations point at."""
    chunks = {c.chunk_id for c in answer.citations if c.valid and c.chunk_id}
    docs = {c.doc_id for c in answer.citations if c.valid and not c.chunk_id and c.doc_id}
    return {n for n, item in enumerate(items, start=1)
            if item.chunk.chunk_id in chunks or item.doc_id in docs}



def with_text(answer: Answer, text: str, items: list[ScoredChunk]) -> Answer:
    """``answer`` with ``text`` instead of its own and the citations that text makes."""
    citations = extract_citations(text, items)
    return answer.model_copy(update={
        "text": text, "citations": citations,
        "invalid_citations": [c.ref for c in citations if not c.valid]})


def declined_sentences(text: str, unbacked: list[Claim]) -> tuple[str, list[str]]:
    """A refusal ``text`` without its sentences that do not decline but hold an ``unbacked``
    claim, and those sentences (("", []) when there is none)."""
    spans, holding = _holding(text, unbacked)
    bad = [hold and not is_refusal(text[a:b])
           for (a, b), hold in zip(spans, holding, strict=True)]
    return _kept(text, spans, bad) if any(bad) else ("", [])


def unbacked_sentences(text: str, unbacked: list[Claim]) -> tuple[str, list[str]]:
    """``text`` without its sentences after the first that hold an ``unbacked`` claim, and
    those sentences; ("", []) when the first sentence holds one (the answer itself is not
    backed) or no later sentence does."""
    spans, bad = _holding(text, unbacked)
    if not spans or bad[0] or not any(bad):
        return "", []
    return _kept(text, spans, bad)


def _holding(text: str, claims: list[Claim]) -> tuple[list[tuple[int, int]], list[bool]]:
    """``text``'s sentences as (start, end), and whether each holds one of ``claims``."""
    spans = [(m.start(), m.end()) for m in SENTENCE.finditer(text) if m.group().strip()]
    return spans, [any(a <= c.start < b for c in claims) for a, b in spans]


def _kept(text: str, spans: list[tuple[int, int]], bad: list[bool]) -> tuple[str, list[str]]:
    """``text`` of the ``spans`` not ``bad``, and the ``bad`` ones, each stripped."""
    pieces = [(text[a:b].strip(), drop) for (a, b), drop in zip(spans, bad, strict=True)]
    kept = ""
    for piece, drop in pieces:
        if not drop:  # Chinese sentences follow each other without a space
            kept += (" " if kept and not cjk_count(kept[-1]) and not cjk_count(piece[0])
                     else "") + piece
    return kept, [piece for piece, drop in pieces if drop]

