"""How many questions a tuner's test needs: a power estimate of the paired test.

A paired test on ``n`` questions whose per-question differences spread by ``sd`` finds a
mean gain ``effect`` (two-sided, level ``alpha``) with probability ``power`` once
``n >= ((z_alpha + z_power) * sd / effect)^2 + z_alpha^2 / 2`` (Guenther's correction of
the normal approximation for the t-test; the sign-flip test has about the same power).

The held-out method tests on its held-out part alone. Cross-validation tests every question
out of fold, but the corrected resampled t-test inflates the variance by
``k * (1/(r*k) + 1/(k-1))`` (k folds, r repeats) and has ``r*k - 1`` degrees of freedom, so
``n`` questions there count as ``n`` divided by that inflation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from modrag_studio.evaluation.metric_registry import PRIMARY
from modrag_studio.evaluation.statistics import student_t_quantile
from modrag_studio.evaluation.tuning.questions import MIN_HELD_OUT

#: The spread (standard deviation) of per-question nDCG@10 differences between two
#: retrieval graphs, used when the set has no figure yet: about 0.13 for convex vs RRF
#: fusion on 243 SciFact train claims (from that tune's bootstrap CI), 0.12 for hybrid vs
#: BM25 alone on 40 of them (bench/results/tune_small_scifact_q40.json).
DEFAULT_SPREAD = 0.15
DEFAULT_POWER = 0.8
ALPHA = 0.05
DEFAULT_FOLDS = 5
DEFAULT_REPEATS = 3
MIN_CV_QUESTIONS = 10  # two per fold at five folds
#: Below this many questions ``auto`` cross-validates: a held-out part of 30% of them finds
#: only gains about 1.5 times larger, and k-fold's extra searches still cost little.
SMALL_SET = 200

Method = str  # "held-out" or "cross-validation"
METHODS = ("auto", "held-out", "cross-validation")


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def cv_inflation(folds: int, repeats: int) -> float:
    """How much the corrected resampled t-test inflates the variance of a mean delta over
    ``n`` questions, against a paired test on ``n`` independent questions."""
    return folds * (1.0 / (folds * repeats) + 1.0 / (folds - 1))


def questions_needed(effect: float, spread: float = DEFAULT_SPREAD, *,
                     power: float = DEFAULT_POWER, alpha: float = ALPHA,
                     df: int | None = None) -> int:
    """Questions a paired test needs to find a mean gain ``effect`` with ``power``
    (``df``: the test's degrees of freedom when fixed, as in cross-validation)."""
    if effect <= 0 or spread <= 0:
        raise ValueError("the effect and the spread must be positive")
    if df is not None:
        crit = student_t_quantile(1 - alpha / 2, df)
        return max(2, math.ceil(((crit + _z(power)) * spread / effect) ** 2))
    za = _z(1 - alpha / 2)
    return max(2, math.ceil(((za + _z(power)) * spread / effect) ** 2 + za * za / 2))


def detectable_effect(questions: float, spread: float = DEFAULT_SPREAD, *,
                      power: float = DEFAULT_POWER, alpha: float = ALPHA,
                      df: int | None = None) -> float:
    """The smallest mean gain a paired test on ``questions`` finds with ``power``."""
    if questions < 2:
        return math.inf
    crit = student_t_quantile(1 - alpha / 2, df if df is not None else max(1, questions - 1))
    return (crit + _z(power)) * spread / math.sqrt(questions)


@dataclass(frozen=True)
class Plan:
    """What a tune on ``questions`` questions can show, and what ``effect`` needs."""

    questions: int
    method: Method
    tested: float  # questions the test counts (cross-validation: after the inflation)
    detectable: float  # the gain found with DEFAULT_POWER
    effect: float
    spread: float
    needed_held_out: int  # total questions for ``effect`` under the held-out method
    needed_cv: int  # total questions for ``effect`` under cross-validation
    held_out_fraction: float
    folds: int
    repeats: int
    metric: str = PRIMARY

    @property
    def needed(self) -> int:
        return self.needed_cv if self.method == "cross-validation" else self.needed_held_out

    def to_dict(self) -> dict[str, object]:
        return {"questions": self.questions, "method": self.method,
                "tested_questions": round(self.tested, 1),
                "detectable_effect": round(self.detectable, 4), "effect": self.effect,
                "spread": self.spread, "power": DEFAULT_POWER, "alpha": ALPHA,
                "needed": {"held-out": self.needed_held_out,
                           "cross-validation": self.needed_cv}}

    def text(self) -> str:
        """One paragraph: the method, what this set can find, and what ``effect`` needs."""
        how = (f"cross-validation ({self.folds} folds x {self.repeats} repeats)"
               if self.method == "cross-validation" else
               f"a held-out test on {round(self.tested)} question(s)")
        finds = (f"{self.questions} question(s): {how}; with a spread of {self.spread:g} "
                 f"per question it finds a gain of about {self.detectable:+.3f} "
                 f"{self.metric} 80% of the time.")
        need = self.need_text()
        if self.questions < self.needed:
            need += f" Generate or write {self.needed - self.questions} more to find it."
        return f"{finds} {need}"

    def need_text(self) -> str:
        return (f"A gain of {self.effect:+.3f} {self.metric} (spread {self.spread:g}) needs "
                f"{self.needed_cv} question(s) with cross-validation or "
                f"{self.needed_held_out} with a held-out test "
                f"({self.held_out_fraction:.0%} kept aside).")


def choose_method(questions: int, held_out_fraction: float, method: Method = "auto",
                  min_held_out: int = MIN_HELD_OUT) -> Method:
    """``auto``: cross-validation below ``SMALL_SET`` questions or when the held-out part
    would hold fewer than ``min_held_out``, else the held-out test."""
    if method not in METHODS:
        raise ValueError(f"--method {method}: one of {', '.join(METHODS)}")
    if method != "auto":
        return method
    held = round(questions * held_out_fraction)
    return ("held-out" if questions >= SMALL_SET and held >= min_held_out
            else "cross-validation")


def plan(questions: int, *, effect: float = 0.05, spread: float = DEFAULT_SPREAD,
         held_out_fraction: float = 0.3, method: Method = "auto",
         folds: int = DEFAULT_FOLDS, repeats: int = DEFAULT_REPEATS,
         min_held_out: int = MIN_HELD_OUT, metric: str = PRIMARY) -> Plan:
    """The power estimate of a tune on ``questions`` questions, said before it runs."""
    chosen = choose_method(questions, held_out_fraction, method, min_held_out)
    inflation = cv_inflation(folds, repeats)
    df = folds * repeats - 1
    if chosen == "cross-validation":
        tested = questions / inflation
        detectable = detectable_effect(tested, spread, df=df)
    else:
        tested = float(round(questions * held_out_fraction))
        detectable = detectable_effect(tested, spread)
    held = max(min_held_out, questions_needed(effect, spread))
    needed_cv = max(MIN_CV_QUESTIONS,
                    math.ceil(questions_needed(effect, spread, df=df) * inflation))
    return Plan(questions, chosen, tested, detectable, effect, spread,
                math.ceil(held / held_out_fraction), needed_cv, held_out_fraction, folds,
                repeats, metric)
