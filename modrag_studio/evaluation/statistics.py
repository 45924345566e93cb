"""Paired statistics over queries: is variant B's mean different from variant A's?

Both variants are scored on the same queries, so the test works on the per-query deltas
``d = b - a``: a paired randomization (sign-flip) test for the p-value and a paired bootstrap
for the 95 % confidence interval of the mean delta. Both use a fixed seed, so one report
always gives the same numbers.
"""

from __future__ import annotations

import itertools
import math
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
class _Comparison:
    """The figures a paired and a resampled result share: A's and B's means, the delta, its
    CI95 and p-value, over ``n`` questions."""

    a: float
    b: float
    delta: float
    ci95: tuple[float, float]
    p_value: float
    n: int

    def _rounded(self, digits: int) -> dict[str, object]:
        return {"a": round(self.a, digits), "b": round(self.b, digits),
                "delta": round(self.delta, digits),
                "ci95": [round(self.ci95[0], digits), round(self.ci95[1], digits)],
                "p_value": round(self.p_value, digits), "n": self.n}


@dataclass(frozen=True)
class PairedResult(_Comparison):
    """One metric of A against B over the same queries."""

    exact: bool

    def to_dict(self, digits: int = 4) -> dict[str, object]:
        return {**self._rounded(digits), "exact": self.exact}


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


CORRECTED_TEST_NAME = ("corrected resampled t-test over repeated k-fold (Nadeau & Bengio "
                       "2003, Bouckaert & Frank 2004; two-sided)")


@dataclass(frozen=True)
class ResampledResult(_Comparison):
    """The mean out-of-fold delta over ``splits`` train/test splits, tested with the
    variance inflated for the overlap of their training parts."""

    splits: int
    test_train_ratio: float

    def to_dict(self, digits: int = 4) -> dict[str, object]:
        return {**self._rounded(digits), "splits": self.splits,
                "test_train_ratio": round(self.test_train_ratio, digits), "exact": False}


def corrected_resampled_t(folds: Sequence[tuple[Sequence[float], Sequence[float]]],
                          train_sizes: Sequence[int]) -> ResampledResult:
    """Nadeau and Bengio's corrected resampled t-test of "B gains nothing over A".

    ``folds`` holds, per train/test split, A's and B's scores on that split's test
    questions; ``train_sizes`` the size of each split's training part. The variance of the
    per-split mean deltas is inflated by ``n_test / n_train`` (the splits' training parts
    overlap, so their deltas are correlated): ``t = mean / sqrt((1/J + n2/n1) * s^2)`` with
    ``J - 1`` degrees of freedom. The CI95 is the matching t interval.
    """
    if len(folds) != len(train_sizes) or len(folds) < 2:
        raise ValueError("the corrected resampled t-test needs at least two splits")
    means = np.array([float(np.mean(_deltas(a, b))) for a, b in folds])
    tests = float(np.mean([len(a) for a, _b in folds]))
    ratio = tests / float(np.mean(train_sizes))
    splits = len(folds)
    delta = float(means.mean())
    variance = float(means.var(ddof=1)) * (1.0 / splits + ratio)
    df = splits - 1
    if variance <= TIE_TOLERANCE ** 2:
        p_value = 1.0 if abs(delta) <= TIE_TOLERANCE else 0.0
        half = 0.0
    else:
        se = variance ** 0.5
        p_value = student_t_two_sided(delta / se, df)
        half = student_t_quantile(0.975, df) * se
    all_a = np.concatenate([np.asarray(a, dtype=float) for a, _b in folds])
    all_b = np.concatenate([np.asarray(b, dtype=float) for _a, b in folds])
    return ResampledResult(float(all_a.mean()), float(all_b.mean()), delta,
                           (delta - half, delta + half), p_value, int(all_a.size), splits,
                           ratio)


def student_t_two_sided(t: float, df: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    return min(1.0, max(0.0, _betainc(df / 2.0, 0.5, x)))


def student_t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (0.5 < q < 1) of Student's t, by bisection on the tail."""
    low, high = 0.0, 1.0
    while student_t_two_sided(high, df) / 2 > 1 - q:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if student_t_two_sided(mid, df) / 2 > 1 - q:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return front * result / a
