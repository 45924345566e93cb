"""Evidence guard: absolute and relative thresholds, logits and probabilities, distances."""

from __future__ import annotations

import math

import pytest

from modrag_nodes.generation.guard import NO_EVIDENCE, EvidenceGuard
from modrag_studio.engine.core.datatypes import Query

Q = Query(text="q?")


def _chunks(make_chunk, scores, **kw):
    return [make_chunk(f"d{i}", s, **kw) for i, s in enumerate(scores)]


def _passes(run_node, params, evidence) -> bool:
    out = run_node(EvidenceGuard, params, evidence=evidence, query=Q)
    if "fallback" in out:
        assert list(out) == ["fallback"]
        answer = out["fallback"]
        assert answer.fallback is True and answer.query == "q?"
        return False
    assert out["evidence"] == evidence and out["query"] == Q
    return True


def test_no_chunks_gives_fixed_answer(run_node) -> None:
    out = run_node(EvidenceGuard, {}, evidence=[], query=Q)
    assert list(out) == ["fallback"]
    assert out["fallback"].text == NO_EVIDENCE and out["fallback"].fallback
    assert run_node.ctx.details["reason"] == "no chunks"


def test_custom_message(run_node) -> None:
    out = run_node(EvidenceGuard, {"message": "Nothing found."}, evidence=[], query=Q)
    assert out["fallback"].text == "Nothing found."


@pytest.mark.parametrize("scores, ok", [([0.2, 0.8, 0.1], True), ([0.2, 0.29], False)])
def test_absolute_probabilities(run_node, make_chunk, scores, ok) -> None:
    evidence = _chunks(make_chunk, scores, kind="probability")
    assert _passes(run_node, {"mode": "absolute", "threshold": 0.3}, evidence) is ok


@pytest.mark.parametrize("logits, ok", [([-3.0, 1.2, -1.0], True), ([-3.0, -1.0], False)])
def test_absolute_logits_compared_as_probabilities(run_node, make_chunk, logits, ok) -> None:
    # the same probability threshold (0.5 = logit 0) works for a logit reranker
    evidence = _chunks(make_chunk, logits, kind="logit")
    assert _passes(run_node, {"mode": "absolute", "threshold": 0.5}, evidence) is ok
    best = max(logits)
    assert run_node.ctx.details["best_score"] == pytest.approx(1 / (1 + math.exp(-best)),
                                                               abs=1e-6)


def test_absolute_raw_logits_when_mapping_off(run_node, make_chunk) -> None:
    evidence = _chunks(make_chunk, [-3.0, -1.0], kind="logit")
    params = {"mode": "absolute", "threshold": -2.0, "logits_as_probabilities": False}
    assert _passes(run_node, params, evidence) is True


def test_absolute_lower_is_better(run_node, make_chunk) -> None:
    near = _chunks(make_chunk, [0.9, 0.25, 0.7], kind="distance", higher=False)
    far = _chunks(make_chunk, [0.9, 0.45, 0.7], kind="distance", higher=False)
    params = {"mode": "absolute", "threshold": 0.3}
    assert _passes(run_node, params, near) is True
    assert _passes(run_node, params, far) is False
    # the param overrides what the chunks say
    assert _passes(run_node, {**params, "higher_is_better": True}, far) is True


@pytest.mark.parametrize("kind, scores, ok", [
    ("logit", [6.0, -2.0, -2.5, -3.0, -2.2], True),          # one clear winner
    ("logit", [1.0, 0.9, 1.1, 0.95, 1.05], False),           # flat
    ("probability", [0.97, 0.05, 0.02, 0.04, 0.03], True),
    ("probability", [0.52, 0.51, 0.5, 0.5, 0.52], False),    # two equal tops
])
def test_relative_zscore_logits_and_probabilities(run_node, make_chunk, kind, scores, ok) -> None:
    evidence = _chunks(make_chunk, scores, kind=kind)
    assert _passes(run_node, {"mode": "relative_zscore", "threshold": 1.5}, evidence) is ok


def test_zscore_is_scale_free(run_node, make_chunk) -> None:
    scores = [6.0, -2.0, -2.5, -3.0, -2.2]
    run_node(EvidenceGuard, {"mode": "relative_zscore"},
             evidence=_chunks(make_chunk, scores, kind="logit"))
    z1 = run_node.ctx.details["relative_value"]
    run_node(EvidenceGuard, {"mode": "relative_zscore"},
             evidence=_chunks(make_chunk, [s * 10 + 3 for s in scores], kind="logit"))
    assert run_node.ctx.details["relative_value"] == pytest.approx(z1)


def test_relative_zscore_lower_is_better(run_node, make_chunk) -> None:
    evidence = _chunks(make_chunk, [0.1, 0.8, 0.85, 0.9, 0.82], kind="distance", higher=False)
    assert _passes(run_node, {"mode": "relative_zscore", "threshold": 1.5}, evidence) is True


@pytest.mark.parametrize("kind, scores, ok", [
    ("probability", [0.9, 0.1, 0.1, 0.1], True),     # 0.9 / 0.3 = 3
    ("probability", [0.5, 0.4, 0.45, 0.42], False),  # about 1.1
    ("logit", [4.0, -3.0, -3.0, -3.0], True),        # mapped to probabilities first
    ("logit", [0.1, 0.0, -0.1, 0.05], False),
])
def test_relative_ratio(run_node, make_chunk, kind, scores, ok) -> None:
    evidence = _chunks(make_chunk, scores, kind=kind)
    assert _passes(run_node, {"mode": "relative_ratio", "threshold": 2.0}, evidence) is ok


def test_relative_ratio_falls_back_for_signed_scores(run_node, make_chunk) -> None:
    evidence = _chunks(make_chunk, [3.0, -1.0, -1.2, -0.8], kind="convex")
    run_node(EvidenceGuard, {"mode": "relative_ratio", "threshold": 1.0}, evidence=evidence)
    assert run_node.ctx.details["fallback_to_zscore"] == "scores not all positive"


def test_relative_needs_enough_results(run_node, make_chunk) -> None:
    evidence = _chunks(make_chunk, [0.01, 0.01], kind="probability")
    assert _passes(run_node, {"mode": "relative_zscore", "threshold": 5}, evidence) is True
    assert "too few" in run_node.ctx.details["reason"]
