"""The tiny BM25 question-answering graph several test suites run on a scripted chat
backend: corpus folder -> load -> split -> BM25 -> prompt -> chat model -> parser
(-> optional ``eval.judge``) -> output ``answer``."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_rag_graph(folder: Path, docs: dict[str, str], *, backend: str, top_k: int = 1,
                   judge: bool = False, name: str = "tiny", description: str = "",
                   question_description: str = "", history: bool = False) -> dict[str, Any]:
    """The graph document; ``docs`` (file name -> text) are written to ``folder/corpus``,
    the corpus input's default. ``history``: a ``history`` input (a chat history as text,
    empty by default) into the prompt, as a playground graph has."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for file_name, text in docs.items():
        (corpus / file_name).write_text(text, encoding="utf-8")
    question = {"name": "question"}
    if question_description:
        question["description"] = question_description
    nodes = [
        ("corpus", "graph.input", {"name": "corpus", "default": str(corpus)}),
        ("question", "graph.input", question),
        ("load", "load.files", {}), ("split", "split.recursive", {"chunk_size": 400}),
        ("index", "bm25.index", {}), ("retrieve", "retrieve.bm25", {"top_k": top_k}),
        ("prompt", "prompt.build", {}), ("llm", "llm.model", {"backend": backend}),
        ("generate", "llm.generate", {}), ("parse", "parse.answer", {}),
        *([("judge", "eval.judge", {})] if judge else []),
        *([("history", "graph.input", {"name": "history", "default": ""})] if history else []),
        ("answer", "graph.output", {"name": "answer"}),
    ]
    edges = [("corpus.value", "load.path"), ("load.documents", "split.documents"),
             ("split.chunks", "index.chunks"), ("index.index", "retrieve.index"),
             ("question.value", "retrieve.query"), ("question.value", "prompt.query"),
             ("retrieve.results", "prompt.evidence"), ("prompt.prompt", "generate.prompt"),
             ("llm.llm", "generate.llm"), ("generate.answer", "parse.answer"),
             ("prompt.prompt", "parse.prompt")]
    if judge:
        edges += [("parse.answer", "judge.answer"), ("llm.llm", "judge.llm"),
                  ("question.value", "judge.query"), ("judge.answer", "answer.value")]
    else:
        edges.append(("parse.answer", "answer.value"))
    if history:
        edges.append(("history.value", "prompt.history"))
    metadata = {"name": name, **({"description": description} if description else {})}
    return {"schema_version": 1, "metadata": metadata,
            "nodes": [{"id": i, "type": t, "params": p} for i, t, p in nodes],
            "edges": [{"from": a, "to": b} for a, b in edges]}
