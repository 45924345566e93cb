"""Fixtures of the MCP tests: a tiny BM25 graph answered by a scripted chat backend, and the
``sitecustomize`` that registers the same backend in a ``modrag mcp`` subprocess."""

from __future__ import annotations

import json
import os
from pathlib import Path

from modrag_nodes.llm.client import ChatResult, register_backend
from tests.tiny_rag import tiny_rag_graph

BACKEND = "test-mcp"
MARKS_ENV = "MODRAG_TEST_MCP_MARKS"
DOCS = {
    "maint.md": "# Pumps\n\nThe lubrication pump LP-07 is serviced every 500 operating hours.\n",
    "canteen.md": "# Canteen\n\nThe canteen opens at 06:00 and closes at 22:00.\n",
    "press.md": "# Press\n\nThe hydraulic press PR-300 stands at the Hillcrest Plant.\n",
}


def mark(what: str) -> None:
    path = os.environ.get(MARKS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(what + "\n")


class Scripted:
    """Cites block 1 for LP-07; fails on 'explode'; a question with 'slowly' streams for half
    a minute, stopping between tokens when cancelled (and writes 'started', then 'cancelled'
    or 'finished')."""

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        text = messages[-1].content
        if "explode" in text:
            raise RuntimeError("the scripted model exploded")
        if "slowly" in text:
            mark("started")
            for count in range(600):
                if cancel.wait(0.05):
                    mark("cancelled")
                    return ChatResult(text="x " * count, model="scripted",
                                      completion_tokens=count, stopped="cancelled")
                if on_token is not None:
                    on_token("x ")
            mark("finished")
            return ChatResult(text="done slowly", model="scripted")
        reply = ("LP-07 is serviced every 500 hours [1]." if "LP-07" in text
                 else "I don't know.")
        return ChatResult(text=reply, model="scripted", prompt_tokens=10,
                          completion_tokens=len(reply.split()))


def install() -> None:
    register_backend(BACKEND, Scripted)


def write_graphs(folder: Path) -> tuple[Path, Path]:
    """``faq.json`` (corpus path input with a default, question; answer with citations) and
    ``shout.json`` (text in, upper case out), in ``folder``."""
    faq = tiny_rag_graph(folder, DOCS, backend=BACKEND, name="plant faq",
                         description="Answers questions about the plant's machines, "
                                     "with citations.",
                         question_description="what to ask")
    shout = {"schema_version": 1, "metadata": {"name": "shout"},
             "nodes": [{"id": "text", "type": "graph.input", "params": {"name": "text"}},
                       {"id": "up", "type": "text.upper"},
                       {"id": "out", "type": "graph.output", "params": {"name": "loud"}}],
             "edges": [{"from": "text.value", "to": "up.text"},
                       {"from": "up.text", "to": "out.value"}]}
    paths = folder / "faq.json", folder / "shout.json"
    for path, doc in zip(paths, (faq, shout), strict=True):
        path.write_text(json.dumps(doc), encoding="utf-8")
    return paths


def write_sitecustomize(folder: Path) -> Path:
    """A folder whose ``sitecustomize`` registers the scripted backend at interpreter start
    (put it on a subprocess's PYTHONPATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "from tests.server.mcp_helpers import install\ninstall()\n", encoding="utf-8")
    return folder
