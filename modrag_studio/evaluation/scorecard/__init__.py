"""The first-run scorecard: a folder's questions generated and verified, the graph run on
them, and one page of figures (facts right, refusals, grounded-label precision, where the
evidence is lost, the worst questions, the one change the tuner found significant)."""

from modrag_studio.evaluation.scorecard.figures import (
    Headline,
    Scorecard,
    Suggestion,
    WorstQuestion,
    headline,
)
from modrag_studio.evaluation.scorecard.run import (
    ScorecardError,
    ScorecardRequest,
    build_scorecard,
)

__all__ = ["Headline", "Scorecard", "ScorecardError", "ScorecardRequest", "Suggestion",
           "WorstQuestion", "build_scorecard", "headline"]
