"""``kg.search``: multi-hop traversal from linked nodes, returning paths and their chunks.

From each seed the search walks up to ``max_hops`` edges (out, in or both directions,
optionally only some relation types). A path's score is the seed's link confidence times, per
hop, ``hop_decay`` and a hub factor ``(1 / log2(2 + degree))^hub_penalty`` of the node
reached, so paths through very connected nodes rank lower; nodes with more than
``hub_degree_cap`` edges are reached but not expanded (unless they are seeds). Each expanded
node keeps only its ``per_hop_limit`` best neighbours.

Chunks attached to the edges of the returned paths (the sentences that state the relation)
score the path's score; chunks that only mention a path's end node score a third of it. They
come out as ``ScoredChunk`` (``score_kind="graph"``) for ``fuse.rrf``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.contracts import (
    EntityLinks,
    GraphPath,
    GraphSearchResult,
    KnowledgeGraph,
    PathStep,
)
from modrag_nodes.kg.linking import link_entities, store_of
from modrag_nodes.kg.store import KGStore
from modrag_nodes.retrieval.ranking import retriever_id, with_ranks
from modrag_studio.engine.core.node import (
    Chunk,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

Direction = Literal["both", "out", "in", "auto"]
_IN_WORDS = re.compile(
    r"\b(?:what|which|who)\b[^?]*\b(?:depends?|relies|rely|imports?|calls?|uses?)\s+(?:on\s+)?"
    r"|\b(?:affected|impacted)\b|\bdownstream\b|哪些.*(?:依赖|调用)|下游|受.*影响", re.IGNORECASE)
_OUT_WORDS = re.compile(
    r"\bwhat\s+does\b.*\b(?:depend|rely|import|call|use)\b|\bupstream\b|依赖(?:哪些|什么)|上游",
    re.IGNORECASE)


def infer_direction(question: str) -> str:
    """``in`` for "what depends on X", ``out`` for "what does X depend on", else ``both``."""
    if _OUT_WORDS.search(question):
        return "out"
    if _IN_WORDS.search(question):
        return "in"
    return "both"


class SearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_hops: int = Field(2, ge=1, le=6, description="Edges walked from a linked node")
    per_hop_limit: int = Field(10, ge=1, le=1000,
                               description="Neighbours kept per expanded node and hop")
    direction: Direction = Field("both", description="Follow edges out, in, both, or 'auto' "
                                                     "(guessed from the question's wording)")
    relation_types: list[str] = Field(default_factory=list,
                                      description="Only these relations (empty: all)")
    hub_degree_cap: int = Field(25, ge=1, description="Nodes with more edges are not expanded")
    hub_penalty: float = Field(0.5, ge=0, le=4, description="Exponent of the hub down-weighting "
                                                            "(0: none)")
    hop_decay: float = Field(0.8, gt=0, le=1, description="Score factor per hop")
    link_stop_words: list[str] = Field(
        default_factory=list, description="Without a 'links' input: more words that never "
                                          "start or end a mention (see kg.link)")
    max_paths: int = Field(30, ge=1, le=1000, description="Paths returned, best first")
    top_k: int = Field(10, ge=1, le=1000, description="Chunks returned")
    min_link_confidence: float = Field(0.5, ge=0, le=1, description="Weaker links are no seeds")
    label: str = Field("", description="Retriever id written into the results (empty: node id)")


def _hub_factor(degree: int, penalty: float) -> float:
    return (1.0 / math.log2(2 + degree)) ** penalty if penalty else 1.0


def _neighbours(store: KGStore, node: str, direction: str, relations: set[str]
                ) -> list[tuple[str, PathStep]]:
    graph = store.graph
    found: list[tuple[str, PathStep]] = []
    if direction in ("out", "both"):
        for _, target, key in graph.out_edges(node, keys=True):
            if not relations or key in relations:
                found.append((target, PathStep(source=node, relation=key, target=target)))
    if direction in ("in", "both"):
        for source, _, key in graph.in_edges(node, keys=True):
            if not relations or key in relations:
                found.append((source, PathStep(source=source, relation=key, target=node,
                                               forward=False)))
    return found


def graph_search(store: KGStore, seeds: dict[str, float], *, max_hops: int = 2,
                 per_hop_limit: int = 10, direction: str = "both",
                 relation_types: list[str] | None = None, hub_degree_cap: int = 25,
                 hub_penalty: float = 0.5, hop_decay: float = 0.8, max_paths: int = 30
                 ) -> tuple[list[GraphPath], dict[str, dict[str, Any]], list[str]]:
    """Paths (best first), reached nodes (score, hop) and the hubs that were not expanded."""
    graph = store.graph
    relations = set(relation_types or [])
    reached: dict[str, dict[str, Any]] = {
        s: {"score": c, "hop": 0, "seed": True} for s, c in seeds.items() if s in graph}
    best_path: dict[str, GraphPath] = {s: GraphPath(start=s, score=reached[s]["score"])
                                       for s in reached}
    paths: list[GraphPath] = []
    capped: list[str] = []
    frontier = list(reached)
    for hop in range(1, max_hops + 1):
        found: dict[str, GraphPath] = {}
        for node in sorted(frontier, key=lambda n: (-best_path[n].score, n)):
            if node not in seeds and graph.degree(node) > hub_degree_cap:
                capped.append(node)
                continue
            parent = best_path[node]
            on_path = {parent.start, *(s.source for s in parent.steps),
                       *(s.target for s in parent.steps)}
            options = []
            for neighbour, step in _neighbours(store, node, direction, relations):
                if neighbour in on_path:
                    continue
                score = parent.score * hop_decay * _hub_factor(graph.degree(neighbour),
                                                               hub_penalty)
                options.append((score, neighbour, step))
            options.sort(key=lambda o: (-o[0], o[1], o[2].relation))
            for score, neighbour, step in options[:per_hop_limit]:
                path = GraphPath(start=parent.start, steps=[*parent.steps, step],
                                 score=round(score, 6))
                paths.append(path)
                if neighbour not in reached and (
                        neighbour not in found or found[neighbour].score < path.score):
                    found[neighbour] = path
        for neighbour, path in found.items():
            reached[neighbour] = {"score": path.score, "hop": hop, "seed": False}
            best_path[neighbour] = path
        frontier = list(found)
    paths.sort(key=lambda p: (-p.score, len(p.steps), p.start, p.end))
    return paths[:max_paths], reached, capped


def path_chunks(store: KGStore, paths: list[GraphPath], seeds: dict[str, float],
                top_k: int, chunks: dict[str, Chunk] | None = None
                ) -> tuple[list[ScoredChunk], list[str]]:
    """Chunks supporting the paths' edges and mentioning their nodes, best first."""
    scores: dict[str, float] = {}
    for path in paths:
        for step in path.steps:
            data = store.graph.edges[step.source, step.target, step.relation]
            for chunk_id in data.get("chunk_ids", []):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + path.score
        for chunk_id in store.graph.nodes[path.end].get("chunk_ids", []):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + path.score / 3
    for seed, confidence in seeds.items():
        if seed in store.graph:
            for chunk_id in store.graph.nodes[seed].get("chunk_ids", []):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + confidence / 10
    missing: list[str] = []
    result: list[ScoredChunk] = []
    for chunk_id, score in sorted(scores.items(), key=lambda x: (-x[1], x[0])):
        if len(result) >= top_k:
            break
        chunk = (chunks or {}).get(chunk_id)
        if chunk is None and chunk_id in store.chunks:
            chunk = Chunk(**store.chunks[chunk_id])
        if chunk is None:
            missing.append(chunk_id)
            continue
        result.append(ScoredChunk(chunk=chunk, score=round(score, 6), score_kind="graph"))
    return result, missing


