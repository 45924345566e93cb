"""Helpers shared by retrievers, fusion and rerankers: ranked lists and their provenance.

Conventions: ranks are 1-based; ``ScoredChunk.retriever`` is the id of the node that produced
the list (its ``label`` param, or its node id); ``ScoredChunk.sources`` maps a retriever id to
the chunk's rank and score in that retriever's list and is carried through fusion and rerank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from modrag_studio.engine.core.node import Chunk, NodeContext, ScoredChunk, ScoreKind, SourceRank

if TYPE_CHECKING:
    import numpy as np


def retriever_id(ctx: NodeContext, label: str) -> str:
    """The id a node writes into ``ScoredChunk.retriever``: its label or its node id."""
    return label.strip() or ctx.node_id


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores, best first; ties (to 1e-9) go to the lower index."""
    import numpy as np

    count = len(scores)
    if count == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    key = np.round(np.asarray(scores, dtype=np.float64), 9)
    if k < count:
        candidates = np.argpartition(-key, k - 1)[:k]
        threshold = key[candidates].min()
        candidates = np.flatnonzero(key >= threshold)
    else:
        candidates = np.arange(count)
    order = np.lexsort((candidates, -key[candidates]))
    return candidates[order][:k]


def assign(item: ScoredChunk, **values: object) -> None:
    """Set fields of a chunk the node built itself, as plain assignment does (contracts do
    not validate assignment) without its per-field overhead: rankings of an evaluation set
    thousands of them per query."""
    item.__dict__.update(values)
    item.__pydantic_fields_set__.update(values)


def clone(item: ScoredChunk, **updates: object) -> ScoredChunk:
    """A shallow copy of ``item`` with ``updates`` set, as ``model_copy(update=...)`` makes
    it, without pydantic's per-call overhead (fusion copies every input chunk of a query)."""
    return _built(type(item), {**item.__dict__, **updates},
                  item.__pydantic_fields_set__ | set(updates))


def clone_as(item: ScoredChunk, fixed: dict[str, object], *, score: float,
             sources: dict[str, SourceRank]) -> ScoredChunk:
    """``clone(item, score=score, sources=sources, **fixed)`` without building the keyword
    dict (fusion makes one per fused chunk of every query)."""
    return _built(type(item), {**item.__dict__, **fixed, "score": score, "sources": sources},
                  item.__pydantic_fields_set__.union(fixed, ("score", "sources")))


def scored(chunk: Chunk, score: float, *, score_kind: ScoreKind, rank: int = 0,
           retriever: str = "", sources: dict[str, SourceRank] | None = None
           ) -> ScoredChunk:
    """``ScoredChunk(chunk=..., score=..., score_kind=..., higher_is_better=True, ...)`` (a
    score where higher is better) from values of the right types (a ``float`` score, a
    built chunk), not validated again: a retriever builds hundreds per query. The fields
    set are the ones that keyword call sets."""
    fields_set = {"chunk", "score", "score_kind", "higher_is_better"}
    if rank:
        fields_set.add("rank")
    if retriever:
        fields_set.add("retriever")
    if sources is not None:
        fields_set.add("sources")
    return _built(ScoredChunk, {"chunk": chunk, "score": score, "rank": rank,
                                "score_kind": score_kind, "higher_is_better": True,
                                "retriever": retriever,
                                "sources": {} if sources is None else sources}, fields_set)


def source_rank(retriever: str, rank: int, score: float) -> SourceRank:
    """``SourceRank(retriever=..., rank=..., score=...)`` from values of the right types,
    without validating them again (thousands per query in an evaluation)."""
    return _built(SourceRank, {"retriever": retriever, "rank": rank, "score": score},
                  {"retriever", "rank", "score"})


_new, _set = object.__new__, object.__setattr__
_Model = TypeVar("_Model")


def _built(cls: type[_Model], values: dict[str, object], fields_set: set[str]) -> _Model:
    """An instance of the pydantic model ``cls`` holding ``values``, not validated (the
    callers pass values of the right types)."""
    new = _new(cls)
    _set(new, "__dict__", values)
    _set(new, "__pydantic_fields_set__", fields_set)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


def with_ranks(items: list[ScoredChunk], retriever: str, *, record: bool = True
               ) -> list[ScoredChunk]:
    """Number ``items`` 1..n in order, set their retriever and (optionally) record the rank
    and score under ``sources[retriever]``."""
    for rank, item in enumerate(items, start=1):  # ``assign`` inlined: thousands a query
        values = item.__dict__
        values["rank"], values["retriever"] = rank, retriever
        item.__pydantic_fields_set__.update(("rank", "retriever"))
        if record:
            values["sources"][retriever] = source_rank(retriever, rank, float(values["score"]))
    return items


def list_id(ranking: Sequence[ScoredChunk], position: int) -> str:
    """The retriever id of one input list: its items' ``retriever``, else ``input<position>``."""
    for item in ranking:
        if item.retriever:
            return item.retriever
    return f"input{position}"


def unique_ids(rankings: Sequence[Sequence[ScoredChunk]]) -> list[str]:
    """One id per input list; a repeated id gets ``#2``, ``#3`` appended in connection order."""
    ids: list[str] = []
    for position, ranking in enumerate(rankings):
        base = list_id(ranking, position)
        name, n = base, 1
        while name in ids:
            n += 1
            name = f"{base}#{n}"
        ids.append(name)
    return ids


def remember_input(items: list[ScoredChunk], source: str) -> None:
    """Record each item's current rank and score under ``sources[source]`` (if not there)."""
    for position, item in enumerate(items, start=1):
        if source not in item.sources:
            item.sources[source] = SourceRank(retriever=source, rank=item.rank or position,
                                              score=float(item.score))
