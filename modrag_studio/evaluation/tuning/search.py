"""Which settings a tuner tries next: every combination when the space fits the budget,
otherwise Optuna's TPE sampler (the ``tune`` extra) or, without Optuna, a seeded random
sample without repeats.

A proposer hands out value tuples (``ask``) and learns each one's score (``tell``); it never
proposes the same tuple twice, so the budget is spent on distinct graphs.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
from collections.abc import Iterator
from typing import Any, Literal, Protocol

from modrag_studio.evaluation.tuning.space import SearchSpace, SpaceError

Sampler = Literal["auto", "grid", "tpe", "random"]
SAMPLERS: tuple[str, ...] = ("auto", "grid", "tpe", "random")
_ATTEMPTS = 64  # asks of TPE in a row that may repeat a tried tuple before it gives up


class Proposer(Protocol):
    name: str

    def ask(self) -> tuple[Any, ...] | None: ...

    def tell(self, values: tuple[Any, ...], score: float | None) -> None: ...


class GridProposer:
    """Every combination, in order (upstream dimensions vary slowest)."""

    name = "grid"

    def __init__(self, space: SearchSpace) -> None:
        self._combos: Iterator[tuple[Any, ...]] = space.combinations()

    def ask(self) -> tuple[Any, ...] | None:
        return next(self._combos, None)

    def tell(self, values: tuple[Any, ...], score: float | None) -> None:
        pass


class RandomProposer:
    """A seeded sample of distinct combinations."""

    name = "random"

    def __init__(self, space: SearchSpace, seed: int) -> None:
        self._space, self._rng, self._seen = space, random.Random(seed), set()

    def ask(self) -> tuple[Any, ...] | None:
        if len(self._seen) >= self._space.size:
            return None
        while True:
            values = tuple(self._rng.choice(d.values) for d in self._space.dimensions)
            key = _key(values)
            if key not in self._seen:
                self._seen.add(key)
                return values

    def tell(self, values: tuple[Any, ...], score: float | None) -> None:
        pass


class TPEProposer:
    """Optuna's TPE over categorical dimensions (values by index, so any JSON value works)."""

    name = "tpe"

    def __init__(self, space: SearchSpace, seed: int) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._space = space
        self._study = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
        self._distributions = {
            f"d{i}": optuna.distributions.CategoricalDistribution(list(range(len(d.values))))
            for i, d in enumerate(space.dimensions)}
        self._open: dict[str, Any] = {}
        self._scores: dict[str, float | None] = {}

    def _values(self, trial: Any) -> tuple[Any, ...]:
        return tuple(d.values[trial.params[f"d{i}"]]
                     for i, d in enumerate(self._space.dimensions))

    def ask(self) -> tuple[Any, ...] | None:
        if len(self._scores) + len(self._open) >= self._space.size:
            return None
        for _ in range(_ATTEMPTS):
            trial = self._study.ask(self._distributions)
            values = self._values(trial)
            key = _key(values)
            if key in self._scores:  # a repeat: tell TPE what it scored and ask again
                self._finish(trial, self._scores[key])
                continue
            if key in self._open:
                self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                continue
            self._open[key] = trial
            return values
        return None

    def tell(self, values: tuple[Any, ...], score: float | None) -> None:
        key = _key(values)
        self._scores[key] = score
        self._finish(self._open.pop(key), score)

    def _finish(self, trial: Any, score: float | None) -> None:
        if score is None:
            self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self._study.tell(trial, score)


def _key(values: tuple[Any, ...]) -> str:
    return repr(values)


def optuna_installed() -> bool:
    return importlib.util.find_spec("optuna") is not None


def make_proposer(space: SearchSpace, budget: int, seed: int,
                  sampler: Sampler = "auto") -> Proposer:
    """``auto``: the grid when every combination fits ``budget``, else TPE (random without
    Optuna)."""
    if sampler not in SAMPLERS:
        raise SpaceError(f"--sampler {sampler}: one of {', '.join(SAMPLERS)}")
    if sampler == "auto":
        sampler = "grid" if space.size <= budget else ("tpe" if optuna_installed()
                                                       else "random")
    if sampler == "tpe":
        if not optuna_installed():
            raise SpaceError("--sampler tpe needs Optuna: pip install 'modrag-studio[tune]'")
        return TPEProposer(space, seed)
    if sampler == "random":
        return RandomProposer(space, seed)
    return GridProposer(space)


def take(proposer: Proposer, count: int) -> Iterator[tuple[Any, ...]]:
    """Up to ``count`` proposals (the caller tells each one's score before the next)."""
    for _ in itertools.repeat(None, count):
        values = proposer.ask()
        if values is None:
            return
        yield values
