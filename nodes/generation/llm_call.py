"""A small helper for nodes that ask a model one question and read a short reply."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from modrag_nodes.llm.client import LLMSpec, chat
from modrag_studio.engine.core.node import ChatMessage, NodeConfigError, NodeContext


def require_llm(llm: LLMSpec | None, why: str) -> LLMSpec:
    """``llm`` or a clear error saying that the ``llm`` input port must be connected."""
    if llm is None:
        raise NodeConfigError(f"input 'llm' is not connected; it is needed {why} "
                              "(connect a Chat model node)")
    return llm


def ask(ctx: NodeContext, llm: LLMSpec, system: str, user: str,
        *, purpose: str, max_tokens: int | None = None) -> str:
    """One chat call; the reply and its token counts go into the trace under ``purpose``.

    ``max_tokens`` caps the reply below the model's own limit (short verdicts need few).
    """
    if max_tokens is not None and max_tokens < llm.max_tokens:
        llm = llm.model_copy(update={"max_tokens": max_tokens})
    messages = [ChatMessage(role="user", content=user)]
    if system.strip():
        messages.insert(0, ChatMessage(role="system", content=system))
    ctx.check_cancelled()
    result = chat(llm, messages, ctx=ctx, stream=False)
    details: dict[str, Any] = {
        f"{purpose}_reply": result.text,
        f"{purpose}_model": result.model,
        f"{purpose}_tokens": [result.prompt_tokens, result.completion_tokens],
    }
    ctx.note(**details)
    if result.stopped == "cancelled":
        ctx.check_cancelled()
    return result.text


def sampling_fingerprint(inputs: Mapping[str, Any]) -> str | None:
    """A fresh cache-key part when the connected model samples (temperature > 0)."""
    spec = inputs.get("llm")
    if isinstance(spec, LLMSpec) and spec.temperature > 0:
        return f"sampled:{uuid.uuid4().hex}"
    return None


class SamplingAware:
    """Mixin for node types with an ``llm`` input: sampled replies are never reused."""

    def fingerprint(self, params: Any, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str | None:
        return sampling_fingerprint(inputs)
