"""The one error of evaluation-set generation: a message naming the cause."""

from __future__ import annotations

from modrag_studio.engine.core.errors import ModragError


class GenerationError(ModragError):
    """Generation cannot start or go on (bad input, backend down, corpus too small)."""
