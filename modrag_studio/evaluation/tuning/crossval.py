"""Repeated k-fold cross-validation of a tuner's choice, for sets too small to hold out.

Each repeat shuffles the questions (seeded) into ``folds`` parts. For each part the search
runs on the other parts only, and its choice (or the base, when no trial beat it there) is
scored with the base on that part: the questions its search never saw. The per-question
differences of all parts and repeats are tested with the corrected resampled t-test
(``statistics.corrected_resampled_t``), which widens the variance for the overlap of the
training parts, so a search that only fits noise is not called better.

What is tested is the search itself (choosing by it on this many questions helps on
unseen ones); the variant a tune saves is the search's choice on every question.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.evaluation.statistics import CORRECTED_TEST_NAME, corrected_resampled_t
from modrag_studio.evaluation.tuning.power import MIN_CV_QUESTIONS
from modrag_studio.evaluation.tuning.scoring import Scorer

#: choose(training question ids, split number, seed) -> the chosen graph, None: the base
Choose = Callable[[list[str], int, int], GraphDocument | None]


class CrossValidationError(ModragError):
    """Too few questions, folds or repeats for the corrected resampled t-test."""


@dataclass(frozen=True)
class Fold:
    repeat: int
    index: int  # the split number: repeat * folds + fold
    train: list[str]
    test: list[str]


def check_cv(questions: int, folds: int, repeats: int) -> None:
    if folds < 2 or repeats < 1:
        raise CrossValidationError(f"--folds {folds} --repeats {repeats}: at least 2 folds "
                                   "and 1 repeat")
    if questions < max(MIN_CV_QUESTIONS, 2 * folds):
        raise CrossValidationError(
            f"{questions} question(s): cross-validation needs at least "
            f"{max(MIN_CV_QUESTIONS, 2 * folds)} (two per fold)")


def kfold(query_ids: Sequence[str], folds: int, repeats: int, seed: int) -> list[Fold]:
    """``repeats`` seeded shuffles, each cut into ``folds`` disjoint test parts that together
    hold every question once; each part's training questions are all the others."""
    out = []
    for repeat in range(repeats):
        shuffled = list(query_ids)
        random.Random(seed + 7919 * repeat).shuffle(shuffled)
        for fold in range(folds):
            test = set(shuffled[fold::folds])
            out.append(Fold(repeat, repeat * folds + fold,
                            [q for q in query_ids if q not in test],
                            [q for q in query_ids if q in test]))
    return out


def cross_validate(doc: GraphDocument, query_ids: list[str], choose: Choose, scorer: Scorer,
                   names: list[str], *, folds: int, repeats: int, seed: int,
                   on_fold: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """The test of the search by repeated k-fold (see the module docstring): per metric in
    ``names`` the corrected resampled t-test of the out-of-fold differences."""
    splits = kfold(query_ids, folds, repeats, seed)
    pairs: dict[str, list[tuple[list[float], list[float]]]] = {n: [] for n in names}
    choices = []
    for done, fold in enumerate(splits):
        chosen = choose(fold.train, fold.index, seed + 1000 * (fold.index + 1))
        base = scorer(doc, fold.test, stage="test", split=fold.index).rows
        mine = base if chosen is None else scorer(chosen, fold.test, stage="test",
                                                  split=fold.index).rows
        for name in names:
            pairs[name].append(([_value(base[q], name) for q in fold.test],
                                [_value(mine[q], name) for q in fold.test]))
        choices.append({"repeat": fold.repeat, "fold": fold.index % folds,
                        "chose_base": chosen is None})
        if on_fold is not None:
            on_fold(done + 1, len(splits))
    train_sizes = [len(f.train) for f in splits]
    metrics = {name: corrected_resampled_t(pairs[name], train_sizes).to_dict()
               for name in names}
    deltas = [(a, b) for base, mine in pairs[names[0]] for a, b in zip(base, mine, strict=True)]
    return {"method": "cross-validation", "test": CORRECTED_TEST_NAME, "folds": folds,
            "repeats": repeats, "questions": len(query_ids), "metrics": metrics,
            "spread": spread(deltas),
            "choices": choices,
            "base_chosen": sum(c["chose_base"] for c in choices)}


def spread(pairs: list[tuple[float, float]]) -> float | None:
    """The standard deviation of the per-question differences, None under two."""
    deltas = [b - a for a, b in pairs]
    if len(deltas) < 2:
        return None
    mean = sum(deltas) / len(deltas)
    return round((sum((d - mean) ** 2 for d in deltas) / (len(deltas) - 1)) ** 0.5, 4)


def _value(row: dict[str, Any] | None, name: str) -> float:
    """A question the graph failed on, or a metric its row lacks, scores 0."""
    value = None if row is None else row.get(name)
    return float(value) if isinstance(value, int | float) else 0.0
