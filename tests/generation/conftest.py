"""Test fixture: a deterministic chat backend ("test-fake") answering from a script."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_studio.engine.core.datatypes import ChatMessage

Responder = Callable[[list[ChatMessage]], str]


class ScriptedBackend:
    """Replies with the next scripted text, or what a responder function returns.

    ``calls`` records every message list it was given so tests can inspect prompts.
    """

    def __init__(self) -> None:
        self.replies: list[str] = []
        self.responder: Responder | None = None
        self.calls: list[list[ChatMessage]] = []
        self.specs: list[LLMSpec] = []

    def script(self, *replies: str) -> None:
        self.replies = list(replies)

    def respond_with(self, responder: Responder) -> None:
        self.responder = responder

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        self.calls.append(list(messages))
        self.specs.append(spec)
        start = time.perf_counter()
        if self.responder is not None:
            text = self.responder(messages)
        elif self.replies:
            text = self.replies.pop(0)
        else:
            raise AssertionError("the test backend ran out of scripted replies")
        if on_token is not None:
            for word in text.split(" "):
                on_token(word + " ")
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        return ChatResult(text=text, model="test-fake", prompt_tokens=prompt_tokens,
                          completion_tokens=len(text.split()),
                          duration_s=time.perf_counter() - start)


@pytest.fixture
def fake_llm():
    """Registers backend 'test-fake'; yields (backend, spec) and unregisters afterwards."""
    backend = ScriptedBackend()
    register_backend("test-fake", lambda: backend)
    yield backend, LLMSpec(backend="test-fake", model="scripted")
    unregister_backend("test-fake")


class RunNode:
    """Runs one node type directly, the way the executor does (validated params, a context)."""

    def __init__(self) -> None:
        self.ctx = None

    def __call__(self, node_cls, params: dict | None = None, *, iteration: int = 0, **inputs):
        import logging
        from pathlib import Path

        from modrag_studio.engine.core.node import CancelToken, NodeContext

        self.streamed: list[str] = []
        self.ctx = NodeContext(
            node_id="n", type_id=node_cls.type_id, iteration=iteration, cancel=CancelToken(),
            on_progress=lambda f, m: None, on_stream=self.streamed.append,
            logger=logging.getLogger("test"), work_dir=Path("."), run_inputs={},
        )
        validated = node_cls.Params.model_validate(params or {})
        for port in node_cls.inputs:
            inputs.setdefault(port.name, None)
        return node_cls().run(self.ctx, validated, **inputs)


@pytest.fixture
def run_node() -> RunNode:
    return RunNode()


def scored(doc_id: str, score: float, *, text: str = "", kind: str = "similarity",
           higher: bool = True, chunk_id: str | None = None, **metadata):
    """A ScoredChunk for tests."""
    from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk

    chunk = Chunk(chunk_id=chunk_id or f"{doc_id}#0", doc_id=doc_id,
                  text=text or f"Text of {doc_id}.", source=f"corpus/{doc_id}.md",
                  metadata=metadata)
    return ScoredChunk(chunk=chunk, score=score, score_kind=kind, higher_is_better=higher)


def cited_answer(text: str, evidence, query: str = ""):
    """An Answer of ``text`` over ``evidence``, its citations read from the text."""
    from modrag_nodes.generation.parser import extract_citations
    from modrag_studio.engine.core.datatypes import Answer

    return Answer(text=text, evidence=evidence, query=query,
                  citations=extract_citations(text, evidence))


@pytest.fixture
def make_chunk():
    return scored
