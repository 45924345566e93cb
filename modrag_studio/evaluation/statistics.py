"""Paired statistics over queries: is variant B's mean different from variant A's?

Both variants are scored on the same queries, so the test works on the per-query deltas
``d = b - a``: a paired randomization (sign-flip) test for the p-value and a paired bootstrap
for the 95 % confidence interval of the mean delta. Both use a fixed seed, so one report
always gives the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TEST_NAME = "paired randomization test (sign flips of per-query deltas, two-sided)"
CI_NAME = "paired bootstrap over queries, percentile interval"
DEFAULT_SEED = 15
PERMUTATIONS = 10_000
RESAMPLES = 10_000
EXACT_UP_TO = 16  # at most 2**16 sign patterns: enumerate them all
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PairedResult:
    """One metric of A against B over the same queries."""

    a: float
    b: float
    delta: float
    ci95: tuple[float, float]
    p_value: float
    n: int
    exact: bool

    def to_dict(self, digits: int = 4) -> dict[str, object]:
        return {"a": round(self.a, digits), "b": round(self.b, digits),
                "delta": round(self.delta, digits),
                "ci95": [round(self.ci95[0], digits), round(self.ci95[1], digits)],
                "p_value": round(self.p_value, digits), "n": self.n, "exact": self.exact}


def _deltas(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    return np.asarray(b, dtype=float) - np.asarray(a, dtype=float)


def randomization_p_value(a: Sequence[float], b: Sequence[float], *,
                          permutations: int = PERMUTATIONS, seed: int = DEFAULT_SEED) -> tuple[
                              float, bool]:
    """Two-sided p-value of "mean(b - a) is 0" and whether it was computed exactly.

    Under the null hypothesis each delta's sign is arbitrary. With at most ``EXACT_UP_TO``
    non-zero deltas every sign pattern is enumerated; otherwise ``permutations`` random ones
    are drawn and the p-value is ``(1 + hits) / (1 + permutations)``.
    """
    d = _deltas(a, b)
    nonzero = d[np.abs(d) > TIE_TOLERANCE]
    if nonzero.size == 0:
        return 1.0, True
    observed = abs(nonzero.sum()) - TIE_TOLERANCE  # zeros add nothing to any flipped sum
    if nonzero.size <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=nonzero.size)))
        sums = np.abs(signs @ nonzero)
        return float((sums >= observed).mean()), True
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, 1000):
        size = min(1000, permutations - start)
        signs = rng.choice((1.0, -1.0), size=(size, nonzero.size))
        hits += int((np.abs(signs @ nonzero) >= observed).sum())
    return (1 + hits) / (1 + permutations), False


def bootstrap_ci(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                 seed: int = DEFAULT_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean delta over queries resampled with replacement."""
    d = _deltas(a, b)
    if d.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 1000):
        size = min(1000, resamples - start)
        picks = rng.integers(0, d.size, size=(size, d.size))
        means[start:start + size] = d[picks].mean(axis=1)
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def compare_paired(a: Sequence[float], b: Sequence[float], *, seed: int = DEFAULT_SEED,
                   permutations: int = PERMUTATIONS, resamples: int = RESAMPLES) -> PairedResult:
    """Means, mean delta (B - A), its bootstrap CI95 and the randomization p-value."""
    d = _deltas(a, b)
    p_value, exact = randomization_p_value(a, b, permutations=permutations, seed=seed)
    return PairedResult(
        a=float(np.mean(a)) if len(a) else 0.0, b=float(np.mean(b)) if len(b) else 0.0,
        delta=float(d.mean()) if d.size else 0.0,
        ci95=bootstrap_ci(a, b, resamples=resamples, seed=seed), p_value=p_value, n=int(d.size),
        exact=exact)


def wins_losses_ties(a: Sequence[float], b: Sequence[float]) -> dict[str, int]:
    """Queries where B beats A (wins), A beats B (losses), or both score the same (ties)."""
    d = _deltas(a, b)
    wins = int((d > TIE_TOLERANCE).sum())
    losses = int((d < -TIE_TOLERANCE).sum())
    return {"wins": wins, "losses": losses, "ties": int(d.size) - wins - losses}
