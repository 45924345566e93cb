"""A tiny corpus, a chunk-source fixture node, and graph builders for the dense tests."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.nodes import EmbedChunks, EmbedModel
from modrag_nodes.graph_io import GraphInput, GraphOutput
from modrag_nodes.retrieval.vector import VectorRetrieve
from modrag_nodes.vectorstore.chroma import ChromaStore
from modrag_nodes.vectorstore.lance_db import LanceDBStore
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import OutputPort
from modrag_studio.engine.core.registry import NodeRegistry

DOCS: dict[str, str] = {
    "plants": "Photosynthesis in green plants turns sunlight, water and carbon dioxide into "
              "glucose and releases oxygen.\n\nChlorophyll in the chloroplasts absorbs red and "
              "blue light.",
    "volcano": "A volcano erupts when magma from the mantle rises through the crust and "
               "escapes as lava, ash and gas.",
    "python": "Python lists are mutable sequences: append adds an item at the end and sort "
              "orders the items in place.",
    "football": "The football match ended two to one after the visiting striker scored a late "
                "goal in extra time.",
    "bread": "To bake bread, mix flour, water, yeast and salt, knead the dough, let it rise, "
             "then bake it in a hot oven.\n\nA sourdough starter replaces the yeast.",
}


class ChunksParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    docs: dict[str, str] = Field(default_factory=dict)
    tag: str = ""


class FixtureChunks(NodeType):
    """Test fixture: one chunk per paragraph of the given documents."""

    type_id = "testdata.chunks"
    category = "Test"
    Params = ChunksParams
    outputs = (OutputPort("chunks", list[Chunk]),)

    def run(self, ctx: NodeContext, params: ChunksParams) -> dict[str, Any]:
        return {"chunks": make_chunks(params.docs, params.tag)}


def make_chunks(docs: dict[str, str], tag: str = "") -> list[Chunk]:
    chunks: list[Chunk] = []
    for doc_id, text in docs.items():
        offset = 0
        for index, paragraph in enumerate(text.split("\n\n")):
            start = text.index(paragraph, offset)
            offset = start + len(paragraph)
            meta = {"tag": tag} if tag else {}
            chunks.append(Chunk(chunk_id=f"{doc_id}#{index}", doc_id=doc_id, text=paragraph,
                                start=start, end=offset, index=index, source=f"{doc_id}.txt",
                                metadata=meta))
    return chunks


def registry() -> NodeRegistry:
    reg = NodeRegistry()
    for node_type in (GraphInput, GraphOutput, EmbedModel, EmbedChunks, ChromaStore,
                      LanceDBStore, VectorRetrieve, FixtureChunks):
        reg.register(node_type)
    return reg


def dense_graph(docs: dict[str, str], *, kind: str = "sentence-transformers",
                query_kind: str | None = None, store: dict[str, Any] | None = None,
                top_k: int = 3, tag: str = "", embed_first: bool = False,
                store_type: str = "store.chroma") -> GraphDocument:
    """chunks -> ``store_type`` (embedder) -> retrieve.vector <- question; outputs results and
    index."""
    nodes = [
        {"id": "docs", "type": "testdata.chunks", "params": {"docs": docs, "tag": tag}},
        {"id": "emb", "type": "embed.model", "params": {"kind": kind, "batch_size": 2}},
        {"id": "store", "type": store_type,
         "params": {"max_delete_share": 1.0, **(store or {})}},  # tests shrink collections
        {"id": "q", "type": "graph.input", "params": {"name": "question"}},
        {"id": "search", "type": "retrieve.vector", "params": {"top_k": top_k}},
        {"id": "out", "type": "graph.output", "params": {"name": "results"}},
        {"id": "idx", "type": "graph.output", "params": {"name": "index"}},
    ]
    edges = [
        {"from": "emb.embedder", "to": "store.embedder"},
        {"from": "store.index", "to": "search.index"},
        {"from": "q.value", "to": "search.query"},
        {"from": "search.results", "to": "out.value"},
        {"from": "store.index", "to": "idx.value"},
    ]
    if embed_first:
        nodes.append({"id": "embed", "type": "embed.chunks", "params": {}})
        edges += [{"from": "docs.chunks", "to": "embed.chunks"},
                  {"from": "emb.embedder", "to": "embed.embedder"},
                  {"from": "embed.embedded", "to": "store.embedded"}]
    else:
        edges.append({"from": "docs.chunks", "to": "store.chunks"})
    if query_kind is not None:
        nodes.append({"id": "qemb", "type": "embed.model", "params": {"kind": query_kind}})
        edges.append({"from": "qemb.embedder", "to": "search.embedder"})
    return GraphDocument.model_validate(
        {"metadata": {"name": "dense-test"}, "nodes": nodes, "edges": edges}
    )
