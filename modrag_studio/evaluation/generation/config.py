"""What an evaluation-set generation asks for (``GenerationConfig``, checked before any
work), the context its chat calls run in, and the probe that fails fast on a backend that
does not answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modrag_nodes.llm.api import LLMSpec, chat
from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken, NodeContext, node_context
from modrag_studio.engine.core.resources import Resources, given_or_process
from modrag_studio.evaluation.generation.reading.errors import GenerationError
from modrag_studio.evaluation.generation.reading.prompts import DEFAULT_TYPES, QUESTION_TYPES

LANGUAGES = ("auto", "en", "zh")
#: at most this share of a set is unanswerable by default: a set mostly of refusals measures
#: refusals only (an unanswerable question costs almost no call, so it would fill every share
#: the other types cannot)
UNANSWERABLE_SHARE = 0.25


@dataclass
class GenerationConfig:
    """What to generate: ``n`` questions of ``types`` with ``llm``; ``dense`` False skips
    the embedding search (specificity then rests on BM25 alone)."""

    n: int
    llm: LLMSpec
    seed: int = 0
    types: Sequence[str] = DEFAULT_TYPES
    language: str = "auto"
    dense: bool = True
    chunks: str | None = None  # NODE.PORT of the splitter output, when the graph has several
    max_attempts: int | None = None  # model calls at most (default 4n + 20; 3n + 20 without
    # the round trip)
    reply_tokens: int = 96
    round_trip: bool = True  # ask each kept question again of the passages a search finds
    value_facts: bool = True  # single questions from sentences stating a value, asked first
    unanswerable_share: float = UNANSWERABLE_SHARE  # of n at most (at least one question)

    def check(self) -> None:
        if self.n < 1:
            raise GenerationError(f"--n {self.n}: ask for at least one question")
        unknown = [t for t in self.types if t not in QUESTION_TYPES]
        if unknown or not self.types:
            named = ", ".join(unknown) or "(none)"
            raise GenerationError(f"--types: unknown question type(s) {named} "
                                  f"(types: {', '.join(QUESTION_TYPES)})")
        if not 0.0 <= self.unanswerable_share <= 1.0:
            raise GenerationError(f"--unanswerable-share {self.unanswerable_share}: give a "
                                  "share between 0 and 1")
        if self.language not in LANGUAGES:
            raise GenerationError(f"--language {self.language}: use one of "
                                  f"{', '.join(LANGUAGES)}")

    @property
    def unanswerable_cap(self) -> int:
        """Unanswerable questions at most: ``unanswerable_share`` of ``n`` (one at least
        when the share is above 0); ``n`` when no answerable type is asked."""
        if all(t == "unanswerable" for t in self.types):
            return self.n
        if self.unanswerable_share <= 0.0:
            return 0
        return max(1, int(self.n * self.unanswerable_share + 1e-9))

    @property
    def model_name(self) -> str:
        return f"{self.llm.backend}:{self.llm.model or 'default'}"


def generation_context(cancel: CancelToken, resources: Resources | None) -> NodeContext:
    """The context the generator's chat calls run in (models kept in ``resources``, the
    executor's)."""
    return node_context("evalset.generate", "evalset.generate", cancel=cancel,
                        resources=given_or_process(resources))


def probe_backend(llm: LLMSpec, cancel: CancelToken | None = None,
                  resources: Resources | None = None) -> None:
    """One tiny call, so a backend that is down fails before any work (GenerationError
    naming the backend and the model)."""
    spec = llm.model_copy(update={"max_tokens": 4, "retries": min(llm.retries, 1)})
    try:
        chat(spec, [ChatMessage(role="user", content="Reply with: OK")],
             ctx=generation_context(cancel or CancelToken(), resources), stream=False)
    except RunCancelled:
        raise
    except Exception as exc:
        raise GenerationError(f"chat backend '{llm.backend}' with model "
                              f"'{llm.model or 'default'}' does not answer: {exc}") from None
