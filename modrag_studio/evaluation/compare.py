"""Two variants on one evaluation set: metric deltas with paired statistics, per node.

``compare_rows`` is the one comparer: ranking comparisons (here) and answer comparisons
(``compare_answers``) both pair their per-question rows through it.

The comparison JSON (``modrag compare --json``)::

    {"comparable": true, "test": {...}, "variants": {"a": {...}, "b": {...}},
     "dataset": {...}, "output": {"a": "fusion.results", "b": "bm25.results"},
     "metrics": {"ndcg@10": {"a", "b", "delta", "ci95": [lo, hi], "p_value", ...}, ...},
     "queries": {"wins", "losses", "ties", "by": "ndcg@10"}, "flipped": [...],
     "nodes": {"bm25.results": {"metrics": {...}, "queries": {...}}, ...}}
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
from modrag_studio.evaluation.runner import EvalReport, graph_sha256
from modrag_studio.evaluation.statistics import (
    CI_NAME,
    DEFAULT_SEED,
    PERMUTATIONS,
    RESAMPLES,
    TEST_NAME,
    compare_paired,
    wins_losses_ties,
)

PRIMARY = "ndcg@10"


def compared_metrics(hit_k: int) -> list[str]:
    return [PRIMARY, "recall@5", "recall@10", "recall@20", "recall@100", f"hit@{hit_k}",
            "mrr@10"]


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


def variant_identity(label: str, doc: GraphDocument, report: EvalReport,
                     source: str | None = None) -> dict[str, Any]:
    """A variant is known by its graph hash (variants block and layout excluded)."""
    return {"name": label, "graph": doc.metadata.name, "graph_sha256": graph_sha256(doc),
            "file": source, "seconds": round(report.seconds, 2),
            "failures": len(report.failures)}


def _per_query(report: EvalReport, spec: str) -> dict[str, dict[str, Any]]:
    return {row["query_id"]: row for row in report.per_query.get(spec, [])}


Row = Mapping[str, Any]  # one question's metrics (or a per-query report row)


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
    """Wins, losses and ties of B over the pairs where neither side is ``None``."""
    pairs = [(a, b) for a, b in values if a is not None and b is not None]
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


def compare_output(report_a: EvalReport, report_b: EvalReport, spec_a: str, spec_b: str, *,
                   seed: int = DEFAULT_SEED, permutations: int = PERMUTATIONS,
                   resamples: int = RESAMPLES) -> dict[str, Any]:
    """Metrics, wins/losses/ties and the paired statistics of one output of each variant."""
    rows_a, rows_b = _per_query(report_a, spec_a), _per_query(report_b, spec_b)
    pairs = [(row, rows_b[q]) for q, row in rows_a.items() if q in rows_b]
    return compare_rows(pairs, compared_metrics(report_a.hit_k), PRIMARY, missing=0.0,
                        seed=seed, permutations=permutations, resamples=resamples)


def flipped_queries(report_a: EvalReport, report_b: EvalReport, spec_a: str, spec_b: str,
                    texts: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Queries whose outcome flipped: a relevant document in the top k for one variant only."""
    hit = f"hit@{report_a.hit_k}"
    rows_a, rows_b = _per_query(report_a, spec_a), _per_query(report_b, spec_b)
    flipped = []
    for query_id, row_a in rows_a.items():
        row_b = rows_b.get(query_id)
        if row_b is None or row_a.get(hit) == row_b.get(hit):
            continue
        flipped.append({
            "query_id": query_id, "query": (texts or {}).get(query_id, ""),
            "outcome": "gained" if row_b.get(hit) else "lost",
            PRIMARY: {"a": round(row_a[PRIMARY], 4), "b": round(row_b[PRIMARY], 4)},
            "top_a": row_a.get("top_docs", [])[:3], "top_b": row_b.get("top_docs", [])[:3],
            "relevant": row_a.get("relevant", []),
        })
    return flipped


def test_description(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The paired test, interval and seed a comparison used (named in its JSON)."""
    return {"name": TEST_NAME, "ci": CI_NAME, "seed": seed, "permutations": PERMUTATIONS,
            "resamples": RESAMPLES, "delta": "b - a"}


def compare_evaluations(
    report_a: EvalReport, report_b: EvalReport, *, output_a: str, output_b: str,
    shared: list[str], identity_a: dict[str, Any], identity_b: dict[str, Any],
    dataset_a: dict[str, Any], dataset_b: dict[str, Any], texts: dict[str, str] | None = None,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The comparison document of two evaluations (see the module docstring)."""
    keys = ("corpus_sha256", "queries_sha256", "qrels_sha256", "split")
    mismatched = [k for k in keys if dataset_a.get(k) != dataset_b.get(k)]
    if report_a.ndcg_gain != report_b.ndcg_gain:
        mismatched.append("ndcg_gain")
    main = compare_output(report_a, report_b, output_a, output_b, seed=seed)
    nodes = {spec: compare_output(report_a, report_b, spec, spec, seed=seed)
             for spec in shared if spec in report_a.per_query and spec in report_b.per_query}
    return {
        "comparable": not mismatched,
        "not_comparable_because": [f"{k} differs" for k in mismatched],
        "test": test_description(seed),
        "variants": {"a": identity_a, "b": identity_b},
        "dataset": dataset_a,
        "output": {"a": output_a, "b": output_b},
        "hit_k": report_a.hit_k,
        "ndcg_gain": report_a.ndcg_gain,
        "metrics": main["metrics"],
        "queries": main["queries"],
        "flipped": flipped_queries(report_a, report_b, output_a, output_b, texts),
        "nodes": nodes,
    }


def report_from_dict(data: dict[str, Any]) -> EvalReport:
    """An ``EvalReport`` back from its ``modrag eval --report`` JSON."""
    graph, dataset = data["graph"], data["dataset"]
    return EvalReport(
        graph_name=graph["name"], graph_sha256=graph["sha256"], dataset=dataset["path"],
        split=dataset["split"], qrels_sha256=dataset["qrels_sha256"],
        queries=dataset["queries"], hit_k=data.get("hit_k", 10),
        ndcg_gain=data.get("ndcg_gain", "exponential"),  # reports before the field: 2**g - 1
        outputs=data.get("nodes", {}),
        per_query=data.get("per_query", {}), failures=data.get("failures", []),
        seconds=data.get("seconds", 0.0), missing_docs=data.get("missing_docs", {}))


def format_comparison(result: dict[str, Any]) -> str:
    """The comparison as a short text table."""
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
