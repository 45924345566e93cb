"""The contracts of a chat call: which model (``LLMSpec``), what came back (``ChatResult``)
and what a backend implements (``ChatBackend``). Backends import these, not the client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import Field

from modrag_studio.engine.core.node import CancelToken, ChatMessage, Contract


class LLMSpec(Contract):
    """Which model to call and how; travels on wires from a Chat model node."""

    backend: str = "embedded"
    model: str = ""
    host: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    context_length: int = 2048
    seed: int | None = 0
    timeout_s: float = 120.0
    retries: int = 3
    system: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    def preview(self) -> str:
        return f"{self.backend}:{self.model or 'default'}"


@dataclass
class ChatResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the KV cache, not processed
    time_to_first_token_s: float | None = None
    duration_s: float = 0.0
    load_time_s: float | None = None
    stopped: str = "stop"  # "stop", "length" or "cancelled"
    drafted_tokens: int = 0  # lookup decoding: tokens drafted from the context, checked
    accepted_tokens: int = 0  # of those, the ones the model would have decoded anyway

    def trace_details(self) -> dict[str, Any]:
        lookup = ({"drafted_tokens": self.drafted_tokens, "accepted_tokens": self.accepted_tokens}
                  if self.drafted_tokens else {})
        return {**lookup,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "time_to_first_token_s": self.time_to_first_token_s,
            "generation_s": self.duration_s,
            "model_load_s": self.load_time_s,
            "stopped": self.stopped,
        }


class ChatBackend(Protocol):
    """A chat backend. One that keeps loaded models (the embedded one) says so with
    ``holds_models = True``: its ``chat`` is then also given ``resources=`` (the run's
    ``Resources``), where it keeps them."""

    def chat(
        self,
        spec: LLMSpec,
        messages: list[ChatMessage],
        *,
        on_token: Callable[[str], None] | None,
        cancel: CancelToken,
    ) -> ChatResult: ...
