"""Evaluation sets generated from a corpus with the graph's own loader and splitter, verified
before they are kept (``generate_evalset``), with a quality report."""

from modrag_studio.evaluation.generation.config import GenerationConfig, probe_backend
from modrag_studio.evaluation.generation.generator import (
    Candidate,
    GenerationResult,
    generate_evalset,
)
from modrag_studio.evaluation.generation.reading.errors import GenerationError
from modrag_studio.evaluation.generation.reading.prompts import QUESTION_TYPES
from modrag_studio.evaluation.generation.report import REASONS, QualityReport

__all__ = ["QUESTION_TYPES", "REASONS", "Candidate", "GenerationConfig", "GenerationError",
           "GenerationResult", "QualityReport", "generate_evalset", "probe_backend"]
