"""Which chunks questions are written about: usable chunks, sampled across documents
(stratified and seeded, not the first N), and pairs of chunks linked by a shared term."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator

from modrag_nodes.text.scripts import han_count, is_han, language_of
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import words
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.content import share_subject
from modrag_studio.evaluation.generation.terms import key_terms

MIN_CHUNK_CHARS = 80


def text_chars(chunk: Chunk) -> int:
    """Characters of running text (Markdown heading lines and white space left out; a
    Chinese character, which holds about a word, counts three)."""
    body = "\n".join(ln for ln in chunk.text.splitlines() if not ln.lstrip().startswith("#"))
    body = re.sub(r"\s+", "", body)
    return len(body) + 2 * han_count(body)


def usable_chunks(chunks: list[Chunk], language: str = "auto",
                  min_chars: int = MIN_CHUNK_CHARS) -> list[Chunk]:
    """Chunks with enough text to ask about (in ``language`` unless ``auto``)."""
    return [c for c in chunks if text_chars(c) >= min_chars
            and (language == "auto" or language_of(c.text) == language)]


def stratified_order(chunks: list[Chunk], seed: int) -> list[Chunk]:
    """Every chunk once, documents taking turns (in a seeded order, each document's chunks
    shuffled), so the first N cover as many documents as N allows."""
    rng = random.Random(seed)
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_doc[chunk.doc_id].append(chunk)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    for doc in docs:
        rng.shuffle(by_doc[doc])
    order: list[Chunk] = []
    depth = 0
    while len(order) < len(chunks):
        for doc in docs:
            if depth < len(by_doc[doc]):
                order.append(by_doc[doc][depth])
        depth += 1
    return order


def rotated(order: list[Chunk], share: float) -> Iterator[Chunk]:
    """``order`` started at ``share`` of its length (each question type starts elsewhere)."""
    start = int(len(order) * share) % max(1, len(order))
    yield from order[start:] + order[:start]


class TermLinks:
    """Terms two or more chunks share (rare ones: named things, identifiers), for two-chunk
    questions."""

    def __init__(self, chunks: list[Chunk], max_share: float = 0.02) -> None:
        self.chunks = {c.chunk_id: c for c in chunks}
        self.terms: dict[str, list[str]] = {}
        holders: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            for term in _linking_terms(chunk.text):
                holders[term].append(chunk.chunk_id)
        limit = max(3, int(len(chunks) * max_share))
        self.by_term = {t: ids for t, ids in holders.items() if 2 <= len(ids) <= limit}
        for term, ids in self.by_term.items():
            for chunk_id in ids:
                self.terms.setdefault(chunk_id, []).append(term)

    def partner(self, chunk: Chunk, rng: random.Random, used: set[tuple[str, str]],
                language: str = "") -> tuple[Chunk, str] | None:
        """Another chunk (in ``language`` when given) sharing a term with ``chunk`` and a
        subject (the same document, or the term is one's package or title: never two
        unrelated documents), another document first, rarest term first, never a pair
        already in ``used``."""
        options: list[tuple[int, int, str, str]] = []
        for term in self.terms.get(chunk.chunk_id, []):
            for other in self.by_term[term]:
                pair = tuple(sorted((chunk.chunk_id, other)))
                if other == chunk.chunk_id or pair in used or (
                        language and language_of(self.chunks[other].text) != language) or (
                        not share_subject(chunk, self.chunks[other], term)):
                    continue
                same_doc = int(self.chunks[other].doc_id == chunk.doc_id)
                options.append((same_doc, len(self.by_term[term]), term, other))
        if not options:
            return None
        best = min(o[:2] for o in options)
        picked = rng.choice(sorted(o for o in options if o[:2] == best))
        return self.chunks[picked[3]], picked[2]

    def linked(self) -> int:
        return len(self.terms)


def _linking_terms(text: str) -> set[str]:
    """Named things and identifiers: capitalised or digit-bearing Latin words of 3+
    characters, and CJK bigrams that recur in the text."""
    found: set[str] = set()
    stop = english_stopwords()
    for word in re.findall(r"\b[A-Z][\w\-]{2,}(?:\s+[A-Z][\w\-]{2,})*|\b[\w]*\d[\w\-]*\b", text):
        if len(word) >= 3 and not word.isdigit() and word.casefold() not in stop:
            found.add(word.casefold())
    cjk = Counter(w for w in words(text) if is_han(w) and len(w) == 2)
    found |= {w for w, n in cjk.items() if n >= 2 and w in key_terms(w)}
    return found


def vocabulary(chunks: list[Chunk]) -> set[str]:
    """Every word (Latin, case-folded) and CJK bigram of the corpus."""
    vocab: set[str] = set()
    for chunk in chunks:
        vocab.update(words(chunk.text))
    return vocab
