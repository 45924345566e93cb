"""Tuning a graph on the user's questions: a search space, a seeded tuning / held-out
split, trials on one cache, and the paired test of the best trial against the base."""

from modrag_studio.evaluation.tuning.apply import winner_variant, write_variant
from modrag_studio.evaluation.tuning.questions import (
    EvalsetDataset,
    QuestionsError,
    dataset_from_evalset,
    split_questions,
)
from modrag_studio.evaluation.tuning.search import SAMPLERS, make_proposer
from modrag_studio.evaluation.tuning.space import SearchSpace, SpaceError, parse_space
from modrag_studio.evaluation.tuning.tuner import Trial, TuneError, TuneResult, tune

__all__ = ["SAMPLERS", "EvalsetDataset", "QuestionsError", "SearchSpace", "SpaceError",
           "Trial", "TuneError", "TuneResult", "dataset_from_evalset", "make_proposer",
           "parse_space", "split_questions", "tune", "winner_variant", "write_variant"]
