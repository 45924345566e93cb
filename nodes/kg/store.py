"""The knowledge-graph store: a networkx MultiDiGraph, its alias table, and its JSON file.

File format (``modrag-kg/1``, UTF-8 JSON, written atomically)::

    {
      "format": "modrag-kg/1",
      "extractor": "rules:3f2a...",          # who built it; another extractor forces a rebuild
      "graph": {                            # networkx node-link data (edges under "edges")
        "directed": true, "multigraph": true, "graph": {},
        "nodes": [{"id": "Order Service", "type": "Service",
                   "aliases": ["订单服务"], "chunk_ids": ["c1", "c7"], ...}],
        "edges": [{"source": "Order Service", "target": "Inventory Service",
                   "key": "depends_on", "relation": "depends_on",
                   "weights": {"c1": 1.0}, "weight": 1.0, "chunk_ids": ["c1"]}]
      },
      "aliases": {"订单服务": "Order Service", ...},   # alias surface form -> node id
      "ambiguous_aliases": ["..."],                 # normalised keys claimed by two nodes
      "relation_labels": {"depends_on": "depends on"},
      "chunk_hashes": {"c1": "<sha1 of the chunk text>"},
      "chunks": {"c1": {"chunk_id": "c1", "doc_id": "...", "text": "...", ...}}
    }

Node ids are display names; every entity and edge lists the chunk ids it came from (an edge's
``weights`` hold one weight per chunk), so removing a chunk removes exactly its contributions.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from modrag_nodes.kg.aliases import AliasTable, display, initials
from modrag_nodes.kg.contracts import Entity, GraphExtraction, Relation
from modrag_studio.engine.core.node import Resources, given_or_process

FORMAT = "modrag-kg/1"
GENERIC_TYPES = {"", "Entity", "Identifier", "Unknown"}
DERIVED = ("_link_matcher", "_name_vectors", "_centrality")  # caches kept on a store


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class KGStore:
    """A MultiDiGraph keyed by display names, with alias merging and per-chunk provenance."""

    def __init__(self) -> None:
        import networkx as nx

        self.graph = nx.MultiDiGraph()
        self.aliases = AliasTable()
        self.relation_labels: dict[str, str] = {}
        self.chunk_hashes: dict[str, str] = {}
        self.chunks: dict[str, dict[str, Any]] = {}
        self.extractor = ""

    # -- building ---------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The node id a name or alias refers to, or None."""
        if name in self.graph:
            return name
        return self.aliases.lookup(name)

    def _changed(self) -> None:
        """Forget what readers derived from the graph (matchers, vectors, centrality)."""
        for key in [k for k in self.__dict__ if k in DERIVED]:
            del self.__dict__[key]

    def add_entity(self, entity: Entity) -> str:
        self._changed()
        node = self.resolve(entity.name)
        if node is None:
            node = next((n for a in entity.aliases if (n := self.resolve(a))), None)
        if node is None:
            node = display(entity.name)
            self.graph.add_node(node, type=entity.type, aliases=[], chunk_ids=[])
        data = self.graph.nodes[node]
        if data.get("type", "") in GENERIC_TYPES and entity.type not in GENERIC_TYPES:
            data["type"] = entity.type
        names = [entity.name, *entity.aliases]
        abbreviation = initials(node)
        if abbreviation:
            names.append(abbreviation)
        for alias in names:
            self.aliases.add(alias, node)
            if display(alias) != node and display(alias) not in data["aliases"]:
                data["aliases"].append(display(alias))
        self.aliases.add(node, node)
        _union(data["chunk_ids"], entity.chunk_ids)
        for key, value in entity.attributes.items():
            data[key] = value
        return node

    def add_relation(self, relation: Relation) -> None:
        self._changed()
        source = self.resolve(relation.source) or self.add_entity(Entity(name=relation.source))
        target = self.resolve(relation.target) or self.add_entity(Entity(name=relation.target))
        key = relation.relation
        if not self.graph.has_edge(source, target, key):
            self.graph.add_edge(source, target, key=key, relation=key, weights={},
                                chunk_ids=[], weight=0.0)
        data = self.graph.edges[source, target, key]
        chunk_ids = relation.chunk_ids or [""]
        for chunk_id in chunk_ids:
            data["weights"][chunk_id] = data["weights"].get(chunk_id, 0.0) + (
                relation.weight / len(chunk_ids))
        _refresh_edge(data)

    def add_extraction(self, extraction: GraphExtraction,
                       only_chunks: set[str] | None = None) -> None:
        """Merge an extraction; with ``only_chunks``, only what those chunks contributed."""
        self.relation_labels.update(extraction.relation_labels)
        for entity in extraction.entities:
            kept = _keep(entity.chunk_ids, only_chunks)
            if kept is not None:
                self.add_entity(entity.model_copy(update={"chunk_ids": kept}))
        for alias, canonical in extraction.aliases.items():
            node = self.resolve(canonical)
            if node is not None and self.resolve(alias) is None:
                self.aliases.add(alias, node)
        for relation in extraction.relations:
            kept = _keep(relation.chunk_ids, only_chunks)
            if kept is not None and (kept or only_chunks is None):
                self.add_relation(relation.model_copy(update={"chunk_ids": kept}))
        for chunk_id, digest in extraction.chunk_hashes.items():
            if only_chunks is None or chunk_id in only_chunks:
                self.chunk_hashes[chunk_id] = digest
                if chunk_id in extraction.chunks:
                    self.chunks[chunk_id] = extraction.chunks[chunk_id]

    def remove_chunks(self, chunk_ids: set[str]) -> None:
        """Remove what the given chunks contributed; drop edges and nodes left unsupported."""
        if not chunk_ids:
            return
        self._changed()
        for source, target, key, data in list(self.graph.edges(keys=True, data=True)):
            if not chunk_ids & set(data["weights"]):
                continue
            for chunk_id in chunk_ids:
                data["weights"].pop(chunk_id, None)
            if data["weights"]:
                _refresh_edge(data)
            else:
                self.graph.remove_edge(source, target, key)
        for node, data in list(self.graph.nodes(data=True)):
            data["chunk_ids"] = [c for c in data["chunk_ids"] if c not in chunk_ids]
            if not data["chunk_ids"] and self.graph.degree(node) == 0:
                self.graph.remove_node(node)
                self.aliases.remove_node(node)
        for chunk_id in chunk_ids:
            self.chunk_hashes.pop(chunk_id, None)
            self.chunks.pop(chunk_id, None)

    def update(self, extraction: GraphExtraction, *, remove_missing: bool = True
               ) -> dict[str, int]:
        """Incremental update: re-add changed and new chunks, drop removed ones."""
        incoming = extraction.chunk_hashes
        changed = {c for c, h in incoming.items() if self.chunk_hashes.get(c) != h}
        removed = set(self.chunk_hashes) - set(incoming) if remove_missing else set()
        replaced = changed & set(self.chunk_hashes)
        self.remove_chunks(replaced | removed)
        self.add_extraction(extraction, only_chunks=changed)
        self.extractor = extraction.extractor
        return {"new_chunks": len(changed - replaced), "changed_chunks": len(replaced),
                "removed_chunks": len(removed), "unchanged_chunks": len(incoming) - len(changed)}

    # -- reading ----------------------------------------------------------------------------
    def label(self, relation: str) -> str:
        return self.relation_labels.get(relation) or relation.replace("_", " ")

    def chunk_index(self) -> dict[str, set[str]]:
        """Chunk id -> the nodes it mentions or supports an edge of."""
        index: dict[str, set[str]] = {}
        for node, data in self.graph.nodes(data=True):
            for chunk_id in data.get("chunk_ids", []):
                index.setdefault(chunk_id, set()).add(node)
        for source, target, data in self.graph.edges(data=True):
            for chunk_id in data.get("chunk_ids", []):
                index.setdefault(chunk_id, set()).update((source, target))
        return index

    def stats(self, top: int = 10) -> dict[str, Any]:
        """Node and edge counts, degree statistics, the highest-degree nodes, type counts."""
        graph = self.graph
        degrees = sorted(((d, n) for n, d in graph.degree()), key=lambda x: (-x[0], x[1]))
        values = [d for d, _ in degrees]
        return {
            "nodes": graph.number_of_nodes(),
            "edges": graph.number_of_edges(),
            "chunks": len(self.chunk_hashes),
            "mean_degree": round(sum(values) / len(values), 3) if values else 0.0,
            "max_degree": values[0] if values else 0,
            "isolated_nodes": sum(1 for v in values if v == 0),
            "top_degree": [{"node": n, "degree": d} for d, n in degrees[:top]],
            "node_types": dict(Counter(t for _, t in graph.nodes(data="type")).most_common()),
            "relations": dict(Counter(k for _, _, k in graph.edges(keys=True)).most_common()),
        }

    # -- persistence ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        import networkx as nx

        graph = nx.node_link_data(self.graph, edges="edges")
        graph["nodes"].sort(key=lambda n: str(n["id"]))
        graph["edges"].sort(key=lambda e: (str(e["source"]), str(e["target"]), str(e["key"])))
        return {
            "format": FORMAT,
            "extractor": self.extractor,
            "graph": graph,
            "aliases": self.aliases.to_dict(),
            "ambiguous_aliases": sorted(self.aliases.ambiguous),
            "relation_labels": dict(sorted(self.relation_labels.items())),
            "chunk_hashes": dict(sorted(self.chunk_hashes.items())),
            "chunks": dict(sorted(self.chunks.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "graph file") -> KGStore:
        import networkx as nx

        if data.get("format") != FORMAT:
            raise ValueError(f"{where}: not a knowledge graph file (format "
                             f"{data.get('format')!r}, expected {FORMAT!r})")
        store = cls()
        store.graph = nx.node_link_graph(data["graph"], directed=True, multigraph=True,
                                         edges="edges")
        store.aliases = AliasTable.from_dict(data.get("aliases", {}),
                                             data.get("ambiguous_aliases", []))
        store.relation_labels = dict(data.get("relation_labels", {}))
        store.chunk_hashes = dict(data.get("chunk_hashes", {}))
        store.chunks = dict(data.get("chunks", {}))
        store.extractor = data.get("extractor", "")
        return store

    def save(self, path: Path) -> str:
        """Write the file atomically; returns the content hash."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1, sort_keys=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kg-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        return text_hash(text)

    @classmethod
    def load(cls, path: Path) -> KGStore:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read knowledge graph file {path}: {exc}") from exc
        return cls.from_dict(data, where=str(path))


def load_store(path: str | Path, resources: Resources | None = None) -> KGStore:
    """Load a graph file, kept in ``resources`` (the run's; the process's when None) by path,
    modification time and size (a changed file is read again). Treat as read-only."""
    file = Path(path)
    try:
        stat = file.stat()
    except OSError as exc:
        raise ValueError(f"knowledge graph file {file} not found: {exc}") from exc
    stamp = (stat.st_mtime_ns, stat.st_size)
    resources = given_or_process(resources)
    held = resources.peek("knowledge graph", str(file))
    if held is not None and held[0] != stamp:
        resources.drop("knowledge graph", str(file))
    _, store = resources.model("knowledge graph", str(file), lambda: (stamp, KGStore.load(file)),
                               name=file.name)
    return store


def _union(target: list[str], values: list[str]) -> None:
    for value in values:
        if value not in target:
            target.append(value)


def _refresh_edge(data: dict[str, Any]) -> None:
    data["chunk_ids"] = [c for c in data["weights"] if c]
    data["weight"] = round(sum(data["weights"].values()), 6)


def _keep(chunk_ids: list[str], only: set[str] | None) -> list[str] | None:
    """The chunk ids to keep, or None when the item came only from other chunks."""
    if only is None or not chunk_ids:
        return list(chunk_ids)
    kept = [c for c in chunk_ids if c in only]
    return kept or None
