"""The corpus as the graph sees it: its own loader and splitter run by the executor up to the
splitter's chunks, so the chunk ids of a generated set are the ids the graph retrieves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.evaluation.generation.reading.errors import GenerationError


def index_types(registry: Any) -> frozenset[str]:
    """The node types that index chunks (evidence role "indexes": keyword indexes, vector
    stores, embedded chunks): what they are fed is what the graph retrieves from."""
    return registry.type_ids(
        where=lambda t: t.evidence_role is not None and t.evidence_role.kind == "indexes")


@dataclass(frozen=True)
class ChunkSource:
    """Where the graph's chunks come from: the loader node and the splitter's output port."""

    loader: str
    splitter: str
    port: str = "chunks"

    @property
    def spec(self) -> str:
        return f"{self.splitter}.{self.port}"


def _is_loader(doc: GraphDocument, node_id: str, registry: Any) -> bool:
    return registry.get(doc.node(node_id).type).category == "Loading"


def _chunk_port(doc: GraphDocument, node_id: str, registry: Any) -> str | None:
    node_type = registry.get(doc.node(node_id).type)
    if node_type.category != "Chunking":
        return None
    names = [p.name for p in node_type.outputs]
    return "chunks" if "chunks" in names else ("passed" if "passed" in names else None)


def find_chunk_source(doc: GraphDocument, registry: Any, chunks: str | None = None
                      ) -> ChunkSource:
    """The loader and the splitter whose chunks the graph indexes (``chunks``, NODE.PORT,
    names the splitter output when the graph has several); GenerationError naming what is
    missing."""
    loaders = [n.id for n in doc.nodes if n.type in registry and _is_loader(doc, n.id, registry)]
    if not loaders:
        raise GenerationError("the graph has no loader node (category Loading, e.g. load.files): "
                              "it cannot read the corpus")
    topology = Topology.of(doc)
    if chunks:
        node_id, _, port = chunks.partition(".")
        if node_id not in doc.node_ids():
            raise GenerationError(f"--chunks {chunks}: no node '{node_id}' in the graph")
        port = port or _chunk_port(doc, node_id, registry) or "chunks"
        candidates = [(node_id, port)]
    else:
        candidates = [(n.id, port) for n in doc.nodes if n.type in registry
                      and (port := _chunk_port(doc, n.id, registry)) is not None]
    below = [(c, p) for c, p in candidates
             if any(loader in topology.upstream(c) for loader in loaders)]
    if not below:
        raise GenerationError(
            f"the graph has no splitter (a Chunking node such as split.recursive) fed by its "
            f"loader '{loaders[0]}': there are no chunks to write questions about")
    if len(below) > 1:
        indexes = index_types(registry)
        indexed = [(c, p) for c, p in below if _feeds_index(doc, c, p, indexes)]
        below = indexed if len(indexed) == 1 else below
    if len(below) > 1:
        names = ", ".join(f"{c}.{p}" for c, p in below)
        raise GenerationError(f"the graph has several splitter outputs ({names}); name the one "
                              "to use with --chunks NODE.PORT")
    splitter, port = below[0]
    loader = next(ld for ld in loaders if ld in topology.upstream(splitter))
    return ChunkSource(loader=loader, splitter=splitter, port=port)


def _feeds_index(doc: GraphDocument, node_id: str, port: str, indexes: frozenset[str]) -> bool:
    return any(e.source_node == node_id and e.source_port == port
               and doc.node(e.target_node).type in indexes for e in doc.edges)


def graph_chunks(doc: GraphDocument, executor: Executor, inputs: Mapping[str, Any],
                 source: ChunkSource, *, cancel: CancelToken | None = None,
                 hooks: list[RunHook] | None = None) -> list[Chunk]:
    """Run the graph up to the splitter and return its chunks (GenerationError on a failed
    run, naming the node)."""
    result = executor.run(doc, dict(inputs), target=source.splitter, cancel=cancel,
                          hooks=hooks or [])
    if result.status == "cancelled":
        from modrag_studio.engine.core.errors import RunCancelled

        raise RunCancelled("cancelled while reading the corpus")
    if not result.ok:
        raise GenerationError(f"reading the corpus through '{source.loader}' -> "
                              f"'{source.splitter}' failed: {result.trace.failure_summary()}")
    value = result.output_of(source.splitter, source.port)
    chunks = [c for c in (value or []) if isinstance(c, Chunk)]
    return chunks
