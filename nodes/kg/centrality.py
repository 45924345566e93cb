"""``kg.centrality_rerank``: blend a chunk's score with the centrality of its graph nodes.

Each chunk's centrality is the highest PageRank (or degree) among the nodes it mentions or
supports an edge of, divided by the graph's highest value. The incoming scores are min-max
normalised (distances negated first) and ``score = (1 - weight) * score + weight * centrality``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.contracts import KnowledgeGraph
from modrag_nodes.kg.linking import store_of
from modrag_nodes.kg.store import KGStore
from modrag_nodes.retrieval.ranking import retriever_id, with_ranks
from modrag_studio.engine.core.node import InputPort, NodeContext, NodeType, OutputPort, ScoredChunk
from modrag_studio.engine.evidence.lineage import EvidenceRole, UncutRanking


def centrality(store: KGStore, method: str = "pagerank") -> dict[str, float]:
    """Node -> centrality scaled to [0, 1] (cached per loaded graph)."""
    cache: dict[str, dict[str, float]] = store.__dict__.setdefault("_centrality", {})
    if method not in cache:
        graph = store.graph
        if graph.number_of_nodes() == 0:
            values: dict[str, float] = {}
        elif method == "pagerank":
            values = pagerank(graph)
        else:
            values = {n: float(d) for n, d in graph.degree()}
        top = max(values.values(), default=0.0) or 1.0
        cache[method] = {n: v / top for n, v in values.items()}
    return cache[method]


def pagerank(graph: Any, alpha: float = 0.85, iterations: int = 100,
             tolerance: float = 1e-10) -> dict[str, float]:
    """Weighted PageRank of the graph taken as undirected (power iteration, pure Python)."""
    nodes = list(graph.nodes)
    links: dict[str, dict[str, float]] = {n: {} for n in nodes}
    for source, target, data in graph.edges(data=True):
        if source == target:
            continue
        weight = float(data.get("weight", 1.0)) or 1.0
        links[source][target] = links[source].get(target, 0.0) + weight
        links[target][source] = links[target].get(source, 0.0) + weight
    count = len(nodes)
    rank = dict.fromkeys(nodes, 1.0 / count)
    totals = {n: sum(links[n].values()) for n in nodes}
    for _ in range(iterations):
        dangling = sum(rank[n] for n in nodes if not totals[n])
        new = dict.fromkeys(nodes, (1 - alpha) / count + alpha * dangling / count)
        for node in nodes:
            if totals[node]:
                share = alpha * rank[node] / totals[node]
                for other, weight in links[node].items():
                    new[other] += share * weight
        change = sum(abs(new[n] - rank[n]) for n in nodes)
        rank = new
        if change < tolerance * count:
            break
    return rank


def rerank(items: list[ScoredChunk], store: KGStore, *, weight: float = 0.3,
           method: str = "pagerank") -> list[ScoredChunk]:
    if not items:
        return []
    values = centrality(store, method)
    index = store.chunk_index()
    oriented = [i.score if i.higher_is_better else -i.score for i in items]
    low, high = min(oriented), max(oriented)
    span = high - low
    result = []
    for item, score in zip(items, oriented, strict=True):
        norm = (score - low) / span if span else 1.0
        central = max((values.get(n, 0.0) for n in index.get(item.chunk_id, ())), default=0.0)
        blended = (1 - weight) * norm + weight * central
        result.append(item.model_copy(update={"score": round(blended, 6),
                                              "score_kind": "convex",
                                              "higher_is_better": True}))
    result.sort(key=lambda i: -i.score)
    return result


class CentralityParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Literal["pagerank", "degree"] = Field("pagerank", description="Centrality measure")
    weight: float = Field(0.3, ge=0, le=1, description="Share of centrality in the new score")
    top_k: int | None = Field(None, ge=1, description="Keep this many (empty: all)")
    label: str = Field("", description="Retriever id written into the results (empty: node id)")


class CentralityRerank(NodeType):
    type_id = "kg.centrality_rerank"
    span_kind = "reranker"
    key_params = ("method", "top_k")
    evidence_role = EvidenceRole("reorders", top_param="top_k", inputs=("chunks",),
                                 outputs=("chunks",), uncut_port="uncut")
    title = "Centrality rerank"
    category = "Knowledge graph"
    description = ("Reorders chunks by blending their score with the PageRank or degree of "
                   "the graph nodes they are attached to.")
    Params = CentralityParams
    inputs = (
        InputPort("chunks", list[ScoredChunk], description="Ranked chunks"),
        InputPort("graph", KnowledgeGraph, description="The knowledge graph"),
    )
    outputs = (OutputPort("chunks", list[ScoredChunk], "Reranked chunks"),
               OutputPort("uncut", UncutRanking, "Every chunk in the new order, before "
                          "the top_k cut"))

    def run(self, ctx: NodeContext, params: CentralityParams, chunks: list[ScoredChunk],
            graph: KnowledgeGraph) -> dict[str, Any]:
        store = store_of(graph, ctx.resources)
        ranked = rerank(chunks, store, weight=params.weight, method=params.method)
        index = store.chunk_index()
        attached = sum(1 for c in chunks if c.chunk_id in index)
        if chunks and not attached:
            ctx.warn("no chunk is attached to a graph node: the order only follows the scores")
        with_ranks(ranked, retriever_id(ctx, params.label))
        kept = ranked if params.top_k is None else ranked[: params.top_k]
        ctx.note(method=params.method, weight=params.weight, attached=attached,
                 total=len(chunks))
        return {"chunks": kept, "uncut": UncutRanking(items=ranked, cut=len(kept))}
