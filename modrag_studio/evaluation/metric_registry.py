"""The metric registry: every metric an evaluation computes, declared once.

A :class:`Metric` is its name, label, kind (ranking, answer, judge, cost), direction (is a
higher or a lower value better), format and compute function. A ranking metric is scored at
cutoffs, as parameters (``ndcg@10`` is the metric ``ndcg`` at k = 10), against qrels
(``metrics.score_ranking``) or an evaluation set's expected evidence
(``metrics.evidence_ranking``); the answer, judge and cost metrics are computed per question
from an ``answer_metrics.AnsweredQuestion`` (:func:`answer_scores`).

The scorers, the report, ``compare``, the tuner, the CLI tables and the studio columns read
:data:`METRICS`, so a new metric is one ``METRICS.register(Metric(...))`` here: scored,
reported and compared; ``headline`` cutoffs also put it in the grid and tuning tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from modrag_studio.evaluation.answer_metrics import AnsweredQuestion

Kind = Literal["ranking", "answer", "judge", "cost"]
Direction = Literal["higher", "lower"]
#: Where a ranking is scored: against qrels (a BEIR dataset) or expected evidence (a set).
Scorer = Literal["qrels", "evidence"]
#: nDCG gain of a relevance grade g: "linear" (g, trec_eval's ndcg_cut and so BEIR's published
#: figures) or "exponential" (2**g - 1). They agree on binary qrels (SciFact), not on graded
#: ones (MS MARCO, DBpedia).
Gain = Literal["linear", "exponential"]
GAINS: tuple[str, ...] = ("linear", "exponential")


@dataclass(frozen=True)
class Ranked:
    """One question's ranking as a ranking metric sees it."""

    #: The relevance grade of each ranked item, best first (0: not relevant).
    grades: Sequence[int]
    #: The grades of every relevant item (the ideal ranking of nDCG).
    ideal: Sequence[int]
    #: The share of the relevant items found in the top k.
    recall_at: Callable[[int], float]
    gain: Gain = "linear"


@dataclass(frozen=True)
class Metric:
    """One metric. A ranking metric's ``compute(ranked, k)`` scores one ranking at cutoff k;
    the others' ``compute(answered)`` score one question (``None``: does not apply)."""

    name: str
    label: str
    kind: Kind
    direction: Direction
    compute: Callable[..., float | None]
    fmt: str = ".4f"
    #: A CLI column header (default: the name).
    short: str = ""
    #: Ranking: the cutoffs scored against qrels and against expected evidence.
    cutoffs: tuple[int, ...] = ()
    evidence_cutoffs: tuple[int, ...] = ()
    #: Ranking: also scored, compared and shown at the evaluation's ``--k`` (Hit@k), and
    #: only there in the tables.
    k_option: bool = False
    #: Ranking: the cutoffs the headline tables show (grid, tuning; evidence: the set's).
    headline: tuple[int, ...] = ()
    evidence_headline: tuple[int, ...] = ()
    #: Per question: whether it is computed for this question (default: an answer exists).
    applies: Callable[[AnsweredQuestion], bool] | None = None
    #: A variant of that metric, summarised right after it and never compared.
    beside: str = ""

    def key(self, k: int | None = None) -> str:
        """The name a value is reported under: ``name@k`` for a ranking metric."""
        return self.name if k is None else f"{self.name}@{k}"

    def format(self, value: float | None) -> str:
        return "-" if value is None else format(value, self.fmt)

    def applies_to(self, answered: AnsweredQuestion) -> bool:
        if self.applies is not None:
            return self.applies(answered)
        return answered.answer is not None