def search(store: KGStore, question: str, links: EntityLinks | None, params: SearchParams,
           chunks: dict[str, Chunk] | None = None) -> tuple[GraphSearchResult, list[str]]:
    if links is None:
        links = link_entities(question, store, stop_words=params.link_stop_words)
    seeds: dict[str, float] = {}
    for link in links.links:
        if link.confidence >= params.min_link_confidence and link.node in store.graph:
            seeds[link.node] = max(seeds.get(link.node, 0.0), link.confidence)
    direction = infer_direction(question) if params.direction == "auto" else params.direction
    paths, reached, capped = graph_search(
        store, seeds, max_hops=params.max_hops, per_hop_limit=params.per_hop_limit,
        direction=direction, relation_types=params.relation_types,
        hub_degree_cap=params.hub_degree_cap, hub_penalty=params.hub_penalty,
        hop_decay=params.hop_decay, max_paths=params.max_paths)
    scored, missing = path_chunks(store, paths, seeds, params.top_k, chunks)
    on_paths = {n for p in paths for n in (p.start, *(s.source for s in p.steps),
                                           *(s.target for s in p.steps))}
    nodes = [{"id": n, "type": store.graph.nodes[n].get("type", ""),
              "aliases": list(store.graph.nodes[n].get("aliases", [])), **reached[n]}
             for n in sorted(on_paths | set(seeds), key=lambda n: (reached[n]["hop"], n))
             if n in reached]
    edges: dict[tuple[str, str, str], PathStep] = {}
    for path in paths:
        for step in path.steps:
            edges.setdefault((step.source, step.relation, step.target),
                             PathStep(source=step.source, relation=step.relation,
                                      target=step.target))
    labels = {rel: store.label(rel) for _, rel, _ in edges}
    result = GraphSearchResult(question=question, seeds=list(seeds), nodes=nodes,
                               edges=list(edges.values()), paths=paths, chunks=scored,
                               relation_labels=labels)
    return result, [*capped, *(f"chunk text missing: {c}" for c in missing)]


