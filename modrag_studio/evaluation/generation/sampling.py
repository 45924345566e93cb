"""Which chunks questions are written about: usable chunks, sampled across documents
(stratified and seeded, not the first N), and pairs of chunks linked by a shared term; and
how a generation is planned: how many questions each type owes (spread evenly, capped by what
the chunks allow and the unanswerable share), where a type's unmet share goes, in what order
chunks are asked about (value-stating chunks first for the types that can use them), and how
two verified questions are joined into one."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence

from modrag_nodes.text.scripts import han_count, is_han, language_of
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import words
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.facts import value_facts
from modrag_studio.evaluation.generation.reading.content import share_subject
from modrag_studio.evaluation.generation.reading.terms import key_terms

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


# --- the plan -------------------------------------------------------------------------

def capacity(chunks: list[Chunk], types: Sequence[str], links: TermLinks | None) -> dict[str, int]:
    """How many questions of each type the chunks allow (one per chunk and type; a
    two-chunk question needs a chunk that shares a term with another, or a value sentence
    beside another one's in its document)."""
    linked = links.linked() if links is not None else 0
    if "multi" in types:
        with_fact = Counter(c.doc_id for c in chunks if value_facts(c))
        linked = max(linked, sum(n for n in with_fact.values() if n >= 2))
    return {t: linked if t == "multi" else len(chunks) for t in types}


def targets(n: int, caps: dict[str, int]) -> dict[str, int]:
    """``n`` spread evenly over the types, a type's share capped by what it allows."""
    want = dict.fromkeys(caps, 0)
    left = n
    while left > 0:
        open_types = [t for t in caps if want[t] < caps[t]]
        if not open_types:
            break
        for t in open_types:
            if left == 0:
                break
            want[t] += 1
            left -= 1
    return want


def join_questions(first: str, second: str, language: str) -> str:
    """Two questions as one: "How often is LP-07 serviced, and who looks after LP-07?"."""
    head = first.rstrip().rstrip("?？").rstrip()
    if language == "zh":
        return f"{head}，{second.strip()}"
    tail = second.strip()
    if tail[:1].isupper() and not tail[1:2].isupper():
        tail = tail[0].lower() + tail[1:]
    return f"{head}, and {tail}"


#: the types a type's unmet share goes to first: answerable questions, a single one first
#: (the cheapest to keep), unanswerable ones last (they measure refusals only)
HAND_ON_ORDER = ("single", "paraphrase", "claim", "multi", "unanswerable")


def capped(caps: dict[str, int], unanswerable: int) -> dict[str, int]:
    """``caps`` with the unanswerable type's capped at ``unanswerable`` questions."""
    return {t: min(c, unanswerable) if t == "unanswerable" else c for t, c in caps.items()}


def hand_on(want: dict[str, int], got: dict[str, int], done: str, others: list[str],
            caps: dict[str, int] | None = None) -> list[str]:
    """Move the questions type ``done`` could not give to ``others``: each in turn of
    ``HAND_ON_ORDER`` takes what its cap in ``caps`` leaves room for (all of it without
    ``caps``); the types that took some."""
    lacking, want[done] = want[done] - got[done], got[done]
    ranked = sorted(others, key=lambda t: HAND_ON_ORDER.index(t) if t in HAND_ON_ORDER
                    else len(HAND_ON_ORDER))
    took: list[str] = []
    for kind in ranked:
        room = lacking if caps is None else max(0, min(lacking, caps[kind] - want[kind]))
        want[kind] += room
        lacking -= room
        took += [kind] if room else []
    return took


def facts_first(order: list[Chunk], share: float) -> Iterator[Chunk]:
    """The chunks of ``order`` holding a sentence that states a value (cheap candidates),
    started at ``share`` of them, then the others."""
    with_fact = [c for c in order if value_facts(c)]
    held = {c.chunk_id for c in with_fact}
    yield from rotated(with_fact, share)
    yield from (c for c in order if c.chunk_id not in held)
