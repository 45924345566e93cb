"""Fusion of several ranked lists: reciprocal rank fusion and convex combination.

Both nodes take any number of rankings on one ``multiple`` port and de-duplicate by chunk id.
Each output chunk keeps, in ``sources``, its rank and score in every input list (keyed by that
list's retriever id) plus whatever provenance the inputs already carried.

Weights are a mapping from retriever id (``ScoredChunk.retriever``: the retriever node's
``label`` param, or its node id) to a weight; unlisted retrievers weigh 1. Ids are used rather
than connection order because the order of wires changes silently when a user redraws one,
while ids are shown in every result. A weight naming no input is reported as a warning (the
retriever may sit on a branch a router left inactive). When two inputs share an id, the
second is called ``<id>#2`` (and so on, in connection order).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.retrieval.ranking import (
    assign,
    clone,
    clone_as,
    retriever_id,
    source_rank,
    unique_ids,
    with_ranks,
)
from modrag_studio.engine.core.node import (
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole, UncutRanking

Normalization = Literal["minmax", "zscore"]


def rrf(rankings: list[list[ScoredChunk]], *, k: int = 60,
        weights: dict[str, float] | None = None) -> list[ScoredChunk]:
    """Reciprocal rank fusion: ``score(c) = sum_i w_i / (k + rank_i(c))``.

    ``rank_i`` is the 1-based position of the chunk in input list ``i`` (a chunk repeated in
    one list counts at its best position). Ranks and ``retriever`` are left for the caller.
    One pass per list and one copy per fused chunk (an evaluation fuses every query again
    when a fusion param changes, so this is the whole cost of a re-score).
    """
    ids = unique_ids(rankings)
    weights = weights or {}
    firsts: dict[str, ScoredChunk] = {}
    sources: dict[str, dict[str, Any]] = {}
    totals: dict[str, float] = {}
    for list_name, ranking in zip(ids, rankings, strict=True):
        weight = float(weights.get(list_name, 1.0))
        seen: set[str] = set()
        for position, item in enumerate(ranking, start=1):
            values = item.__dict__  # fields read directly: thousands of items per query
            chunk_id = values["chunk"].chunk_id
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            own = values["sources"]
            held = sources.get(chunk_id)
            if held is None:  # a new item on the same chunk, its sources copied
                firsts[chunk_id] = item
                held = sources[chunk_id] = own.copy()
                totals[chunk_id] = 0.0 + weight / (k + position)
            else:
                for name, source in own.items():
                    held.setdefault(name, source)
                totals[chunk_id] += weight / (k + position)
            # the rank and score the retriever recorded, when they say the same (sources
            # are shared read-only, as in every fused item), else a new entry
            score, known = float(values["score"]), own.get(list_name)
            if (known is None or known.rank != position or known.score != score
                    or known.retriever != list_name):
                known = source_rank(list_name, position, score)
            held[list_name] = known
    fused = [clone_as(item, _RRF, score=totals[chunk_id], sources=sources[chunk_id])
             for chunk_id, item in firsts.items()]
    fused.sort(key=_descending_score)
    return fused


#: What every item rrf makes has besides its score and sources (fields set by ``clone_as``).
_RRF = {"rank": 0, "score_kind": "rrf", "higher_is_better": True, "retriever": ""}


def _descending_score(item: ScoredChunk) -> float:
    return -item.score


def convex(rankings: list[list[ScoredChunk]], *, normalization: Normalization = "minmax",
           weights: dict[str, float] | None = None) -> list[ScoredChunk]:
    """Weighted sum of normalised scores, ``score(c) = sum_i w_i * norm_i(c)``.

    Scores with ``higher_is_better=False`` (distances) are negated first. ``minmax`` maps a
    list to [0, 1] (all-equal scores become 1); ``zscore`` subtracts the mean and divides by
    the standard deviation (0 when constant). A chunk missing from a list gets that list's
    lowest normalised value (0 for minmax).
    """
    ids = unique_ids(rankings)
    weights = weights or {}
    fused: dict[str, ScoredChunk] = {}
    normalised: list[dict[str, float]] = []
    for list_name, ranking in zip(ids, rankings, strict=True):
        items = _first_occurrences(ranking)
        oriented = [_oriented(item, list_name) for _, item in items]
        values = _normalise(oriented, normalization)
        normalised.append({item.chunk_id: v for (_, item), v in zip(items, values, strict=True)})
        for position, item in items:
            _entry(fused, item).sources[list_name] = source_rank(list_name, position,
                                                                 float(item.score))
    for list_name, table in zip(ids, normalised, strict=True):
        weight = float(weights.get(list_name, 1.0))
        floor = min(table.values(), default=0.0)
        for chunk_id, entry in fused.items():
            entry.score += weight * table.get(chunk_id, floor)
    return _sorted(fused, "convex")


def _first_occurrences(ranking: list[ScoredChunk]) -> list[tuple[int, ScoredChunk]]:
    seen: set[str] = set()
    kept: list[tuple[int, ScoredChunk]] = []
    for position, item in enumerate(ranking, start=1):
        if item.chunk_id not in seen:
            seen.add(item.chunk_id)
            kept.append((position, item))
    return kept


def _entry(fused: dict[str, ScoredChunk], item: ScoredChunk) -> ScoredChunk:
    entry = fused.get(item.chunk_id)
    if entry is None:  # a new item on the same chunk, as ScoredChunk(chunk=..., score=0.0, ...)
        entry = fused[item.chunk_id] = clone(
            item, score=0.0, rank=0, score_kind="similarity", higher_is_better=True,
            retriever="", sources=dict(item.sources))
    else:
        for name, source in item.sources.items():
            entry.sources.setdefault(name, source)
    return entry


def _sorted(fused: dict[str, ScoredChunk], kind: str) -> list[ScoredChunk]:
    items = sorted(fused.values(), key=lambda c: -c.score)
    for item in items:
        assign(item, score_kind=kind, higher_is_better=True)
    return items


def _oriented(item: ScoredChunk, list_name: str) -> float:
    score = float(item.score)
    if not math.isfinite(score):
        raise ValueError(f"input '{list_name}' has a non-finite score for chunk "
                         f"{item.chunk_id}")
    return score if item.higher_is_better else -score


def _normalise(values: list[float], method: Normalization) -> list[float]:
    if not values:
        return []
    if method == "minmax":
        low, high = min(values), max(values)
        return [1.0 if high == low else (v - low) / (high - low) for v in values]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [0.0 if std == 0 else (v - mean) / std for v in values]


def _check_inputs(ctx: NodeContext, rankings: list[list[ScoredChunk]],
                  weights: dict[str, float]
                  ) -> tuple[list[list[ScoredChunk]], dict[str, float]]:
    """The rankings, and the weights by the ids they arrived under: a weight named for a
    node of the same component ("vector" in a component placed as "hybrid") applies to
    "hybrid/vector", the id that node has in the placed graph."""
    rankings = [list(r or []) for r in rankings or []]
    ids = unique_ids(rankings)
    spellings = {name: (name, name.rsplit("/", 1)[-1]) for name in ids}  # exact id first
    resolved = {}
    for name, keys in spellings.items():
        key = next((k for k in keys if k in weights), None)
        if key is not None:
            resolved[name] = weights[key]
    unknown = sorted(set(weights) - {k for keys in spellings.values() for k in keys})
    if unknown:
        ctx.warn(f"param 'weights' names {', '.join(unknown)}, which sent no ranking here "
                 f"(inputs: {', '.join(ids) or 'none'})")
    for name, ranking in zip(ids, rankings, strict=True):
        kinds = {(item.score_kind, item.higher_is_better) for item in ranking}
        if len(kinds) > 1:
            ctx.warn(f"input '{name}' mixes score kinds {sorted(kinds)}")
    ctx.note(inputs={name: len(r) for name, r in zip(ids, rankings, strict=True)})
    return rankings, resolved


def _cut(fused: list[ScoredChunk], top_k: int, label: str) -> dict[str, Any]:
    """The fused ranking numbered under ``label``: ``results`` cut at ``top_k`` (0: all) and
    ``uncut``, the whole ranking (the same items)."""
    ranked = with_ranks(fused, label)
    return {"results": ranked[:top_k] if top_k else ranked,
            "uncut": UncutRanking(items=ranked, cut=top_k or len(ranked))}


class _FusionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    weights: dict[str, float] = Field(
        default_factory=dict,
        description="Weight by retriever id (the retriever's label or node id); default 1")
    top_k: int = Field(0, ge=0, description="Keep this many fused chunks (0: all)")
    label: str = Field("", description="Retriever id in results (default: the node id)")


class _FusionNode(NodeType):
    """What every fusion node declares: several rankings in, one fused ranking out."""

    span_kind = "reranker"
    evidence_role = EvidenceRole("merges", top_param="top_k", uncut_port="uncut")
    category = "Fusion & rerank"
    isolate_inputs = False  # builds new items; never changes its input lists
    inputs = (InputPort("rankings", list[ScoredChunk], multiple=True,
                        description="Ranked lists from several retrievers"),)
    outputs = (OutputPort("results", list[ScoredChunk], "Fused ranking, best first"),
               OutputPort("uncut", UncutRanking, "The whole fused ranking, before the "
                          "top_k cut"))


class RRFParams(_FusionParams):
    k: int = Field(60, ge=1, description="RRF constant: larger flattens the rank curve")


class RRFNode(_FusionNode):
    type_id = "fuse.rrf"
    key_params = ("top_k", "k")
    title = "Reciprocal rank fusion"
    description = ("Merges rankings by sum of weight / (k + rank); de-duplicates chunks and "
                   "keeps each chunk's rank in every input.")
    Params = RRFParams

    def run(self, ctx: NodeContext, params: RRFParams,
            rankings: list[list[ScoredChunk]]) -> dict[str, Any]:
        rankings, weights = _check_inputs(ctx, rankings, params.weights)
        fused = rrf(rankings, k=params.k, weights=weights)
        return _cut(fused, params.top_k, retriever_id(ctx, params.label))


class ConvexParams(_FusionParams):
    normalization: Normalization = Field("minmax", description="How each list's scores are "
                                         "put on one scale before mixing")


class ConvexNode(_FusionNode):
    type_id = "fuse.convex"
    key_params = ("top_k", "normalization")
    title = "Convex score fusion"
    description = ("Merges rankings by a weighted sum of normalised scores; distances are "
                   "inverted first so higher is always better.")
    Params = ConvexParams

    def run(self, ctx: NodeContext, params: ConvexParams,
            rankings: list[list[ScoredChunk]]) -> dict[str, Any]:
        rankings, weights = _check_inputs(ctx, rankings, params.weights)
        try:
            fused = convex(rankings, normalization=params.normalization, weights=weights)
        except ValueError as exc:
            raise NodeConfigError(f"input 'rankings': {exc}") from exc
        return _cut(fused, params.top_k, retriever_id(ctx, params.label))
