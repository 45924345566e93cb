"""Small builders for engine tests."""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.core.document import GraphDocument


def node(node_id: str, type_id: str, **params: Any) -> dict[str, Any]:
    return {"id": node_id, "type": type_id, "params": params}


def edge(source: str, target: str, loop: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"from": source, "to": target}
    if loop is not None:
        data["loop"] = {"max_iterations": loop}
    return data


def graph(nodes: list[dict], edges: list[dict], name: str = "test") -> GraphDocument:
    data = {"metadata": {"name": name}, "nodes": nodes, "edges": edges}
    return GraphDocument.model_validate(data)


def chain_graph() -> GraphDocument:
    """question -> upper -> concat(+ constant) -> output."""
    return graph(
        [
            node("q", "graph.input", name="question"),
            node("up", "text.upper"),
            node("suffix", "debug.constant", value="!"),
            node("join", "text.concat", separator=""),
            node("out", "graph.output", name="answer"),
        ],
        [
            edge("q.value", "up.text"),
            edge("up.text", "join.texts"),
            edge("suffix.value", "join.texts"),
            edge("join.text", "out.value"),
        ],
    )
