"""Two variants on one question source: metric deltas with paired statistics, per node.

:func:`compare_reports` is the one comparison of two evaluations (``report.EvalReport``, run
here or read back from ``modrag eval --report`` files): it pairs their per-question rows by
question id and compares them through :func:`compare_rows`, the one comparer (the tuner's
held-out test uses it too). Every ranked output both reports scored is compared node by node;
the answer metrics when both scored answers (evaluation-set reports).

The comparison JSON (``modrag compare --json``) of two dataset reports::

    {"comparable": true, "test": {...}, "variants": {"a": {...}, "b": {...}},
     "dataset": {...}, "output": {"a": "fusion.results", "b": "bm25.results"},
     "metrics": {"ndcg@10": {"a", "b", "delta", "ci95": [lo, hi], "p_value", ...}, ...},
     "queries": {"wins", "losses", "ties", "by": "ndcg@10"}, "flipped": [...],
     "nodes": {"bm25.results": {"metrics": {...}, "queries": {...}}, ...}}

and of two evaluation-set reports (answers)::

    {"comparable": true, "test": {...}, "variants": {"a": {...}, "b": {...}},
     "evalset": {"path", "sha256", "questions"}, "output": {"a": "answer", "b": "answer"},
     "metrics": {"fact_recall": {"a", "b", "delta", "ci95", "p_value", "n", "exact"}, ...},
     "queries": {"wins", "losses", "ties", "by", "n"}, "flipped": [...],
     "nodes": {"fuse.results": {"metrics": {...}, "queries": {...}}, ...},
     "per_question": [{"id", "question", "answerable", "a": {...}, "b": {...}}, ...]}

A metric that does not apply to a question (``null`` on either side) leaves that question
out of the metric's pairs; a metric with no pairs has ``null`` values and ``n`` 0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import ScoredChunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.metric_registry import (
    EVIDENCE_PRIMARY,
    FACT_RECALL,
    FAITHFULNESS,
    HIT,
    METRICS,
    PRIMARY,
    REFUSAL_ACCURACY,
)
from modrag_studio.evaluation.report import EvalReport, QuestionResult, report_from_dict
from modrag_studio.evaluation.statistics import (
    CI_NAME,
    DEFAULT_SEED,
    PERMUTATIONS,
    RESAMPLES,
    TEST_NAME,
    compare_paired,
    wins_losses_ties,
)

RANKING_PRIMARY = EVIDENCE_PRIMARY  # of a ranked output scored against expected evidence
PRIMARY_BY = f"{FACT_RECALL.name} ({REFUSAL_ACCURACY.name} where no facts apply)"
SIDE_FIELDS = ("answer", "refused", "citations", "invalid_citations", "missed_facts",
               "metrics", "error", "judge")

Row = Mapping[str, Any]  # one question's metrics (or a per-query report row)
Pairs = list[tuple[QuestionResult, QuestionResult]]


class EvalsetMismatch(ValueError):
    """Two answer reports were scored on different evaluation sets."""


def compared_metrics(hit_k: int) -> list[str]:
    """The ranking metrics a comparison of qrels-scored outputs reports (the registry's)."""
    return METRICS.compared(hit_k)


def ranked_outputs(doc: GraphDocument, registry: NodeRegistry | None = None) -> list[str]:
    """Every ``node.port`` of ``doc`` whose output is a ranked list of scored chunks."""
    registry = registry or default_registry()
    specs = []
    for node in doc.nodes:
        try:
            node_type = registry.get(node.type)
        except Exception:  # unknown types are reported by validation, not here
            continue
        specs.extend(f"{node.id}.{port.name}" for port in node_type.outputs
                     if port.type == list[ScoredChunk])
    return specs


def shared_ranked_outputs(a: GraphDocument, b: GraphDocument,
                          registry: NodeRegistry | None = None) -> list[str]:
    """Ranked outputs both graphs have (same node id and port)."""
    theirs = set(ranked_outputs(b, registry))
    return [spec for spec in ranked_outputs(a, registry) if spec in theirs]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_identity(dataset: BeirDataset) -> dict[str, Any]:
    """What makes two evaluations comparable: the data's hashes and the split."""
    return {"path": str(dataset.root), "split": dataset.split,
            "corpus_sha256": _file_sha256(dataset.corpus_path),
            "queries_sha256": _file_sha256(dataset.root / "queries.jsonl"),
            "qrels_sha256": dataset.qrels_sha256}


def report_identity(label: str, report: EvalReport, source: str | None = None
                    ) -> dict[str, Any]:
    """A variant is known by its graph hash (variants block and layout excluded); with it its
    name, time and failed runs."""
    return {"name": label, "graph": report.graph_name, "graph_sha256": report.graph_sha256,
            "file": source, "seconds": round(report.seconds, 2),
            "failures": len(report.failures)}


def paired(values: Sequence[tuple[float | None, float | None]], seed: int = DEFAULT_SEED, *,
           permutations: int = PERMUTATIONS, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Paired statistics over the pairs where neither side is ``None`` (``n`` 0 and null
    values when there are none)."""
    pairs = [(a, b) for a, b in values if a is not None and b is not None]
    if not pairs:
        return {"a": None, "b": None, "delta": None, "ci95": None, "p_value": None, "n": 0,
                "exact": True}
    a, b = [float(p[0]) for p in pairs], [float(p[1]) for p in pairs]
    return compare_paired(a, b, seed=seed, permutations=permutations,
                          resamples=resamples).to_dict()


def wins(values: Sequence[tuple[float | None, float | None]], by: str) -> dict[str, Any]:
    """Wins, losses and ties of B over the pairs where neither side is ``None`` (a win is a
    better value: a lower one for a metric where lower is better)."""
    pairs = [(a, b) for a, b in values if a is not None and b is not None]
    if METRICS.direction(by) == "lower":
        pairs = [(-a, -b) for a, b in pairs]
    counts = wins_losses_ties([p[0] for p in pairs], [p[1] for p in pairs])
    return {**counts, "by": by, "n": len(pairs)}


def compare_rows(pairs: Sequence[tuple[Row, Row]], names: Sequence[str], by: str, *,
                 outcome: Callable[[Row], float | None] | None = None,
                 missing: float | None = None, seed: int = DEFAULT_SEED,
                 permutations: int = PERMUTATIONS, resamples: int = RESAMPLES,
                 ) -> dict[str, Any]:
    """The one comparer: paired statistics of each metric in ``names`` over the questions
    (A's row, B's row), and wins/losses/ties by ``outcome`` (default: the metric ``by``).

    A metric a row lacks counts as ``missing``; ``None`` leaves that question out of the
    metric's pairs (a metric that does not apply to it).
    """
    def value(row: Row, name: str) -> float | None:
        found = row.get(name, missing)
        return missing if found is None else found

    score = outcome or (lambda row: value(row, by))
    return {"metrics": {n: paired([(value(a, n), value(b, n)) for a, b in pairs], seed,
                                  permutations=permutations, resamples=resamples)
                        for n in names},
            "queries": wins([(score(a), score(b)) for a, b in pairs], by)}


def paired_results(report_a: EvalReport, report_b: EvalReport) -> Pairs:
    """(A's row, B's row) of each question both reports scored, in A's order."""
    rows_b = {r.id: r for r in report_b.results}
    return [(r, rows_b[r.id]) for r in report_a.results if r.id in rows_b]


def compare_output(pairs: Pairs, spec_a: str, spec_b: str, *, names: Sequence[str] | None,
                   by: str, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """One ranked output of each variant over the questions either side scored it on; a side
    without a ranking there (not scored on that question) scores 0. ``names``: the metrics
    compared (None: those the rows have)."""
    scored = [(ra.ranking.get(spec_a), rb.ranking.get(spec_b)) for ra, rb in pairs]
    scored = [(a, b) for a, b in scored if a is not None or b is not None]
    if names is None:
        names = list(next(a or b for a, b in scored)) if scored else []
    zeros = dict.fromkeys(names, 0.0)
    rows = [(a or zeros, b or zeros) for a, b in scored]
    return compare_rows(rows, names, by, missing=0.0, seed=seed)


def flipped_queries(pairs: Pairs, spec_a: str, spec_b: str, hit_k: int) -> list[dict[str, Any]]:
    """Queries whose outcome flipped: a relevant document in the top k for one variant only."""
    hit = HIT.key(hit_k)
    flipped = []
    for ra, rb in pairs:
        row_a, row_b = ra.ranking.get(spec_a), rb.ranking.get(spec_b)
        if row_a is None or row_b is None or row_a.get(hit) == row_b.get(hit):
            continue
        flipped.append({
            "query_id": ra.id, "query": ra.question,
            "outcome": "gained" if row_b.get(hit) else "lost",
            PRIMARY: {"a": round(row_a[PRIMARY], 4), "b": round(row_b[PRIMARY], 4)},
            "top_a": ra.top_docs.get(spec_a, [])[:3], "top_b": rb.top_docs.get(spec_b, [])[:3],
            "relevant": ra.relevant,
        })
    return flipped


def outcome_score(metrics: Mapping[str, float | None]) -> float | None:
    """A question's outcome: its fact recall, else (no facts apply) its refusal accuracy."""
    facts = metrics.get(FACT_RECALL.name)
    return facts if facts is not None else metrics.get(REFUSAL_ACCURACY.name)


def flip_of(row_a: Row, row_b: Row) -> dict[str, Any] | None:
    """What changed in one question's answer from A to B (rows of an evaluation-set report),
    or None when nothing flipped: facts found by one side only, a refusal right in one side
    only, an error in one only."""
    m_a, m_b = row_a.get("metrics", {}), row_b.get("metrics", {})
    gained: list[str] = []
    lost: list[str] = []
    if m_a.get(FACT_RECALL.name) is not None and m_b.get(FACT_RECALL.name) is not None:
        missed_a, missed_b = row_a.get("missed_facts", []), row_b.get("missed_facts", [])
        gained = [f for f in missed_a if f not in missed_b and not row_b.get("error")]
        lost = [f for f in missed_b if f not in missed_a and not row_a.get("error")]
    refusal = None
    r_a, r_b = m_a.get(REFUSAL_ACCURACY.name), m_b.get(REFUSAL_ACCURACY.name)
    if r_a is not None and r_b is not None and r_a != r_b:
        refusal = "b" if r_b > r_a else "a"
    error = None
    if bool(row_a.get("error")) != bool(row_b.get("error")):
        error = "a" if row_a.get("error") else "b"
    if not (gained or lost or refusal or error):
        return None
    better_b = bool(gained) or refusal == "b" or error == "a"
    better_a = bool(lost) or refusal == "a" or error == "b"
    outcome = "mixed" if better_a and better_b else "gained" if better_b else "lost"
    return {"id": row_a["id"], "question": row_a.get("question", ""), "outcome": outcome,
            "answerable": row_a.get("answerable", True), "facts_gained": gained,
            "facts_lost": lost, "refusal_right_in": refusal,
            "refused": {"a": row_a.get("refused"), "b": row_b.get("refused")},
            "error_in": error,
            "outcome_score": {"a": outcome_score(m_a), "b": outcome_score(m_b)}}


def test_description(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The paired test, interval and seed a comparison used (named in its JSON)."""
    return {"name": TEST_NAME, "ci": CI_NAME, "seed": seed, "permutations": PERMUTATIONS,
            "resamples": RESAMPLES, "delta": "b - a"}


def compare_reports(
    report_a: EvalReport | Mapping[str, Any], report_b: EvalReport | Mapping[str, Any], *,
    identity_a: dict[str, Any], identity_b: dict[str, Any], output_a: str | None = None,
    output_b: str | None = None, shared: Sequence[str] | None = None,
    dataset_a: dict[str, Any] | None = None, dataset_b: dict[str, Any] | None = None,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The comparison document of two evaluations of the same question source (see the
    module docstring); a report is an ``EvalReport`` or its JSON.

    Dataset reports: ``output_a``/``output_b`` are the outputs compared first (default: A's
    first); ``shared`` the outputs compared node by node (default: every one both scored);
    ``dataset_a``/``dataset_b`` what is known of each side's data (default: path, split and
    qrels hash). Evaluation-set reports compare their answers, and node by node the outputs
    both sides ranked on their paired questions; they raise ``EvalsetMismatch`` when the
    sets' hashes differ.
    """
    a, b = (r if isinstance(r, EvalReport) else report_from_dict(r)
            for r in (report_a, report_b))
    if a.on_evalset != b.on_evalset:
        raise ValueError("one report is of an evaluation set and the other of a dataset: "
                         "compare reports of the same kind")
    pairs = paired_results(a, b)
    head = {"test": test_description(seed), "variants": {"a": identity_a, "b": identity_b}}
    if a.on_evalset:
        return _compare_answers(a, b, pairs, head, seed)
    specs = shared if shared is not None else a.ranked_outputs
    both = [s for s in specs if s in a.ranked_outputs and s in b.ranked_outputs]
    output_a = output_a or next(iter(a.ranked_outputs), "")
    output_b = output_b or output_a
    dataset_a = dataset_a or a.source.identity()
    dataset_b = dataset_b or b.source.identity()
    keys = ("corpus_sha256", "queries_sha256", "qrels_sha256", "split")
    mismatched = [k for k in keys if dataset_a.get(k) != dataset_b.get(k)]
    if a.ndcg_gain != b.ndcg_gain:
        mismatched.append("ndcg_gain")
    names = compared_metrics(a.hit_k)
    main = compare_output(pairs, output_a, output_b, names=names, by=PRIMARY, seed=seed)
    return {
        "comparable": not mismatched,
        "not_comparable_because": [f"{k} differs" for k in mismatched],
        **head,
        "dataset": dataset_a,
        "output": {"a": output_a, "b": output_b},
        "hit_k": a.hit_k,
        "ndcg_gain": a.ndcg_gain,
        "metrics": main["metrics"],
        "queries": main["queries"],
        "flipped": flipped_queries(pairs, output_a, output_b, a.hit_k),
        "nodes": {spec: compare_output(pairs, spec, spec, names=names, by=PRIMARY, seed=seed)
                  for spec in both},
    }


def _judged(report: EvalReport) -> bool:
    return any(r.metrics.get(FAITHFULNESS.name) is not None for r in report.results)


def _compare_answers(a: EvalReport, b: EvalReport, pairs: Pairs, head: dict[str, Any],
                     seed: int) -> dict[str, Any]:
    """Answers compared; ranked outputs node by node where both sides' paired questions
    ranked them."""
    set_a, set_b = a.source.identity(), b.source.identity()
    if set_a["sha256"] != set_b["sha256"]:
        raise EvalsetMismatch(
            f"the evaluation sets differ: A was scored on {set_a['path']} (sha256 "
            f"{set_a['sha256'][:12]}…), B on {set_b['path']} (sha256 "
            f"{set_b['sha256'][:12]}…); compare reports of the same set")
    judged = (_judged(a) or _judged(b)
              or any(FAITHFULNESS.name in r.metrics for p in pairs for r in p))
    names = METRICS.answer_columns("answer", *(("judge",) if judged else ()), "cost")
    main = compare_rows([(ra.metrics, rb.metrics) for ra, rb in pairs], names, PRIMARY_BY,
                        outcome=outcome_score, seed=seed)
    rows = [(ra.to_dict(), rb.to_dict()) for ra, rb in pairs]
    ranked_b = {s for _, rb in pairs for s in rb.ranking}
    ranked = [s for s in dict.fromkeys(s for ra, _ in pairs for s in ra.ranking) if s in ranked_b]
    return {
        "comparable": True,
        "not_comparable_because": [],
        **head,
        "evalset": {**set_a, "questions": len(pairs)},
        "output": {"a": a.answer_output, "b": b.answer_output},
        "metrics": main["metrics"],
        "queries": main["queries"],
        "flipped": [f for ra, rb in rows if (f := flip_of(ra, rb)) is not None],
        "nodes": {spec: compare_output(pairs, spec, spec, names=None, by=RANKING_PRIMARY,
                                       seed=seed) for spec in ranked},
        "per_question": [{"id": ra["id"], "question": ra["question"],
                          "answerable": ra["answerable"], "a": _side(ra), "b": _side(rb)}
                         for ra, rb in rows],
    }


def _side(row: Row) -> dict[str, Any]:
    return {k: row[k] for k in SIDE_FIELDS if k in row}


def _fmt(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if sign else f"{value:.4f}"


def format_comparison(result: dict[str, Any]) -> str:
    """The comparison (either kind) as a short text table."""
    return (_format_answers if "evalset" in result else _format_ranking)(result)


def _format_ranking(result: dict[str, Any]) -> str:
    va, vb = result["variants"]["a"], result["variants"]["b"]
    lines = [f"A = {va['name']} ({result['output']['a']}), B = {vb['name']} "
             f"({result['output']['b']}); {result['queries']['n']} queries; "
             f"delta = B - A; {result['test']['name']}"]
    if not result["comparable"]:
        lines.append("NOT COMPARABLE: " + ", ".join(result["not_comparable_because"]))
    lines.append(f"{'metric':<12}{'A':>9}{'B':>9}{'delta':>9}{'CI95':>20}{'p':>9}")
    for name, m in result["metrics"].items():
        ci = f"[{m['ci95'][0]:+.4f}, {m['ci95'][1]:+.4f}]"
        lines.append(f"{name:<12}{m['a']:>9.4f}{m['b']:>9.4f}{m['delta']:>+9.4f}{ci:>20}"
                     f"{m['p_value']:>9.4f}")
    q = result["queries"]
    lines.append(f"queries by {q['by']}: B wins {q['wins']}, loses {q['losses']}, "
                 f"ties {q['ties']}; hit@{result['hit_k']} flipped on {len(result['flipped'])}")
    for spec, node in result["nodes"].items():
        m = node["metrics"][PRIMARY]
        lines.append(f"  node {spec:<24} {PRIMARY} {m['a']:.4f} -> {m['b']:.4f} "
                     f"({m['delta']:+.4f}, p {m['p_value']:.4f})")
    return "\n".join(lines)


def _format_answers(result: dict[str, Any]) -> str:
    va, vb = result["variants"]["a"], result["variants"]["b"]
    q = result["queries"]
    lines = [f"A = {va['name']}, B = {vb['name']} on {result['evalset']['path']}; "
             f"{result['evalset']['questions']} questions; delta = B - A; "
             f"{result['test']['name']}",
             f"{'metric':<20}{'A':>10}{'B':>10}{'delta':>10}{'CI95':>24}{'p':>8}{'n':>5}"]
    for name, m in result["metrics"].items():
        ci = "-" if m["ci95"] is None else f"[{m['ci95'][0]:+.4f}, {m['ci95'][1]:+.4f}]"
        lines.append(f"{name:<20}{_fmt(m['a']):>10}{_fmt(m['b']):>10}"
                     f"{_fmt(m['delta'], True):>10}{ci:>24}{_fmt(m['p_value']):>8}{m['n']:>5}")
    lines.append(f"questions by {q['by']}: B wins {q['wins']}, loses {q['losses']}, "
                 f"ties {q['ties']}; {len(result['flipped'])} flipped")
    for flip in result["flipped"]:
        lines.append(f"  {flip['id']} {flip['outcome']}: {describe_flip(flip)}")
    for spec, node in result["nodes"].items():
        m = node["metrics"].get(RANKING_PRIMARY) or {}
        lines.append(f"  node {spec:<24} {RANKING_PRIMARY} {_fmt(m.get('a'))} -> "
                     f"{_fmt(m.get('b'))} ({_fmt(m.get('delta'), True)}, p "
                     f"{_fmt(m.get('p_value'))})")
    return "\n".join(lines)


def describe_flip(flip: dict[str, Any]) -> str:
    """One line: which facts B found or lost, whose refusal was right, who failed."""
    parts = []
    if flip["facts_gained"]:
        parts.append("B found " + ", ".join(repr(f) for f in flip["facts_gained"]))
    if flip["facts_lost"]:
        parts.append("B lost " + ", ".join(repr(f) for f in flip["facts_lost"]))
    right = flip["refusal_right_in"]
    if right:
        wrong = "A" if right == "b" else "B"
        parts.append(f"{right.upper()} refused rightly, {wrong} answered"
                     if not flip["answerable"] else
                     f"{wrong} refused wrongly, {right.upper()} answered")
    if flip["error_in"]:
        parts.append(f"{flip['error_in'].upper()} failed")
    return "; ".join(parts)