class GraphSearch(NodeType):
    type_id = "kg.search"
    span_kind = "retriever"
    key_params = ("max_hops", "top_k")
    evidence_role = EvidenceRole("retrieves", top_param="top_k", outputs=("chunks",),
                                 noun="graph search")
    title = "Graph search"
    category = "Knowledge graph"
    description = ("Walks the graph from the question's linked nodes (hop limit, neighbour "
                   "limit, relation and direction filters, hub down-weighting) and returns "
                   "the paths and the chunks on them, ready for fusion.")
    Params = SearchParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("graph", KnowledgeGraph, description="The knowledge graph"),
        InputPort("links", EntityLinks, required=False,
                  description="From kg.link (else exact/alias/fuzzy linking runs here)"),
        InputPort("chunks", list[Chunk], required=False,
                  description="Chunk texts, when the graph file stores none"),
    )
    outputs = (
        OutputPort("chunks", list[ScoredChunk], "Chunks on the paths (score_kind 'graph')"),
        OutputPort("result", GraphSearchResult, "Seeds, subgraph, paths and chunks"),
    )

    def run(self, ctx: NodeContext, params: SearchParams, query: Query, graph: KnowledgeGraph,
            links: EntityLinks | None = None, chunks: list[Chunk] | None = None
            ) -> dict[str, Any]:
        store = store_of(graph, ctx.resources)
        by_id = {c.chunk_id: c for c in chunks} if chunks else None
        result, problems = search(store, query.text, links, params, by_id)
        with_ranks(result.chunks, retriever_id(ctx, params.label))
        capped = [p for p in problems if not p.startswith("chunk text missing")]
        missing = [p for p in problems if p.startswith("chunk text missing")]
        if not result.seeds:
            ctx.warn("no graph node linked to the question: graph search found nothing")
        if missing:
            ctx.warn(f"{len(missing)} chunks have no stored text (connect 'chunks')")
        ctx.note(seeds=result.seeds, nodes=len(result.nodes), paths=len(result.paths),
                 chunks=len(result.chunks), hubs_not_expanded=capped,
                 direction=params.direction if params.direction != "auto"
                 else infer_direction(query.text))
        return {"chunks": result.chunks, "result": result}
