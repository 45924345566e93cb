"""Which node usually comes next: wire-drop suggestions ranked by the samples' own wiring.

A wire dropped on empty canvas offers the node types that fit it. They are ranked by how
often the shipped sample graphs (and their subgraphs and components) wire the same port to
each type: first by the same node type and port (``retrieve.vector.results`` goes to a
fusion 7 times), then by the same value type on the wire (a ranking of passages goes to a
prompt builder, a focus step, a reranker), then as before (exact fits, then by title).
Plain Python: counted once per folder from the JSON files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.ports import type_name
from modrag_studio.engine.core.registry import NodeRegistry

SAMPLES = Path(__file__).resolve().parents[3] / "sample_graphs"


def _graphs(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A graph file's graph and every subgraph inside it."""
    yield data
    for node in data.get("nodes", []):
        inner = (node.get("subgraph") or {}).get("graph")
        if isinstance(inner, dict):
            yield from _graphs(inner)


def _ends(graph: dict[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """(source type, source port, target type, target port) of every wire."""
    types = {n.get("id"): n.get("type") for n in graph.get("nodes", [])}
    for edge in graph.get("edges", []):
        source, _, source_port = str(edge.get("from", "")).partition(".")
        target, _, target_port = str(edge.get("to", "")).partition(".")
        if types.get(source) and types.get(target):
            yield types[source], source_port, types[target], target_port


class SampleWiring:
    """Counts of the samples' wires: by node type and port, and by the value type carried."""

    def __init__(self, folder: Path, registry: NodeRegistry) -> None:
        self.by_port: Counter[tuple[str, str, str, str]] = Counter()
        self.by_value: Counter[tuple[str, str, str]] = Counter()
        for path in sorted(folder.rglob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for graph in _graphs(data if isinstance(data, dict) else {}):
                for source, source_port, target, target_port in _ends(graph):
                    self.by_port["out", source, source_port, target] += 1
                    self.by_port["in", target, target_port, source] += 1
                    value = _port_type(registry, source, source_port, "out")
                    if value:
                        self.by_value["out", value, target] += 1
                        self.by_value["in", value, source] += 1

    def rank(self, choices: list[tuple[str, str]], type_id: str, port: str, kind: str,
             value: str) -> list[tuple[str, str]]:
        """``choices`` ((type id, port) that fit a wire from ``type_id.port``, a ``kind``
        "out"/"in" port carrying ``value``), what the samples wire there most first."""
        order = {choice: i for i, choice in enumerate(choices)}
        return sorted(choices, key=lambda c: (-self.by_port[kind, type_id, port, c[0]],
                                              -self.by_value[kind, value, c[0]], order[c]))


def _port_type(registry: NodeRegistry, type_id: str, port: str, kind: str) -> str:
    if type_id not in registry:
        return ""
    node_type = registry.get(type_id)
    ports = node_type.outputs if kind == "out" else node_type.inputs
    found = next((p for p in ports if p.name == port), None)
    return type_name(found.type) if found is not None else ""


@lru_cache(maxsize=4)
def sample_wiring(registry: NodeRegistry, folder: Path = SAMPLES) -> SampleWiring:
    return SampleWiring(folder, registry)


def ranked_for_wire(registry: NodeRegistry, choices: list[tuple[str, str]], type_id: str,
                    port: str, kind: str, port_type: Any) -> list[tuple[str, str]]:
    """``choices`` ranked by the samples' wiring of ``type_id.port`` (see the module)."""
    return sample_wiring(registry).rank(choices, type_id, port, kind, type_name(port_type))