@dataclass
class MetricRegistry:
    """The metrics by name, in the order they were registered (the order of every report)."""

    metrics: dict[str, Metric] = field(default_factory=dict)

    def register(self, metric: Metric) -> Metric:
        if metric.name in self.metrics:
            raise ValueError(f"metric '{metric.name}' is registered already")
        self.metrics[metric.name] = metric
        return metric

    def unregister(self, name: str) -> None:
        del self.metrics[name]

    def __iter__(self) -> Iterator[Metric]:
        return iter(list(self.metrics.values()))

    def get(self, key: str) -> Metric:
        """The metric a reported name (``recall@5``, ``mean_latency_s``) is a value of."""
        name = key.partition("@")[0]
        if name not in self.metrics and name.startswith("mean_"):
            name = name.removeprefix("mean_")
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"no metric '{key}' (metrics: {', '.join(self.metrics)})") from None

    def find(self, key: str) -> Metric | None:
        try:
            return self.get(key)
        except KeyError:
            return None

    def direction(self, key: str) -> Direction:
        """Whether a higher or a lower value of ``key`` is better (unknown names: higher)."""
        metric = self.find(key)
        return metric.direction if metric else "higher"

    def label(self, key: str) -> str:
        metric = self.get(key)
        _, _, k = key.partition("@")
        return f"{metric.label}@{k}" if k else metric.label

    def of_kind(self, *kinds: Kind) -> list[Metric]:
        return [m for m in self if m.kind in kinds]

    # --- ranking keys ---------------------------------------------------------------

    def scored_keys(self, scorer: Scorer, hit_k: int = 10) -> list[tuple[Metric, int]]:
        """(metric, k) of every ranking value a scorer computes, metric by metric."""
        pairs = []
        for m in self.of_kind("ranking"):
            ks = set(m.cutoffs if scorer == "qrels" else m.evidence_cutoffs)
            if m.k_option and scorer == "qrels":
                ks.add(hit_k)
            pairs.extend((m, k) for k in sorted(ks))
        return pairs

    def compared(self, hit_k: int = 10) -> list[str]:
        """The ranking metrics a comparison of qrels-scored outputs reports."""
        return [key for m in self.of_kind("ranking")
                for key in ([m.key(hit_k)] if m.k_option else [m.key(k) for k in m.cutoffs])]

    def table(self, hit_k: int = 10) -> list[str]:
        """The columns of the ``modrag eval`` table: the fixed cutoffs, then the ``--k``."""
        ranking = self.of_kind("ranking")
        return ([m.key(k) for m in ranking if not m.k_option for k in m.cutoffs]
                + [m.key(hit_k) for m in ranking if m.k_option])

    def headline(self, hit_k: int | None = None, scorer: Scorer = "qrels") -> list[str]:
        """The headline columns (grid and tuning tables), with the ``--k`` ones when given."""
        ranking = self.of_kind("ranking")
        keys = [m.key(k) for m in ranking
                for k in (m.headline if scorer == "qrels" else m.evidence_headline)]
        if hit_k is not None:
            keys += [m.key(hit_k) for m in ranking if m.k_option]
        return keys

    # --- answer, judge and cost metrics -----------------------------------------------

    def answer_columns(self, *kinds: Kind) -> list[str]:
        """The per-question metrics of ``kinds``, kind by kind, that a comparison and a
        summary cover (the ``beside`` variants left out)."""
        return [m.name for kind in kinds for m in self.of_kind(kind) if not m.beside]


def _worth(gain: Gain) -> Callable[[int], float]:
    if gain not in GAINS:
        raise ValueError(f"nDCG gain must be one of {', '.join(GAINS)}, got {gain!r}")
    return (lambda g: g) if gain == "linear" else (lambda g: 2**g - 1)


