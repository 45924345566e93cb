"""Tiny deterministic RAG nodes and graph builders for the run & inspect UI tests."""

from __future__ import annotations

import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.datatypes import (
    Answer,
    Chunk,
    Citation,
    Document,
    ScoredChunk,
    SourceRank,
)
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry

TEXTS = [
    "Aspirin reduces fever. It also thins the blood and lowers the risk of heart attack.",
    "Vitamin C is found in citrus fruit. Scurvy is caused by a lack of vitamin C.",
    "Regular exercise lowers blood pressure. Walking counts as exercise.",
    "Coffee contains caffeine. Caffeine raises alertness for a few hours.",
]


class _P(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DocsParams(_P):
    count: int = Field(4, ge=1, le=200_000)


class ToyDocs(NodeType):
    type_id = "toy.docs"
    title = "Toy documents"
    category = "Test"
    Params = DocsParams
    outputs = (OutputPort("documents", list[Document]),)

    def run(self, ctx: NodeContext, params: DocsParams) -> dict[str, Any]:
        docs = [Document(doc_id=f"d{i}", text=TEXTS[i % len(TEXTS)], title=f"Doc {i}")
                for i in range(params.count)]
        return {"documents": docs}


class ToySplit(NodeType):
    type_id = "toy.split"
    title = "Toy sentence splitter"
    category = "Test"
    inputs = (InputPort("documents", list[Document]),)
    outputs = (OutputPort("chunks", list[Chunk]),)

    def run(self, ctx: NodeContext, params: Any, documents: list[Document]) -> dict[str, Any]:
        chunks = []
        for doc in documents:
            for i, match in enumerate(re.finditer(r"[^.]+\.", doc.text)):
                start = match.start() + (len(match.group()) - len(match.group().lstrip()))
                chunks.append(Chunk(chunk_id=f"{doc.doc_id}#{i}", doc_id=doc.doc_id,
                                    text=doc.text[start:match.end()], start=start,
                                    end=match.end(), index=len(chunks)))
        return {"chunks": chunks}


class SearchParams(_P):
    top_k: int = Field(3, ge=1)
    name: str = "words"
    reverse: bool = False


class ToySearch(NodeType):
    type_id = "toy.search"
    title = "Toy word-overlap search"
    category = "Test"
    Params = SearchParams
    inputs = (InputPort("query", str), InputPort("chunks", list[Chunk]))
    outputs = (OutputPort("results", list[ScoredChunk]),)

    def run(self, ctx: NodeContext, params: SearchParams, query: str,
            chunks: list[Chunk]) -> dict[str, Any]:
        words = set(query.lower().split())
        scored = [(len(words & set(c.text.lower().rstrip(".").split())) + c.index * 1e-3, c)
                  for c in chunks]
        scored.sort(key=lambda p: p[0], reverse=not params.reverse)
        return {"results": [ScoredChunk(chunk=c, score=s, rank=r + 1, retriever=params.name)
                            for r, (s, c) in enumerate(scored[: params.top_k])]}


class ToyFuse(NodeType):
    type_id = "toy.fuse"
    title = "Toy reciprocal rank fusion"
    category = "Test"
    inputs = (InputPort("rankings", list[ScoredChunk], multiple=True),)
    outputs = (OutputPort("results", list[ScoredChunk]),)

    def run(self, ctx: NodeContext, params: Any,
            rankings: list[list[ScoredChunk]]) -> dict[str, Any]:
        table: dict[str, tuple[Chunk, float, dict[str, SourceRank]]] = {}
        for ranking in rankings:
            for item in ranking:
                chunk, score, sources = table.get(item.chunk_id, (item.chunk, 0.0, {}))
                sources[item.retriever] = SourceRank(retriever=item.retriever, rank=item.rank,
                                                     score=item.score)
                table[item.chunk_id] = (chunk, score + 1 / (60 + item.rank), sources)
        ordered = sorted(table.values(), key=lambda t: -t[1])
        return {"results": [ScoredChunk(chunk=c, score=s, rank=i + 1, score_kind="rrf",
                                        retriever="fused", sources=src)
                            for i, (c, s, src) in enumerate(ordered)]}


class AnswerParams(_P):
    delay: float = Field(0.0, ge=0)


class ToyAnswer(NodeType):
    type_id = "toy.answer"
    title = "Toy answer writer"
    category = "Test"
    Params = AnswerParams
    inputs = (InputPort("query", str), InputPort("evidence", list[ScoredChunk]))
    outputs = (OutputPort("answer", Answer),)

    def run(self, ctx: NodeContext, params: AnswerParams, query: str,
            evidence: list[ScoredChunk]) -> dict[str, Any]:
        best = evidence[:2]
        words = ["Based", "on", "the", "sources:"] + " ".join(e.chunk.text for e in best).split()
        text = ""
        for word in words:
            piece = word + " "
            text += piece
            ctx.stream(piece)
            if params.delay:
                time.sleep(params.delay)
        text = text.strip() + " " + " ".join(f"[{i + 1}]" for i in range(len(best)))
        cites = [Citation(ref=str(i + 1), doc_id=e.doc_id, chunk_id=e.chunk_id)
                 for i, e in enumerate(best)]
        return {"answer": Answer(text=text, citations=cites, evidence=best, query=query)}


TOY_TYPES = (ToyDocs, ToySplit, ToySearch, ToyFuse, ToyAnswer)


def toy_registry(base: NodeRegistry | None = None) -> NodeRegistry:
    """The given (or a fresh built-in) registry with the toy nodes added."""
    if base is None:
        from modrag_nodes import register_builtin_nodes

        base = NodeRegistry()
        register_builtin_nodes(base)
    for node_type in TOY_TYPES:
        if node_type.type_id not in base:
            base.register(node_type)
    return base


def _doc(nodes: list[dict], edges: list[tuple[str, str]], name: str) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": name}, "nodes": nodes,
        "edges": [{"from": a, "to": b} for a, b in edges]})


