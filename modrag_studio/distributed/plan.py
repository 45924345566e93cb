"""The ingest part of a graph: loader -> splitter(s) -> embedder -> Chroma store and/or BM25.

``ingest_plan`` finds it in a graph document; ``index_locally`` runs it through the executor
(the reference a Ray run is compared with). The Ray pipeline (``ray_index``) runs the same node
classes on blocks of documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook


@dataclass(frozen=True)
class IngestTypes:
    """The node types an ingest part is made of, by what they declare and produce: loaders
    (evidence role "source"), vector stores (store role "vector"), BM25 indexes and
    embedding models (the types with such an output)."""

    loaders: frozenset[str]
    stores: frozenset[str]
    bm25: frozenset[str]
    embedders: frozenset[str]

    @classmethod
    def of(cls, registry: NodeRegistry) -> IngestTypes:
        from modrag_nodes.embedding.api import EmbedderSpec
        from modrag_nodes.retrieval.api import BM25Index

        def producing(value_type: type) -> frozenset[str]:
            return registry.type_ids(where=lambda t: any(p.type is value_type
                                                         for p in t.outputs))

        return cls(
            loaders=registry.type_ids(where=lambda t: t.evidence_role is not None
                                      and t.evidence_role.kind == "source"),
            stores=registry.type_ids(where=lambda t: t.store_role == "vector"),
            bm25=producing(BM25Index), embedders=producing(EmbedderSpec))


class IngestGraphError(ModragError):
    """The graph has no ingest part this command can run (the message names the node)."""


@dataclass(frozen=True)
class StepSpec:
    """One node of the per-document chain: its id, type and validated params (as JSON)."""

    node_id: str
    type_id: str
    params: dict[str, Any]
    embedder_node: str | None = None  # embed.model wired into a splitter's 'embedder'
    embedder_json: str | None = None  # its EmbedderSpec (filled in for Ray workers)


@dataclass
class IngestPlan:
    """The nodes of a graph's ingest part, in the order data flows through them."""

    loader: StepSpec
    loader_input: str | None  # graph input feeding the loader's 'path' (None: the param)
    chain: list[StepSpec]  # loader output -> ... -> chunks (splitters, per document)
    store: StepSpec | None = None
    embedder_node: str | None = None  # embed.model feeding the store (None: default model)
    bm25: StepSpec | None = None
    sinks: list[str] = field(default_factory=list)

    def describe(self) -> str:
        sinks = [s.node_id for s in (self.store, self.bm25) if s is not None]
        steps = [self.loader.node_id, *(s.node_id for s in self.chain)]
        return " -> ".join(steps) + " -> " + " + ".join(sinks)


def _step(doc: GraphDocument, registry: NodeRegistry, node_id: str) -> StepSpec:
    spec = doc.node(node_id)
    node_type = registry.get(spec.type)
    try:
        params = node_type.Params.model_validate(spec.params).model_dump(mode="json")
    except ValueError as exc:
        raise IngestGraphError(f"node '{node_id}' ({spec.type}): invalid params: {exc}") \
            from None
    return StepSpec(node_id, spec.type, params)


def _sources(doc: GraphDocument, node_id: str) -> dict[str, list[str]]:
    """Port -> source node ids of the edges into ``node_id`` (loop edges excluded)."""
    found: dict[str, list[str]] = {}
    for edge in doc.edges:
        if edge.target_node == node_id and edge.loop is None:
            found.setdefault(edge.target_port, []).append(edge.source_node)
    return found


def ingest_plan(doc: GraphDocument, registry: NodeRegistry | None = None) -> IngestPlan:
    """Find the ingest part of ``doc``; IngestGraphError says why there is none usable."""
    registry = registry or default_registry()
    types = IngestTypes.of(registry)
    stores = [n.id for n in doc.nodes if n.type in types.stores]
    indexes = [n.id for n in doc.nodes if n.type in types.bm25]
    if not stores and not indexes:
        raise IngestGraphError(f"the graph has no {', '.join(sorted(types.stores))} or "
                               f"{', '.join(sorted(types.bm25))} node: nothing to index")
    if len(stores) > 1 or len(indexes) > 1:
        raise IngestGraphError(f"the graph has {len(stores)} vector stores and {len(indexes)} "
                               "bm25.index nodes; indexing handles at most one of each")
    chains: list[tuple[StepSpec, str | None, list[StepSpec]]] = []
    embedder_node: str | None = None
    for sink in stores + indexes:
        sources = _sources(doc, sink)
        chunk_source = sources.get("chunks", [])
        if doc.node(sink).type in types.stores:
            if sources.get("embedded"):
                via = sources["embedded"][0]
                inner = _sources(doc, via)
                chunk_source = inner.get("chunks", [])
                embedder_node = (inner.get("embedder") or sources.get("embedder") or [None])[0]
            else:
                embedder_node = (sources.get("embedder") or [None])[0]
            if embedder_node is not None and doc.node(embedder_node).type not in types.embedders:
                raise IngestGraphError(f"node '{sink}': its embedder comes from "
                                       f"'{embedder_node}', not from an embedding model node")
        if len(chunk_source) != 1:
            raise IngestGraphError(f"node '{sink}': input 'chunks' must come from exactly one "
                                   "splitter")
        chains.append(_chain(doc, registry, types, chunk_source[0], sink))
    loader, loader_input, chain = chains[0]
    if any([s.node_id for s in c[2]] != [s.node_id for s in chain] for c in chains[1:]):
        raise IngestGraphError("the store and the BM25 index are fed by different splitters; "
                               "indexing needs one chain loader -> splitter(s) for both")
    return IngestPlan(
        loader=loader, loader_input=loader_input, chain=chain,
        store=_step(doc, registry, stores[0]) if stores else None,
        embedder_node=embedder_node,
        bm25=_step(doc, registry, indexes[0]) if indexes else None,
        sinks=stores + indexes,
    )


