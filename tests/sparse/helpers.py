"""Builders for the sparse retrieval, fusion and rerank tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk
from modrag_studio.engine.core.node import NodeContext, node_context
from modrag_studio.engine.core.resources import Resources, process_resources


def make_ctx(node_id: str = "node", type_id: str = "test",
             resources: Resources | None = None) -> NodeContext:
    """A visit's context outside a run (``resources``: the process's when None)."""
    return node_context(node_id, type_id, resources=resources or process_resources(),
                        work_dir=Path("."))


def chunk(chunk_id: str, text: str = "", **metadata: Any) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], text=text or chunk_id,
                 metadata=metadata)


def chunks_from_texts(texts: list[str]) -> list[Chunk]:
    return [chunk(f"c{i}", text) for i, text in enumerate(texts)]


def ranking(retriever: str, ids: list[str], scores: list[float] | None = None, *,
            kind: str = "similarity", higher_is_better: bool = True) -> list[ScoredChunk]:
    scores = scores if scores is not None else [float(len(ids) - i) for i in range(len(ids))]
    return [ScoredChunk(chunk=chunk(cid), score=s, rank=i + 1, retriever=retriever,
                        score_kind=kind, higher_is_better=higher_is_better)
            for i, (cid, s) in enumerate(zip(ids, scores, strict=True))]


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
                if limit is not None and len(rows) >= limit:
                    break
    return rows


def read_qrels(path: Path) -> dict[str, set[str]]:
    qrels: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, set()).add(doc_id)
    return qrels