def ndcg(ranked: Ranked, k: int) -> float:
    """nDCG@k with the ideal ranking taken from the qrels (as trec_eval's ndcg_cut)."""
    worth = _worth(ranked.gain)
    dcg = sum(worth(g) / math.log2(i + 2) for i, g in enumerate(ranked.grades[:k]) if g > 0)
    ideal = sorted((g for g in ranked.ideal if g > 0), reverse=True)[:k]
    idcg = sum(worth(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def hit(ranked: Ranked, k: int) -> float:
    """1 when a relevant item is in the top k (trec_eval's success_k)."""
    return 1.0 if any(g > 0 for g in ranked.grades[:k]) else 0.0


def reciprocal_rank(ranked: Ranked, k: int) -> float:
    """1 / the rank of the first relevant item in the top k (0 when there is none)."""
    return next((1.0 / rank for rank, g in enumerate(ranked.grades[:k], 1) if g > 0), 0.0)


def _judged(name: str) -> Metric:
    return Metric(name, name.replace("_", " "), "judge", "higher",
                  lambda a: a.judgement.get(name), fmt=".3f",
                  applies=lambda a: a.judgement is not None)


METRICS = MetricRegistry()

NDCG = METRICS.register(Metric(
    "ndcg", "nDCG", "ranking", "higher", ndcg, cutoffs=(10,), headline=(10,)))
RECALL = METRICS.register(Metric(
    "recall", "Recall", "ranking", "higher", lambda r, k: r.recall_at(k),
    cutoffs=(5, 10, 20, 100), evidence_cutoffs=(1, 5, 10), headline=(10, 100),
    evidence_headline=(5,)))
HIT = METRICS.register(Metric(
    "hit", "Hit", "ranking", "higher", hit, cutoffs=(5, 10, 20, 100),
    evidence_cutoffs=(1, 5, 10), k_option=True, evidence_headline=(1, 5)))
MRR = METRICS.register(Metric(
    "mrr", "MRR", "ranking", "higher", reciprocal_rank, cutoffs=(10,),
    evidence_cutoffs=(10,), headline=(10,), evidence_headline=(10,)))

FACT_RECALL = METRICS.register(Metric(
    "fact_recall", "facts", "answer", "higher", lambda a: a.fact_recall, fmt=".3f",
    short="facts", applies=lambda a: True))
CITATION_PRECISION = METRICS.register(Metric(
    "citation_precision", "cite P", "answer", "higher",
    lambda a: a.citations.precision if a.question.answerable else None, fmt=".3f",
    short="c.prec"))
CITATION_RECALL = METRICS.register(Metric(
    "citation_recall", "cite R", "answer", "higher",
    lambda a: a.citations.recall if a.question.answerable else None, fmt=".3f",
    short="c.rec"))
CITATION_VALIDITY = METRICS.register(Metric(
    "citation_validity", "cite valid", "answer", "higher", lambda a: a.citations.validity,
    fmt=".3f", short="c.val"))
REFUSAL_ACCURACY = METRICS.register(Metric(
    "refusal_accuracy", "refusal", "answer", "higher",
    lambda a: 1.0 if a.refused != a.question.answerable else 0.0, fmt=".3f", short="refusal",
    applies=lambda a: True))
ANSWER_LENGTH = METRICS.register(Metric(
    "answer_length", "words", "cost", "lower", lambda a: float(a.length), fmt=".0f"))
LATENCY = METRICS.register(Metric(
    "latency_s", "s", "cost", "lower", lambda a: round(a.seconds, 3), fmt=".1f",
    short="secs", applies=lambda a: True))
TOKENS = METRICS.register(Metric(
    "tokens", "tokens", "cost", "lower", lambda a: a.tokens, fmt=".0f"))
#: fact recall counting the text the pipeline appended (quotes): reported apart, when any
FACT_RECALL_WITH_QUOTES = METRICS.register(Metric(
    "fact_recall_with_quotes", "facts with quotes", "answer", "higher",
    lambda a: a.fact_recall_with_quotes, fmt=".3f", beside="fact_recall",
    applies=lambda a: a.answer is not None and bool(a.answer.appended)))
FAITHFULNESS = METRICS.register(_judged("faithfulness"))
ANSWER_RELEVANCE = METRICS.register(_judged("answer_relevance"))

#: The metric a comparison of qrels-scored outputs counts wins by (and the tuner's default),
#: and that of outputs scored against an evaluation set's expected evidence.
PRIMARY = NDCG.key(10)
EVIDENCE_PRIMARY = MRR.key(10)


def answer_scores(answered: AnsweredQuestion,
                  registry: MetricRegistry = METRICS) -> dict[str, Any]:
    """Every answer, cost and judge metric that applies to one question, in registry order."""
    return {m.name: m.compute(answered)
            for m in registry.of_kind("answer", "cost", "judge") if m.applies_to(answered)}
