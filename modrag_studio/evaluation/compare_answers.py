"""Two variants' answers on one evaluation set: answer-metric deltas with paired statistics.

Input is two ``modrag eval --evalset`` reports (``AnswerReport.to_dict()``), run here or read
from ``--report`` files. The comparison has the shape of the dataset comparison
(``compare.py``)::

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

from collections.abc import Callable, Sequence
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.answer_eval import (
    ANSWER_METRICS,
    COST_METRICS,
    JUDGE_METRICS,
    AnswerReport,
    Judge,
    QuestionResult,
    evaluate_answers,
)
from modrag_studio.evaluation.compare import compare_rows, test_description
from modrag_studio.evaluation.evalset import EvalSet
from modrag_studio.evaluation.statistics import DEFAULT_SEED

PRIMARY_BY = "fact_recall (refusal_accuracy where no facts apply)"
RANKING_PRIMARY = "mrr@10"
SIDE_FIELDS = ("answer", "refused", "citations", "invalid_citations", "missed_facts",
               "metrics", "error", "judge")

Progress = Callable[[str, int, int, QuestionResult], None]  # (label, done, total, row)


class EvalsetMismatch(ValueError):
    """Two answer reports were scored on different evaluation sets."""


def is_answer_report(data: Any) -> bool:
    """Whether ``data`` is a ``modrag eval --evalset --report`` file's content."""
    return isinstance(data, dict) and "per_question" in data and "evalset" in data


def run_variants_on_evalset(
    sides: Sequence[tuple[str, GraphDocument]], evalset: EvalSet, *, executor: Executor,
    answer_output: str | None = None, judge: Judge | None = None, limit: int | None = None,
    query_input: str | None = None, corpus_input: str | None = None,
    extra_inputs: dict[str, str] | None = None, cancel: CancelToken | None = None,
    on_progress: Progress | None = None,
) -> list[AnswerReport]:
    """Run each (label, graph) on the set with one executor, so B re-runs only what changed."""
    reports = []
    for label, doc in sides:
        executor.check(doc, {})

        def progress(done: int, total: int, row: QuestionResult, label: str = label) -> None:
            if on_progress is not None:
                on_progress(label, done, total, row)

        reports.append(evaluate_answers(
            doc, evalset, executor=executor, answer_output=answer_output, judge=judge,
            limit=limit, query_input=query_input, corpus_input=corpus_input,
            extra_inputs=extra_inputs, cancel=cancel, on_progress=progress))
    return reports


def outcome_score(metrics: dict[str, float | None]) -> float | None:
    """A question's outcome: its fact recall, else (no facts apply) its refusal accuracy."""
    facts = metrics.get("fact_recall")
    return facts if facts is not None else metrics.get("refusal_accuracy")


def _side(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in SIDE_FIELDS if k in row}


def flip_of(row_a: dict[str, Any], row_b: dict[str, Any]) -> dict[str, Any] | None:
    """What changed in one question's outcome from A to B, or None when nothing flipped:
    facts found by one side only, a refusal right in one side only, an error in one only."""
    m_a, m_b = row_a.get("metrics", {}), row_b.get("metrics", {})
    gained: list[str] = []
    lost: list[str] = []
    if m_a.get("fact_recall") is not None and m_b.get("fact_recall") is not None:
        missed_a, missed_b = row_a.get("missed_facts", []), row_b.get("missed_facts", [])
        gained = [f for f in missed_a if f not in missed_b and not row_b.get("error")]
        lost = [f for f in missed_b if f not in missed_a and not row_a.get("error")]
    refusal = None
    r_a, r_b = m_a.get("refusal_accuracy"), m_b.get("refusal_accuracy")
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


def _node_comparison(pairs: list[tuple[dict, dict]], spec: str, seed: int) -> dict[str, Any]:
    """One ranked output of both variants over the questions either side scored; a side
    without a ranking there (an empty list, or the node failed) scores 0."""
    scored = [(ra.get("ranking", {}).get(spec), rb.get("ranking", {}).get(spec))
              for ra, rb in pairs]
    scored = [(a, b) for a, b in scored if a is not None or b is not None]
    names = list(next(a or b for a, b in scored)) if scored else []
    zeros = dict.fromkeys(names, 0.0)
    rows = [(a or zeros, b or zeros) for a, b in scored]
    return compare_rows(rows, names, RANKING_PRIMARY, seed=seed)


def compare_answer_reports(report_a: dict[str, Any], report_b: dict[str, Any], *,
                           identity_a: dict[str, Any], identity_b: dict[str, Any],
                           seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The comparison document of two answer reports of the same evaluation set (see the
    module docstring); raises ``EvalsetMismatch`` when their sets' hashes differ."""
    set_a, set_b = report_a["evalset"], report_b["evalset"]
    if set_a.get("sha256") != set_b.get("sha256"):
        raise EvalsetMismatch(
            f"the evaluation sets differ: A was scored on {set_a.get('path')} (sha256 "
            f"{str(set_a.get('sha256'))[:12]}…), B on {set_b.get('path')} (sha256 "
            f"{str(set_b.get('sha256'))[:12]}…); compare reports of the same set")
    rows_b = {r["id"]: r for r in report_b["per_question"]}
    pairs = [(r, rows_b[r["id"]]) for r in report_a["per_question"] if r["id"] in rows_b]
    judged = bool(report_a["answers"].get("faithfulness") is not None
                  or report_b["answers"].get("faithfulness") is not None
                  or any("faithfulness" in r.get("metrics", {}) for p in pairs for r in p))
    names = [*ANSWER_METRICS, *(JUDGE_METRICS if judged else ()), *COST_METRICS]
    main = compare_rows([(ra["metrics"], rb["metrics"]) for ra, rb in pairs], names,
                        PRIMARY_BY, outcome=outcome_score, seed=seed)
    ranked_a = dict.fromkeys(s for r, _ in pairs for s in r.get("ranking", {}))
    ranked_b = {s for _, r in pairs for s in r.get("ranking", {})}
    nodes = {spec: _node_comparison(pairs, spec, seed) for spec in ranked_a if spec in ranked_b}
    flipped = [f for ra, rb in pairs if (f := flip_of(ra, rb)) is not None]
    return {
        "comparable": True,
        "not_comparable_because": [],
        "test": test_description(seed),
        "variants": {"a": identity_a, "b": identity_b},
        "evalset": {"path": set_a.get("path"), "sha256": set_a.get("sha256"),
                    "questions": len(pairs)},
        "output": {"a": report_a.get("answer_output"), "b": report_b.get("answer_output")},
        "metrics": main["metrics"],
        "queries": main["queries"],
        "flipped": flipped,
        "nodes": nodes,
        "per_question": [{"id": ra["id"], "question": ra.get("question", ""),
                          "answerable": ra.get("answerable", True), "a": _side(ra),
                          "b": _side(rb)} for ra, rb in pairs],
    }


def report_identity(label: str, report: dict[str, Any], source: str | None = None
                    ) -> dict[str, Any]:
    """A variant of an answer comparison: its name, graph hash, time and failed questions."""
    return {"name": label, "graph": report["graph"]["name"],
            "graph_sha256": report["graph"]["sha256"], "file": source,
            "seconds": report.get("seconds", 0.0), "failures": len(report.get("failures", []))}


def _fmt(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if sign else f"{value:.4f}"


def format_answer_comparison(result: dict[str, Any]) -> str:
    """The answer comparison as a short text table."""
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
