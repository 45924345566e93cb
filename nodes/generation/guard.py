"""Evidence guard: stop with a fixed answer when retrieval found nothing trustworthy.

Threshold modes:

- ``absolute``: the best score must reach ``threshold`` (or, for scores where lower is
  better such as distances, must not exceed it). With ``logits_as_probabilities`` on, chunks
  whose ``score_kind`` is ``logit`` are passed through the logistic function first, so one
  probability threshold serves a reranker that outputs logits and one that outputs
  probabilities.
- ``relative_zscore``: the best raw score's z-score within the current results,
  ``(best - mean) / std`` (population std; sign flipped when lower is better), must reach
  ``threshold``. Invariant to shifting and scaling scores, so any score scale works. It
  measures how far the best stands out: with n results it is at most (n-1)/sqrt(n)
  (1.79 for 5), and results that are all equally good do not pass.
- ``relative_ratio``: ``best / mean`` (``mean / best`` when lower is better) must reach
  ``threshold``; logits are mapped to probabilities first; other non-positive scores fall
  back to the z-score with a warning.

Relative modes need ``min_results_relative`` results to judge; with fewer, the guard passes
and says so.
"""

from __future__ import annotations

import math
from statistics import fmean, pstdev
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.node import (
    Answer,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

NO_EVIDENCE = "I could not find reliable evidence to answer this question."


class GuardParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["absolute", "relative_zscore", "relative_ratio"] = Field(
        "absolute", description="How the best score is judged")
    threshold: float = Field(
        0.3, description="absolute: least best score; relative_zscore: least z-score of the "
                         "best; relative_ratio: least best/mean")
    higher_is_better: bool | None = Field(
        None, description="Score direction; empty: taken from the chunks")
    logits_as_probabilities: bool = Field(
        True, description="Map 'logit' scores through the logistic function first")
    min_results_relative: int = Field(3, ge=2, description="Results a relative mode needs")
    message: str = Field(NO_EVIDENCE, description="The fallback answer's text")


class EvidenceGuard(NodeType):
    type_id = "guard.evidence"
    key_params = ("mode", "threshold")
    evidence_role = EvidenceRole("gate", outputs=("evidence",), stop_port="fallback")
    title = "Evidence guard"
    category = "Checks"
    description = (
        "Passes the evidence on, or stops the pipeline with a fixed 'no reliable evidence' "
        "answer when there are no chunks or the best score is below a threshold (absolute, "
        "or relative to the current results' scores)."
    )
    routes = True
    Params = GuardParams
    inputs = (
        InputPort("evidence", list[ScoredChunk], description="Retrieved chunks"),
        InputPort("query", Query, required=False, description="Copied into the fallback"),
    )
    outputs = (
        OutputPort("evidence", list[ScoredChunk], "The chunks, when they pass"),
        OutputPort("query", Query, "The query, when the chunks pass (wire the prompt builder's "
                                   "query from here so generation stops with the guard)"),
        OutputPort("fallback", Answer, "A fixed answer with fallback=True, when they fail"),
    )

    def run(self, ctx: NodeContext, params: GuardParams, evidence: list[ScoredChunk],
            query: Query | None = None) -> dict[str, Any]:
        passed, reason, facts = judge(evidence, params)
        ctx.note(route="evidence" if passed else "fallback", reason=reason, **facts)
        if passed:
            return {"evidence": evidence, **({"query": query} if query is not None else {})}
        answer = Answer(text=params.message, fallback=True, evidence=evidence,
                        query=(query.original or query.text) if query is not None else "")
        return {"fallback": answer}


def judge(evidence: list[ScoredChunk], params: GuardParams) -> tuple[bool, str, dict]:
    """Whether the evidence passes, why, and the numbers behind the decision."""
    if not evidence:
        return False, "no chunks", {}
    higher = (params.higher_is_better if params.higher_is_better is not None
              else evidence[0].higher_is_better)
    as_probability = params.logits_as_probabilities and params.mode != "relative_zscore"
    scores = [_sigmoid(item.score) if as_probability and item.score_kind == "logit"
              else item.score for item in evidence]
    best = max(scores) if higher else min(scores)
    facts: dict[str, Any] = {"best_score": round(best, 6), "threshold": params.threshold,
                             "mode": params.mode, "higher_is_better": higher}
    if params.mode == "absolute":
        ok = best >= params.threshold if higher else best <= params.threshold
        relation = (">=" if ok else "<") if higher else ("<=" if ok else ">")
        return ok, f"best score {best:.4g} {relation} threshold {params.threshold:g}", facts
    if len(scores) < params.min_results_relative:
        return True, (f"only {len(scores)} result(s): too few for a relative threshold "
                      f"(need {params.min_results_relative}); passed"), facts
    mode = params.mode
    if mode == "relative_ratio" and min(scores) <= 0:
        facts["fallback_to_zscore"] = "scores not all positive"
        mode = "relative_zscore"
    if mode == "relative_ratio":
        mean = fmean(scores)
        value = best / mean if higher else mean / best
        name = "best/mean" if higher else "mean/best"
    else:
        mean, spread = fmean(scores), pstdev(scores)
        value = 0.0 if spread == 0 else (best - mean) / spread * (1 if higher else -1)
        name = "z-score of the best"
    facts["relative_value"] = round(value, 6)
    ok = value >= params.threshold
    return ok, f"{name} {value:.4g} {'>=' if ok else '<'} threshold {params.threshold:g}", facts


def _sigmoid(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    z = math.exp(value)
    return z / (1.0 + z)
