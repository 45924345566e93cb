"""Studio: the answer-comparison table colours a significant change by the metric's
direction, so a fall in latency reads as a gain and a fall in fact recall as a loss."""

from __future__ import annotations

import pytest

from modrag_studio.ui.evaluate.compare_view import _OUTCOME_COLORS, AnswerComparisonDialog

pytestmark = pytest.mark.ui


def _stats(a: float, b: float, p: float) -> dict:
    return {"a": a, "b": b, "delta": b - a, "ci95": [b - a, b - a], "p_value": p, "n": 9,
            "exact": True}


def test_a_significant_delta_is_coloured_by_the_metrics_direction(qtbot):
    dialog = AnswerComparisonDialog(("base", "variant"), "set.jsonl", lambda: None)
    qtbot.addWidget(dialog)
    dialog.show_result({
        "test": {"name": "paired", "seed": 15, "ci": "bootstrap"},
        "evalset": {"questions": 9}, "nodes": {}, "flipped": [], "per_question": [],
        "queries": {"by": "fact_recall", "wins": 0, "losses": 3, "ties": 6},
        "metrics": {"fact_recall": _stats(0.9, 0.4, 0.01), "latency_s": _stats(2.0, 1.0, 0.01),
                    "tokens": _stats(90.0, 120.0, 0.4)}})
    colour = {dialog.metrics.item(r, 0).text(): dialog.metrics.item(r, 3).foreground().color()
              for r in range(dialog.metrics.rowCount())}
    assert colour["latency_s"] == _OUTCOME_COLORS["gained"]  # lower is better: a gain
    assert colour["fact_recall"] == _OUTCOME_COLORS["lost"]
    assert colour["tokens"] not in _OUTCOME_COLORS.values()  # not significant: plain
