"""Embed an evaluation's queries in batches up front, then run the graph per query as usual.

Embedding one query per graph run is most of the query side's cost; searching a vector
index once per query is the next. Before the loop, the first query runs up to each
query-side node that takes an embedder or a vector index: that builds (or loads) the indexes
and shows which embedders the query side uses. All query texts are then embedded with each
of them in batches into a memo that the per-query runs read (``modrag_nodes.embedding.memo``),
and nodes with a ``search_ahead`` hook (vector retrievers) search every query in a few batched
calls into ``modrag_nodes.vectorstore.search_memo``. A text the memos lack (a rewritten query,
say) is embedded and searched as before, so results never depend on the memos.

A text whose query side the node cache already holds (a re-score in the same process after a
param below the query side changed) is neither embedded nor searched: each text's keys are
planned first (``Executor.run(plan_only=True)``). Plans and later questions take the results
that do not depend on the question as held pins (``held_pins``), so they neither visit the
indexing nodes again nor re-check a store per question.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.pins import Pin

log = logging.getLogger(__name__)


def query_side_nodes(doc: GraphDocument, query_name: str,
                     registry: NodeRegistry | None = None) -> set[str]:
    """The nodes that depend on the query input ``query_name`` (and that input's node)."""
    topology = Topology.of(doc)
    inputs = graph_interface(doc, registry or default_registry()).inputs
    query_nodes = {p.node_id for p in inputs if p.name == query_name}
    return set().union(*(topology.downstream(n) | {n} for n in query_nodes))


HELD = "held for this evaluation's questions: it does not depend on the question"


def held_pins(doc: GraphDocument, result: RunResult, query_side: set[str]) -> dict[str, Pin]:
    """The results of ``result`` that the other questions of an evaluation share: each node
    outside ``query_side`` that feeds a query-side node, may be cached and was run or served,
    under its own cache key (so downstream keys stay the ones a full run computes). Empty for
    graphs with loops or subgraphs (their visits are not one per node)."""
    if doc.edges and (any(e.loop is not None for e in doc.edges)
                      or any(n.type == "graph.subgraph" for n in doc.nodes)):
        return {}
    feeding = {e.source_node for e in doc.edges
               if e.target_node in query_side and e.source_node not in query_side}
    feeding = {n for n in feeding if _cacheable(doc, n, result.registry)}
    pins: dict[str, Pin] = {}
    for visit in result.trace.visits:
        outputs = result.node_outputs.get((visit.node_id, visit.iteration))
        if (visit.node_id in feeding and visit.status in ("done", "cached") and outputs
                and visit.cache_key):
            pins[visit.node_id] = Pin(visit.node_id, visit.type_id, outputs, visit.cache_key,
                                      time.time(), held=HELD)
    return pins


def _cacheable(doc: GraphDocument, node_id: str, registry: NodeRegistry | None) -> bool:
    """Whether the node's result may be reused (a node that runs every time, such as a
    sampled LLM call, is never held)."""
    try:
        spec = doc.node(node_id)
        node_type = registry.get(spec.type)  # type: ignore[union-attr]
        return registry.instance(spec.type).is_cacheable(  # type: ignore[union-attr]
            node_type.Params.model_validate(spec.params))
    except Exception:  # no registry, an unknown type, bad params: not held
        return False


def _embedding_nodes(doc: GraphDocument, side: set[str], executor: Executor) -> list[str]:
    """Query-side nodes that take an embedder or a vector index (checked on port types)."""
    from modrag_nodes.embedding.api import EmbedderSpec
    from modrag_nodes.vectorstore.api import VectorIndex

    found = []
    for node in doc.nodes:
        if node.id not in side:
            continue
        try:
            node_type = executor.registry.get(node.type)
        except Exception:  # validation reports unknown types
            continue
        if any(port.type in (EmbedderSpec, VectorIndex) for port in node_type.inputs):
            found.append(node.id)
    return found


def _query_embedders(doc: GraphDocument, node_id: str, result: Any) -> list[Any]:
    """Embedder specs flowing into ``node_id`` (directly or inside a vector index)."""
    from modrag_nodes.embedding.api import EmbedderSpec

    specs: dict[str, Any] = {}
    for edge in doc.edges:
        if edge.target_node != node_id:
            continue
        try:
            value = result.output_of(edge.source_node, edge.source_port)
        except KeyError:
            continue
        spec = value if isinstance(value, EmbedderSpec) else getattr(value, "embedder", None)
        if isinstance(spec, EmbedderSpec):
            specs[spec.model_dump_json()] = spec
    return list(specs.values())


@contextmanager
def batched_query_embeddings(
    doc: GraphDocument, executor: Executor, *, texts: list[str], query_name: str,
    base_inputs: dict[str, Any], hooks: Sequence[RunHook] = (),
    memory_only: set[str] | frozenset[str] = frozenset(),
) -> Iterator[int]:
    """Within the block, per-query runs of ``texts`` find their query vectors already
    computed.

    Yields the number of vectors embedded ahead (0 when the graph embeds no query, or when
    the cache holds every text's query side). ``memory_only``: the nodes whose results the
    setup runs keep out of the disk cache, as the per-query runs do.
    """
    try:
        from modrag_nodes.embedding.api import embed, query_vector_memo, remember
    except ImportError:  # the embedding nodes are not installed
        yield 0
        return
    side = query_side_nodes(doc, query_name, executor.registry)
    targets = _embedding_nodes(doc, side, executor) if texts else []
    specs: dict[str, Any] = {}
    firsts: dict[str, Any] = {}
    for target in targets:  # runs only up to the node: indexes, never an LLM after it
        first = executor.run(doc, {**base_inputs, query_name: texts[0]}, target=target,
                             hooks=hooks, memory_only=memory_only)
        if first.ok:
            firsts[target] = first
            specs.update((s.model_dump_json(), s) for s in _query_embedders(doc, target, first))
    texts = list(dict.fromkeys(texts))
    held = {k: v for first in firsts.values() for k, v in held_pins(doc, first, side).items()}
    missing = _missing(doc, executor, texts, query_name, base_inputs, side, list(firsts),
                       held) if specs else set()
    if not missing:
        yield 0
        return
    texts = [t for i, t in enumerate(texts) if not i or t in missing]  # batches as before
    from modrag_nodes.vectorstore.api import search_memo

    held = executor.resources  # where the per-query runs read the memos
    with query_vector_memo(held) as memo, search_memo(held):
        for spec in specs.values():
            try:
                remember(memo, spec, texts, embed(spec, texts, role="query", resources=held))
            except Exception as exc:  # the per-query runs will embed (and report) themselves
                log.warning("batched query embedding with %s failed: %s", spec.model_id, exc)
        _search_ahead(doc, firsts, executor, texts)
        yield len(memo)


SAMPLE = 16  # texts planned first: when none is cached, the others are not planned


def _missing(doc: GraphDocument, executor: Executor, texts: list[str], query_name: str,
             base_inputs: dict[str, Any], query_side: set[str], targets: list[str],
             held: Mapping[str, Pin]) -> set[str]:
    """The texts to embed ahead. A sample spread over ``texts`` is planned first (the first
    text is left out: its setup run just cached it); when it holds no cached text, as in a
    first evaluation, every text is taken unplanned. Embedding a cached text only costs its
    share of the batch, so the sample decides speed, never results."""
    rest = texts[1:]
    sample = rest[::max(1, len(rest) // SAMPLE)][:SAMPLE]
    args = (query_name, base_inputs, query_side, targets, held)
    if len(sample) < len(rest) and len(uncached_texts(doc, executor, sample, *args)) == len(
            sample):
        return set(texts)
    return set(uncached_texts(doc, executor, texts, *args))


def uncached_texts(doc: GraphDocument, executor: Executor, texts: list[str], query_name: str,
                   base_inputs: dict[str, Any], query_side: set[str],
                   targets: list[str], held: Mapping[str, Pin]) -> list[str]:
    """The texts for which the cache lacks the result of one of ``targets`` (keys planned,
    nothing run). ``held``: pins of real runs (a node whose fingerprint reads its inputs, a
    store, needs their values); the first text's plan visits the other nodes, and the later
    plans take its keys of the nodes that do not depend on the question as pins too (a plan
    needs keys, not values). Planning a text costs a small fraction of embedding it; a
    planned key that misses only means the text is embedded ahead as before."""
    bypassed = {n.id for n in doc.nodes if n.bypass}  # a bypassed node embeds nothing
    wanted = {t for t in targets if t not in bypassed}
    if not wanted:
        return []
    cache, only = executor.cache, next(iter(wanted)) if len(wanted) == 1 else None
    missing: list[str] = []
    pins = dict(held)
    for number, text in enumerate(texts):
        planned = executor.run(doc, {**base_inputs, query_name: text}, plan_only=True,
                               pins=pins, checked=number > 0, target=only)
        if not number:
            pins = {**held_pins(doc, planned, query_side), **held}
        if any(v.node_id in wanted and v.status == "done" and not cache.contains(v.cache_key)
               for v in planned.trace.visits):  # bypassed or skipped: nothing to embed
            missing.append(text)
    return missing


def _search_ahead(doc: GraphDocument, firsts: dict[str, Any], executor: Executor,
                  texts: list[str]) -> None:
    """Nodes whose type searches ahead (``NodeType.search_ahead``: vector retrievers) search
    every query at once."""
    nodes = {n.id: n for n in doc.nodes}
    for target, first in firsts.items():
        node_type = executor.registry.get(nodes[target].type)
        inputs = first.node_inputs.get((target, 0))
        if inputs is None:
            continue
        try:
            executor.registry.instance(nodes[target].type).search_ahead(
                node_type.Params.model_validate(nodes[target].params), inputs, texts,
                executor.resources)
        except Exception as exc:  # the per-query runs will search (and report) themselves
            log.warning("searching ahead at node '%s' failed: %s", target, exc)
