"""A tiny grounded chat graph for the OpenAI-compatible routes: BM25 -> prompt (with a
``history`` input and a feedback loop) -> a scripted model that streams its words -> parser
-> grounding check -> the answer, or a refusal after one retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modrag_nodes.llm.client import ChatResult
from tests.server.mcp_helpers import DOCS
from tests.tiny_rag import tiny_rag_graph

BACKEND = "test-openai"
GOOD = "LP-07 is serviced every 500 operating hours [1]."
WRONG = "LP-07 is serviced every 700 operating hours [1]."


class StreamingScripted:
    """Streams its reply word by word. LP-07: the right answer cited [1]; a question with
    'wrongly' is answered with a number no document states, and so is its retry; 'and more'
    gets the right answer and then the wrong one (the check cuts the second); 'slowly'
    takes half a second a word (stopping when cancelled); 'explode' fails. ``seen`` keeps
    every request's messages."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        self.seen.append(list(messages))
        text = messages[-1].content
        if "explode" in text:
            raise RuntimeError("the scripted model exploded")
        reply = (WRONG if "wrongly" in text else f"{GOOD} {WRONG}" if "and more" in text
                 else GOOD if "LP-07" in text else "I don't know.")
        for word in reply.split(" "):
            if "slowly" in text and cancel.wait(0.5):
                break
            if on_token is not None:
                on_token(word + " ")
        return ChatResult(text=reply, model="scripted", completion_tokens=len(reply.split()))


def grounded_chat_graph(folder: Path) -> dict[str, Any]:
    """The tiny RAG graph with a history input, a grounding check, its retry and refusal."""
    doc = tiny_rag_graph(folder, DOCS, backend=BACKEND, name="plant chat", history=True)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] != "generate"] + [
        {"id": "generate", "type": "llm.generate", "params": {"stream": True}},
        {"id": "ground", "type": "check.grounding", "params": {"absent_terms": "off"}},
        {"id": "refuse", "type": "answer.refuse"},
        {"id": "select", "type": "answer.select"},
    ]
    doc["edges"] = [e for e in doc["edges"] if e["to"] != "answer.value"] + [
        {"from": "parse.answer", "to": "ground.answer"},
        {"from": "question.value", "to": "ground.query"},
        {"from": "ground.grounded", "to": "select.primary"},
        {"from": "ground.ungrounded", "to": "refuse.answer"},
        {"from": "ground.absent", "to": "refuse.answer"},
        {"from": "refuse.answer", "to": "select.fallback"},
        {"from": "select.answer", "to": "answer.value"},
        {"from": "ground.ungrounded", "to": "prompt.feedback", "loop": {"max_iterations": 1}},
    ]
    return doc
