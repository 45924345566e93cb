"""Which nodes a run visits: a ``target`` ("run to here") and its upstream, the nodes
``rerun`` and ``start_from`` make execute, the upstream a ``start_from`` run may only take
from the cache, and the nodes left out because they only feed pinned nodes.

Pure functions of the expanded graph's topology; the executor asks them once per run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from modrag_studio.engine.compose.expand import Expanded
from modrag_studio.engine.core.graph_io import GraphInterface
from modrag_studio.engine.core.topology import Topology


@dataclass(frozen=True)
class Selection:
    """The nodes of one run, by the part they play in it."""

    active: set[str]  # visited, in dependency order
    forced: set[str]  # executed even when cached (``rerun``, ``start_from``)
    cached_only: set[str]  # served from the cache or failing (upstream of ``start_from``)
    targets: set[str] | None  # the nodes ``target`` stands for; None: the whole graph

    def past_pins(self, topology: Topology, pinned: set[str]) -> set[str]:
        """The active nodes still needed when ``pinned`` nodes hand out pinned values."""
        if not pinned:
            return self.active
        if self.targets is None:
            return self.active & needed_nodes(topology, pinned)
        return self.active & set().union(
            *(needed_nodes(topology, pinned, t) for t in self.targets))


def select_nodes(expanded: Expanded, topology: Topology, interface: GraphInterface, *,
                 target: str | None, rerun: Iterable[str], start_from: str | None
                 ) -> Selection:
    """The nodes a run visits, forces and takes from the cache only (node ids of the graph
    as saved: a subgraph stands for its inner nodes)."""
    targets = None if target is None else members(expanded, target)
    active = set(topology.node_ids) if targets is None else closure(topology, targets)
    forced = {n for node_id in rerun for n in members(expanded, node_id)}
    cached_only: set[str] = set()
    if start_from is not None:
        starts = members(expanded, start_from)
        forced |= starts
        graph_inputs = {p.node_id for p in interface.inputs}
        cached_only = closure(topology, starts) - starts - graph_inputs
    return Selection(active, forced, cached_only, targets)


def members(expanded: Expanded, node_id: str) -> set[str]:
    """The nodes of the expanded graph a node id stands for (a subgraph: its inner nodes)."""
    return set(expanded.inner_of(node_id)) or {node_id}


def closure(topology: Topology, nodes: set[str]) -> set[str]:
    """``nodes`` and everything upstream of them."""
    found = set(nodes)
    for node_id in nodes:
        found |= topology.upstream(node_id)
    return found


def needed_nodes(topology: Topology, pinned: set[str], target: str | None = None) -> set[str]:
    """The nodes a run must visit when ``pinned`` nodes hand out pinned values: walking back
    from ``target`` (or from every node nothing depends on), never past a pinned node."""
    roots = {target} if target is not None else {
        n for n in topology.node_ids if not topology.outgoing.get(n)}
    needed = set(roots)
    queue = list(roots)
    while queue:
        node_id = queue.pop()
        if node_id in pinned:
            continue
        for edge in topology.incoming.get(node_id, []):
            if edge.source_node not in needed:
                needed.add(edge.source_node)
                queue.append(edge.source_node)
    return needed
