"""Data contracts of the knowledge-graph family: extractions, the graph handle, search results."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.node import Contract, ScoredChunk


class Entity(BaseModel):
    """A named thing found in text, with the chunks it was found in."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    type: str = "Entity"
    aliases: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)


class Relation(BaseModel):
    """A directed, typed link ``source -[relation]-> target`` with its supporting chunks."""

    model_config = ConfigDict(extra="forbid")
    source: str = Field(min_length=1)
    relation: str = Field(min_length=1)
    target: str = Field(min_length=1)
    chunk_ids: list[str] = Field(default_factory=list)
    weight: float = 1.0


class GraphExtraction(Contract):
    """What an extractor found in a set of chunks (input of ``kg.build``).

    ``chunk_hashes`` maps every chunk that was read (even those with no finding) to a hash of
    its text, so the store can tell changed and removed chunks apart. ``extractor`` names the
    extractor and its settings: a different value makes ``kg.build`` rebuild from scratch.
    """

    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    chunk_hashes: dict[str, str] = Field(default_factory=dict)
    chunks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)
    relation_labels: dict[str, str] = Field(default_factory=dict)
    extractor: str = ""

    def preview(self) -> str:
        return (f"{len(self.entities)} entities, {len(self.relations)} relations "
                f"from {len(self.chunk_hashes)} chunks")


class KnowledgeGraph(Contract):
    """A handle on a persisted graph: the JSON file and a summary (load with ``load_store``)."""

    path: str
    content_hash: str = ""
    summary: dict[str, Any] = Field(default_factory=dict)

    def preview(self) -> str:
        nodes = self.summary.get("nodes", "?")
        edges = self.summary.get("edges", "?")
        return f"graph {nodes} nodes, {edges} edges ({self.path})"


class EntityLink(BaseModel):
    """A question mention tied to a graph node, how it was found and how sure we are."""

    model_config = ConfigDict(extra="forbid")
    mention: str
    node: str
    method: str  # "exact", "alias", "fuzzy" or "embedding"
    confidence: float


class EntityLinks(Contract):
    """Output of ``kg.link``: the question, its links and the mentions nothing matched."""

    question: str
    links: list[EntityLink] = Field(default_factory=list)
    unlinked: list[str] = Field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        seen: list[str] = []
        for link in self.links:
            if link.node not in seen:
                seen.append(link.node)
        return seen

    def preview(self) -> str:
        linked = ", ".join(f"{x.node} ({x.method} {x.confidence:.2f})" for x in self.links)
        return f"linked: {linked or 'none'}" + (
            f"; unlinked: {', '.join(self.unlinked)}" if self.unlinked else "")


class PathStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    relation: str
    target: str
    forward: bool = True  # False when the edge was walked against its direction


class GraphPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: str
    steps: list[PathStep] = Field(default_factory=list)
    score: float = 0.0

    @property
    def end(self) -> str:
        if not self.steps:
            return self.start
        last = self.steps[-1]
        return last.target if last.forward else last.source


class GraphSearchResult(Contract):
    """Output of ``kg.search``: seeds, reached nodes, edges, ranked paths and their chunks."""

    question: str = ""
    seeds: list[str] = Field(default_factory=list)
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    edges: list[PathStep] = Field(default_factory=list)
    paths: list[GraphPath] = Field(default_factory=list)
    chunks: list[ScoredChunk] = Field(default_factory=list)
    relation_labels: dict[str, str] = Field(default_factory=dict)

    def triples(self) -> set[tuple[str, str, str]]:
        """Every ``(source, relation, target)`` edge on a returned path."""
        return {(s.source, s.relation, s.target) for p in self.paths for s in p.steps}

    def preview(self) -> str:
        return (f"{len(self.seeds)} seeds, {len(self.nodes)} nodes, {len(self.paths)} paths, "
                f"{len(self.chunks)} chunks")
