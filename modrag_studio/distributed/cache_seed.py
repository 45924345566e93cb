"""Put results computed elsewhere (the BM25 index merged after a Ray job) into the node cache,
under the key a local run of the same graph computes for that node.

The key is not recomputed here: the executor itself walks the node's upstream (reading the
fingerprints a local run reads, e.g. the corpus files' hashes), with every node's ``run``
replaced by a stand-in, so whatever the executor keys a result by, the seeded entry has it.
The stand-ins' placeholder outputs live in a scratch cache that is thrown away.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor


class CacheSeedError(ModragError):
    """The executor could not reach the node to seed (the message names it)."""


class _StandIn:
    """A node instance whose ``run`` returns the given outputs (for the seeded nodes), runs
    for real (graph inputs: they only hand over a run input), or returns placeholders (every
    other upstream node: nothing downstream of it but the seeded node reads them).
    Fingerprints and cacheability are the real node's."""

    def __init__(self, real: NodeType, served: Mapping[str, dict[str, Any]]) -> None:
        self._real = real
        self._served = served

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def run(self, ctx: NodeContext, params: Any, **inputs: Any) -> dict[str, Any]:
        if ctx.node_id in self._served:
            return dict(self._served[ctx.node_id])
        if type(self._real).graph_role == "input":
            return self._real.run(ctx, params, **inputs)
        return {port.name: None for port in type(self._real).outputs}


class _StandInRegistry(NodeRegistry):
    """The types of ``base`` with stand-in instances (type lookups are unchanged)."""

    def __init__(self, base: NodeRegistry, served: Mapping[str, dict[str, Any]]) -> None:
        super().__init__()
        self._types, self._aliases = base._types, base._aliases
        self._base = base
        self._served = served

    def instance(self, type_id: str) -> Any:
        return _StandIn(self._base.instance(type_id), self._served)


def seed_node_cache(doc: GraphDocument, inputs: Mapping[str, Any], cache: NodeCache,
                    outputs: Mapping[str, dict[str, Any]],
                    registry: NodeRegistry | None = None,
                    base_dir: Path | None = None) -> dict[str, str]:
    """Store ``outputs`` (node id -> port -> value) in ``cache`` under the keys a local run of
    ``doc`` with ``inputs`` computes for those nodes, so that run takes them from the cache
    instead of computing them. Returns node id -> cache key."""
    registry = registry or default_registry()
    scratch = NodeCache(memory_items=64)
    executor = Executor(_StandInRegistry(registry, outputs), cache=scratch)
    scope = Executor.scope_of(doc)
    keys: dict[str, str] = {}
    for node_id, values in outputs.items():
        result = executor.run(doc, dict(inputs), target=node_id, base_dir=base_dir)
        visit = result.trace.last_visit(node_id)
        if visit is None or visit.status != "done":
            reason = result.trace.failure_summary("the node was not reached")
            raise CacheSeedError(f"node '{node_id}': cannot compute its cache key ({reason})")
        node_type = registry.get(doc.node(node_id).type)
        cache.put(visit.cache_key, dict(values), disk=node_type.disk_cache)
        signature = scratch.last_signature(scope, node_id)
        if signature is not None:
            cache.remember_signature(scope, node_id, signature)
        keys[node_id] = visit.cache_key
    return keys
