"""The ranking scorers: a ranking against qrels (document level, a document's score is its
best chunk's) and against an evaluation set's expected evidence (chunk level). Which metrics
at which cutoffs they compute is the metric registry's (``metric_registry``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from modrag_studio.engine.core.datatypes import ScoredChunk
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.evaluation.metric_registry import (
    GAINS,
    METRICS,
    NDCG,
    Gain,
    MetricRegistry,
    Ranked,
    Scorer,
)

__all__ = ["GAINS", "Gain", "QueryMetrics", "doc_ranking", "evidence_ranking", "mean_metrics",
           "ndcg_at", "score_ranking"]


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


def score(ranked: Ranked, scorer: Scorer, hit_k: int = 10,
          registry: MetricRegistry = METRICS) -> dict[str, float]:
    """Every ranking metric ``scorer`` computes, at each of its cutoffs."""
    return {m.key(k): m.compute(ranked, k) for m, k in registry.scored_keys(scorer, hit_k)}


def qrels_ranking(ranked_docs: Sequence[str], relevance: dict[str, int],
                  gain: Gain = "linear") -> Ranked:
    """A ranking of documents graded by qrels (grade 0 or absent: not relevant)."""
    relevant = {doc for doc, grade in relevance.items() if grade > 0}

    def recall_at(k: int) -> float:
        return len(relevant.intersection(ranked_docs[:k])) / len(relevant) if relevant else 0.0

    return Ranked([relevance.get(doc, 0) for doc in ranked_docs], list(relevance.values()),
                  recall_at, gain)


def score_ranking(
    query_id: str, ranked_docs: Sequence[str], relevance: dict[str, int], hit_k: int = 10,
    gain: Gain = "linear", registry: MetricRegistry = METRICS,
) -> QueryMetrics:
    """The ranking metrics of one query against its qrels, as trec_eval defines them
    (nDCG@10 with graded ``gain``: ndcg_cut_10; Recall@k: recall_k; Hit@k: success_k;
    MRR@10: recip_rank of the top 10)."""
    values = score(qrels_ranking(ranked_docs, relevance, gain), "qrels", hit_k, registry)
    relevant = sorted(doc for doc, grade in relevance.items() if grade > 0)
    return QueryMetrics(query_id, values, list(ranked_docs[:10]), relevant)


def evidence_ranking(value: Sequence[ScoredChunk], expected: ExpectedEvidence,
                     registry: MetricRegistry = METRICS) -> dict[str, float]:
    """The ranking metrics of one ranking of chunks against expected evidence: a chunk is
    relevant when the evidence covers it; recall@k counts the expected items satisfied in
    the top k."""
    items = sorted(value, key=lambda r: r.rank) if all(r.rank > 0 for r in value) else value
    chunks = [item.chunk for item in items]

    def recall_at(k: int) -> float:
        top = chunks[:k]
        return sum(any(i.matches(c) for c in top) for i in expected.items) / len(expected.items)

    ranked = Ranked([int(expected.is_relevant(c)) for c in chunks], [1] * len(expected.items),
                    recall_at)
    return score(ranked, "evidence", registry=registry)


def ndcg_at(ranked_docs: Sequence[str], relevance: dict[str, int], k: int,
            gain: Gain = "linear") -> float:
    """nDCG@k with the ideal ranking taken from the qrels (as trec_eval does)."""
    return NDCG.compute(qrels_ranking(ranked_docs, relevance, gain), k)


def mean_metrics(per_query: Sequence[QueryMetrics]) -> dict[str, float]:
    if not per_query:
        return {}
    names = per_query[0].values.keys()
    return {name: sum(q.values[name] for q in per_query) / len(per_query) for name in names}
