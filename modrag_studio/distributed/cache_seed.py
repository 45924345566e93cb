"""Put results computed elsewhere (the BM25 index merged after a Ray job) into the node cache,
under the key a local run of the same graph computes for that node.

The key is not recomputed here: the executor plans the run (``Executor.run(plan_only=True)``
walks the node's upstream reading the fingerprints a local run reads, e.g. the corpus files'
hashes, and runs nothing but the graph inputs), so whatever the executor keys a result by,
the seeded entry has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor


class CacheSeedError(ModragError):
    """The executor could not reach the node to seed (the message names it)."""


def seed_node_cache(doc: GraphDocument, inputs: Mapping[str, Any], cache: NodeCache,
                    outputs: Mapping[str, dict[str, Any]],
                    registry: NodeRegistry | None = None,
                    base_dir: Path | None = None) -> dict[str, str]:
    """Store ``outputs`` (node id -> port -> value) in ``cache`` under the keys a local run of
    ``doc`` with ``inputs`` computes for those nodes, so that run takes them from the cache
    instead of computing them. Returns node id -> cache key."""
    registry = registry or default_registry()
    executor = Executor(registry, cache=NodeCache(memory_items=64))
    scope = Executor.scope_of(doc)
    keys: dict[str, str] = {}
    for node_id, values in outputs.items():
        result = executor.run(doc, dict(inputs), target=node_id, base_dir=base_dir,
                              plan_only=True)
        visit = result.trace.last_visit(node_id)
        if visit is None or visit.status != "done":
            reason = result.trace.failure_summary("the node was not reached")
            raise CacheSeedError(f"node '{node_id}': cannot compute its cache key ({reason})")
        node_type = registry.get(doc.node(node_id).type)
        cache.put(visit.cache_key, dict(values), disk=node_type.disk_cache)
        signature = result.planned.get(node_id)
        if signature is not None:
            cache.remember_signature(scope, node_id, signature)
        keys[node_id] = visit.cache_key
    return keys
