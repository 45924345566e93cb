"""How a generation is planned: how many questions each type owes (spread evenly, capped by
what the chunks allow), in what order chunks are asked about (value-stating chunks first for
the types that can use them), and how two verified questions are joined into one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.facts import value_facts
from modrag_studio.evaluation.generation.sampling import TermLinks, rotated


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


def hand_on(want: dict[str, int], got: dict[str, int], done: str, others: list[str]) -> None:
    """Move the questions type ``done`` could not give to ``others``, evenly."""
    lacking, want[done] = want[done] - got[done], got[done]
    for i in range(lacking):
        if others:
            want[others[i % len(others)]] += 1


def facts_first(order: list[Chunk], share: float) -> Iterator[Chunk]:
    """The chunks of ``order`` holding a sentence that states a value (cheap candidates),
    started at ``share`` of them, then the others."""
    with_fact = [c for c in order if value_facts(c)]
    held = {c.chunk_id for c in with_fact}
    yield from rotated(with_fact, share)
    yield from (c for c in order if c.chunk_id not in held)
