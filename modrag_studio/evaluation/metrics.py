"""Document-level ranking metrics. A document's score is its best chunk's score."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from modrag_studio.engine.core.datatypes import ScoredChunk

RECALL_KS = (5, 10, 20, 100)
#: nDCG gain of a relevance grade g: "linear" (g, trec_eval's ndcg_cut and so BEIR's published
#: figures) or "exponential" (2**g - 1). They agree on binary qrels (SciFact), not on graded
#: ones (MS MARCO, DBpedia).
Gain = Literal["linear", "exponential"]
GAINS: tuple[str, ...] = ("linear", "exponential")


def doc_ranking(results: Iterable[ScoredChunk]) -> list[str]:
    """Document ids best first, each at the position of its best chunk.

    Results are taken in rank order when every result has a rank, else in list order.
    """
    items = list(results)
    if items and all(r.rank > 0 for r in items):
        items.sort(key=lambda r: r.rank)
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item.chunk.doc_id, None)
    return list(seen)


@dataclass
class QueryMetrics:
    query_id: str
    values: dict[str, float] = field(default_factory=dict)
    top_docs: list[str] = field(default_factory=list)
    relevant: list[str] = field(default_factory=list)


def score_ranking(
    query_id: str, ranked_docs: Sequence[str], relevance: dict[str, int], hit_k: int = 10,
    gain: Gain = "linear",
) -> QueryMetrics:
    """nDCG@10 (graded, ``gain``), Recall@{5,10,20,100}, Hit@{hit_k}, MRR@10 for one query,
    as trec_eval defines them (ndcg_cut_10, recall_k, success_k, recip_rank of the top 10)."""
    relevant = {doc for doc, grade in relevance.items() if grade > 0}
    values: dict[str, float] = {"ndcg@10": ndcg_at(ranked_docs, relevance, 10, gain)}
    for k in sorted({*RECALL_KS, hit_k}):
        found = len(relevant.intersection(ranked_docs[:k]))
        if k in RECALL_KS:
            values[f"recall@{k}"] = found / len(relevant) if relevant else 0.0
        values[f"hit@{k}"] = 1.0 if found else 0.0
    values["mrr@10"] = next(
        (1.0 / rank for rank, doc in enumerate(ranked_docs[:10], 1) if doc in relevant), 0.0
    )
    return QueryMetrics(query_id, values, list(ranked_docs[:10]), sorted(relevant))


def ndcg_at(ranked_docs: Sequence[str], relevance: dict[str, int], k: int,
            gain: Gain = "linear") -> float:
    """nDCG@k with the ideal ranking taken from the qrels (as trec_eval does)."""
    if gain not in GAINS:
        raise ValueError(f"nDCG gain must be one of {', '.join(GAINS)}, got {gain!r}")
    worth = (lambda g: g) if gain == "linear" else (lambda g: 2**g - 1)
    gains = [relevance.get(doc, 0) for doc in ranked_docs[:k]]
    dcg = sum(worth(g) / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
    ideal = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    idcg = sum(worth(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mean_metrics(per_query: Sequence[QueryMetrics]) -> dict[str, float]:
    if not per_query:
        return {}
    names = per_query[0].values.keys()
    return {name: sum(q.values[name] for q in per_query) / len(per_query) for name in names}