def rag_graph(delay: float = 0.0, name: str = "toy-rag") -> GraphDocument:
    """question -> two searches over split docs -> fusion -> answer -> output."""
    n = [
        {"id": "question", "type": "graph.input",
         "params": {"name": "question", "default": "what lowers blood pressure",
                    "description": "The question to answer"}},
        {"id": "docs", "type": "toy.docs", "params": {"count": 4}},
        {"id": "split", "type": "toy.split"},
        {"id": "words", "type": "toy.search", "params": {"top_k": 4, "name": "words"}},
        {"id": "tail", "type": "toy.search",
         "params": {"top_k": 4, "name": "tail", "reverse": True}},
        {"id": "fuse", "type": "toy.fuse"},
        {"id": "answer", "type": "toy.answer", "params": {"delay": delay}},
        {"id": "out", "type": "graph.output", "params": {"name": "answer"}},
    ]
    e = [("docs.documents", "split.documents"), ("question.value", "words.query"),
         ("split.chunks", "words.chunks"), ("question.value", "tail.query"),
         ("split.chunks", "tail.chunks"), ("words.results", "fuse.rankings"),
         ("tail.results", "fuse.rankings"), ("question.value", "answer.query"),
         ("fuse.results", "answer.evidence"), ("answer.answer", "out.value")]
    return _doc(n, e, name)


def flag_graph() -> GraphDocument:
    """The toy RAG graph with a question normaliser (text.upper) in front of the answer."""
    data = rag_graph().model_dump(by_alias=True)
    data["nodes"].append({"id": "normalise", "type": "text.upper", "title": "Normalise"})
    data["edges"] = [e for e in data["edges"] if e["to"] != "answer.query"]
    data["edges"] += [{"from": "question.value", "to": "normalise.text"},
                      {"from": "normalise.text", "to": "answer.query"}]
    return GraphDocument.model_validate(data)


def slow_graph(seconds: float = 30.0) -> GraphDocument:
    n = [{"id": "start", "type": "debug.constant", "params": {"value": "x"}},
         {"id": "slow", "type": "debug.sleep", "params": {"seconds": seconds, "steps": 300}},
         {"id": "after", "type": "text.upper"},
         {"id": "out", "type": "graph.output", "params": {"name": "result"}}]
    e = [("start.value", "slow.value"), ("slow.value", "after.text"), ("after.text", "out.value")]
    return _doc(n, e, "slow")

