"""Small helpers for LLM tests: a node context that records what it was given."""

from __future__ import annotations

import logging
from pathlib import Path

from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.core.node import CancelToken, NodeContext


def user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


class Recorder:
    """Collects streamed tokens; can cancel the run after ``cancel_after`` tokens."""

    def __init__(self, cancel_after: int | None = None) -> None:
        self.tokens: list[str] = []
        self.cancel_after = cancel_after
        self.cancel = CancelToken()

    def on_stream(self, text: str) -> None:
        self.tokens.append(text)
        if self.cancel_after is not None and len(self.tokens) >= self.cancel_after:
            self.cancel.cancel()

    def context(self, node_id: str = "gen", type_id: str = "llm.generate") -> NodeContext:
        return NodeContext(
            node_id=node_id, type_id=type_id, iteration=0, cancel=self.cancel,
            on_progress=lambda fraction, message: None, on_stream=self.on_stream,
            logger=logging.getLogger("test"), work_dir=Path("."), run_inputs={},
        )
