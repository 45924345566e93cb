"""Graph structure helpers: edge indexes, order without loop-back edges, reachability."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from modrag_studio.engine.core.document import EdgeSpec, GraphDocument


@dataclass
class Topology:
    """Indexes over a document's edges; loop-back edges are kept apart from the DAG."""

    node_ids: list[str]
    forward: list[EdgeSpec]
    loops: list[EdgeSpec]
    incoming: dict[str, list[EdgeSpec]] = field(default_factory=lambda: defaultdict(list))
    outgoing: dict[str, list[EdgeSpec]] = field(default_factory=lambda: defaultdict(list))
    loops_from: dict[tuple[str, str], list[EdgeSpec]] = field(
        default_factory=lambda: defaultdict(list)
    )
    into_port: dict[tuple[str, str], list[EdgeSpec]] = field(
        default_factory=lambda: defaultdict(list)
    )
    loop_into: dict[tuple[str, str], EdgeSpec] = field(default_factory=dict)

    @classmethod
    def of(cls, doc: GraphDocument) -> Topology:
        known = set(doc.node_ids())
        forward = [e for e in doc.edges if e.loop is None]
        loops = [e for e in doc.edges if e.loop is not None]
        topo = cls(node_ids=doc.node_ids(), forward=forward, loops=loops)
        for edge in forward:
            if edge.source_node in known and edge.target_node in known:
                topo.incoming[edge.target_node].append(edge)
                topo.outgoing[edge.source_node].append(edge)
                topo.into_port[(edge.target_node, edge.target_port)].append(edge)
        for edge in loops:
            topo.loops_from[(edge.source_node, edge.source_port)].append(edge)
            topo.loop_into.setdefault((edge.target_node, edge.target_port), edge)
        return topo

    def order(self) -> tuple[list[str], list[str]]:
        """Kahn's order over forward edges (ties keep file order); second item: nodes in cycles."""
        position = {n: i for i, n in enumerate(self.node_ids)}
        indegree = {n: 0 for n in self.node_ids}
        for edges in self.incoming.values():
            for edge in edges:
                indegree[edge.target_node] += 1
        ready = deque(sorted((n for n, d in indegree.items() if d == 0), key=position.get))
        ordered: list[str] = []
        while ready:
            node = ready.popleft()
            ordered.append(node)
            released = []
            for edge in self.outgoing.get(node, []):
                indegree[edge.target_node] -= 1
                if indegree[edge.target_node] == 0:
                    released.append(edge.target_node)
            for target in sorted(set(released), key=position.get):
                ready.append(target)
        placed = set(ordered)
        cyclic = [n for n in self.node_ids if n not in placed]
        return ordered, cyclic

    def upstream(self, node_id: str) -> set[str]:
        """Every node ``node_id`` depends on through forward edges (excluding itself)."""
        return self._walk(node_id, lambda n: (e.source_node for e in self.incoming.get(n, [])))

    def downstream(self, node_id: str) -> set[str]:
        return self._walk(node_id, lambda n: (e.target_node for e in self.outgoing.get(n, [])))

    @staticmethod
    def _walk(start: str, step) -> set[str]:
        seen: set[str] = set()
        queue = deque([start])
        while queue:
            for nxt in step(queue.popleft()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        seen.discard(start)
        return seen
