"""``retrieve.vector``: dense retrieval from a vector index by cosine similarity."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.retrieval.ranking import scored, source_rank
from modrag_nodes.vectorstore import exact_search, handles, search_memo
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.records import META_MODEL_ID
from modrag_studio.engine.core.node import (
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    Resources,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole


class VectorRetrieveParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(10, ge=1, le=10_000, description="How many chunks to return")


class VectorRetrieve(NodeType):
    type_id = "retrieve.vector"
    span_kind = "retriever"
    key_params = ("top_k",)
    evidence_role = EvidenceRole("retrieves", top_param="top_k", noun="vector search")
    title = "Vector retriever"
    category = "Retrieval"
    description = (
        "Finds the chunks closest to the query (and its variants, or its hypothetical answer) "
        "in a vector index (Chroma or LanceDB); scores are cosine similarities, higher is "
        "better."
    )
    Params = VectorRetrieveParams
    inputs = (
        InputPort("index", VectorIndex, description="The vector index to search"),
        InputPort("query", Query, description="The question (a plain text wire works too)"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Query embedder; must be the index's (default: the index's)"),
    )
    outputs = (OutputPort("results", list[ScoredChunk], "Best chunks first, rank 1.."),)

    def search_ahead(self, params: VectorRetrieveParams, inputs: dict[str, Any],
                     texts: list[str], resources: Resources | None = None) -> int:
        """An evaluation's hook: search all its queries at once (see search_queries_ahead)."""
        return search_queries_ahead(params, inputs, texts, resources)

    def run(self, ctx: NodeContext, params: VectorRetrieveParams, index: VectorIndex,
            query: Query, embedder: EmbedderSpec | None = None) -> dict[str, Any]:
        spec = _query_embedder(index, embedder)
        key = handles.location_key(index)
        collection, version = handles.open_collection(key, index.collection, ctx.resources)
        if collection is None:
            raise NodeConfigError(
                f"input 'index': collection '{index.collection}' does not exist at "
                f"{index.location}; run the vector store node again"
            )
        stored_id = (collection.metadata or {}).get(META_MODEL_ID)
        if stored_id and stored_id != spec.model_id:
            raise NodeConfigError(
                f"collection '{index.collection}' holds vectors of {stored_id}, but the query "
                f"embedder is {spec.model_id}; queries must use the collection's embedder"
            )
        if query.hypothetical:
            texts, role = [query.hypothetical], "passage"
        else:
            texts, role = query.all_texts(), "query"
        if not texts or not any(t.strip() for t in texts):
            raise NodeConfigError("input 'query' is empty")
        count = handles.count_at(key, index.collection, collection, version)
        if count == 0:
            ctx.warn(f"collection '{index.collection}' is empty")
            return {"results": []}
        vectors = embed_texts(spec, texts, role=role, ctx=ctx)
        if vectors.shape[1] != index.dim:
            raise NodeConfigError(
                f"query vectors have {vectors.shape[1]} dimensions, the index {index.dim}"
            )
        where = (*key, index.collection, version)
        found = search_memo.remembered(where, min(params.top_k, count), vectors,
                                       ctx.resources)
        if found is None and exact_search.applies(collection, count):
            found = exact_search.query(collection, where, vectors, min(params.top_k, count),
                                       ["documents", "metadatas"], ctx.resources)
            ctx.note(search="exact (a small collection)")
        elif found is None:
            found = collection.query(
                query_embeddings=vectors, n_results=min(params.top_k, count),
                include=["documents", "metadatas", "distances"],
            )
        else:
            ctx.note(searched_ahead=True)
        results = _merge(found, params.top_k, ctx.node_id, ctx.resources)
        ctx.note(
            model_id=spec.model_id, queries=len(texts),
            embedded="hypothetical answer (HyDE)" if query.hypothetical else "query texts",
            score="cosine similarity = 1 - cosine distance", store=index.backend,
            returned=len(results),
        )
        return {"results": results}


def search_queries_ahead(params: VectorRetrieveParams, inputs: dict[str, Any],
                         texts: list[str], resources: Resources | None = None) -> int:
    """Search ``texts`` (plain queries) in one batched call into the search memo open in
    ``resources`` (the per-query runs'), so the runs of an evaluation skip their own call;
    returns the rows kept."""
    index = inputs.get("index")
    if not isinstance(index, VectorIndex) or not texts or not search_memo.is_open(resources):
        return 0
    spec = _query_embedder(index, inputs.get("embedder"))
    key = handles.location_key(index)
    collection, version = handles.open_collection(key, index.collection, resources)
    if collection is None:
        return 0
    count = handles.count_at(key, index.collection, collection, version)
    if count == 0:
        return 0
    vectors = embed_texts(spec, texts, role="query", resources=resources)
    return search_memo.search_ahead(collection, (*key, index.collection, version),
                                    min(params.top_k, count), vectors,
                                    exact=exact_search.applies(collection, count),
                                    resources=resources)


def _query_embedder(index: VectorIndex, embedder: EmbedderSpec | None) -> EmbedderSpec:
    if embedder is None:
        return index.embedder
    if embedder.model_id != index.model_id:
        raise NodeConfigError(
            f"input 'embedder' is {embedder.model_id} but collection '{index.collection}' "
            f"was indexed with {index.model_id}; use the same embedder for queries"
        )
    return embedder


def _merge(found: dict[str, Any], top_k: int, node_id: str, resources: Resources
           ) -> list[ScoredChunk]:
    """One list from the per-text results: each chunk keeps its best similarity."""
    best: dict[str, tuple[float, str, str | None, dict[str, Any] | None]] = {}
    for row, ids in enumerate(found["ids"]):
        docs = (found.get("documents") or [[]] * len(found["ids"]))[row]
        metas = (found.get("metadatas") or [[]] * len(found["ids"]))[row]
        distances = found["distances"][row]
        for col, record_id in enumerate(ids):
            similarity = 1.0 - float(distances[col])
            held = best.get(record_id)
            if held is None or similarity > held[0]:
                best[record_id] = (similarity, record_id,
                                   docs[col] if docs else None, metas[col] if metas else None)
    ordered = sorted(best.values(), key=lambda item: (-item[0], item[1]))[:top_k]
    chunk_of = search_memo.chunk_maker(resources)
    return [scored(chunk_of(record_id, text, meta), score, score_kind="similarity", rank=rank,
                   retriever=node_id, sources={node_id: source_rank(node_id, rank, score)})
            for rank, (score, record_id, text, meta) in enumerate(ordered, start=1)]