def _chain(doc: GraphDocument, registry: NodeRegistry, types: IngestTypes, last: str,
           sink: str) -> tuple[StepSpec, str | None, list[StepSpec]]:
    """Walk back from the node feeding ``sink`` to the loader: every node on the way takes
    one list from the previous one and has no other connected input than an embed.model
    node's embedder (a splitter fitting its chunks to that embedder's window)."""
    chain: list[StepSpec] = []
    node_id = last
    while doc.node(node_id).type not in types.loaders:
        sources = _sources(doc, node_id)
        embedders = [src for src in sources.get("embedder", [])
                     if doc.node(src).type in types.embedders]  # a splitter's window: not a feed
        feeds = [src for port, srcs in sources.items() for src in srcs
                 if not (port == "embedder" and src in embedders)]
        if len(feeds) != 1 or len(chain) > 20:
            raise IngestGraphError(
                f"node '{node_id}' ({doc.node(node_id).type}) between the loader and "
                f"'{sink}' has {len(feeds)} connected inputs; indexing runs per-document "
                "chains load.files -> splitter(s) whose nodes take one list each")
        step = _step(doc, registry, node_id)
        if embedders:
            step = StepSpec(step.node_id, step.type_id, step.params, embedders[0])
        chain.insert(0, step)
        node_id = feeds[0]
    loader = _step(doc, registry, node_id)
    path_sources = _sources(doc, node_id).get("path", [])
    loader_input = None
    if path_sources:
        source = graph_interface(doc, registry).port_of(path_sources[0])
        if source is None or source.role != "input":
            raise IngestGraphError(f"node '{node_id}': input 'path' must come from a graph "
                                   "input (or be left unconnected to use the param)")
        loader_input = source.name
    if not chain:
        raise IngestGraphError(f"node '{sink}' takes documents straight from '{node_id}'; "
                               "put a splitter between them")
    return loader, loader_input, chain


def index_locally(doc: GraphDocument, plan: IngestPlan, inputs: Mapping[str, Any],
                  executor: Executor, *, hooks: Iterable[RunHook] = (),
                  cancel: CancelToken | None = None,
                  base_dir: Path | None = None) -> dict[str, RunResult]:
    """Run each sink of the plan (and what it needs) through the executor, in one process
    (``base_dir``: where relative paths resolve, as ``Executor.run`` takes it)."""
    wanted = {name: value for name, value in inputs.items()}
    results: dict[str, RunResult] = {}
    for sink in plan.sinks:
        results[sink] = executor.run(doc, wanted, hooks=hooks, cancel=cancel, target=sink,
                                     base_dir=base_dir)
        if not results[sink].ok:
            break
    return results


def corpus_root(plan: IngestPlan, inputs: Mapping[str, Any]) -> Path:
    """The file or folder the loader reads (its graph input, else its 'path' param)."""
    from modrag_nodes.ingest.api import LoadParams, resolve_path

    value = inputs.get(plan.loader_input) if plan.loader_input else None
    if plan.loader_input and value in (None, ""):
        raise IngestGraphError(f"give the corpus with --input {plan.loader_input}=PATH (graph "
                               f"input feeding node '{plan.loader.node_id}')")
    return resolve_path(LoadParams.model_validate(plan.loader.params), value)


def with_splitter_embedders(doc: GraphDocument, plan: IngestPlan,
                            executor: Executor | None = None) -> IngestPlan:
    """``plan`` whose splitters wired to an embed.model node carry its EmbedderSpec as JSON
    (a Ray worker runs the splitter alone, so it gets the spec with the step)."""
    import dataclasses

    if not any(step.embedder_node for step in plan.chain):
        return plan
    executor = executor or Executor(default_registry())
    chain = []
    for step in plan.chain:
        if step.embedder_node is not None:
            result = executor.run(doc, {}, target=step.embedder_node)
            if not result.ok:
                raise IngestGraphError(result.trace.failure_summary(
                    f"the embedder node of splitter '{step.node_id}' did not run"))
            spec = result.output_of(step.embedder_node, "embedder")
            step = dataclasses.replace(step, embedder_json=spec.model_dump_json())
        chain.append(step)
    return dataclasses.replace(plan, chain=chain)


def embedder_of_plan(doc: GraphDocument, plan: IngestPlan, inputs: Mapping[str, Any],
                     executor: Executor | None = None) -> Any:
    """The store's EmbedderSpec, made by the graph's own embed.model node (which also checks
    that the model is available here)."""
    from modrag_nodes.embedding.api import EmbedderSpec

    if plan.embedder_node is None:
        return EmbedderSpec()
    executor = executor or Executor(default_registry())
    result = executor.run(doc, {}, target=plan.embedder_node)
    if not result.ok:
        raise IngestGraphError(result.trace.failure_summary("the embedder node did not run"))
    return result.output_of(plan.embedder_node, "embedder")
