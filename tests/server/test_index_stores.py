"""Serving brings every store of the graph up to date first: the node types that declare a
``store_role`` (a LanceDB store as well as a Chroma one, and knowledge graphs), nothing else."""

from __future__ import annotations

from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import Trace
from modrag_studio.server.app import index_stores


class Targets:
    """An executor that records which node each run targets (and runs nothing)."""

    def __init__(self) -> None:
        self.targets: list[str] = []

    def run(self, doc: GraphDocument, inputs: dict[str, Any], *, target: str) -> RunResult:
        self.targets.append(target)
        return RunResult(trace=Trace(run_id="r", graph_name="g"))


def test_start_up_indexes_each_declared_store_and_nothing_else():
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "load", "type": "load.files", "params": {}},
        {"id": "chroma", "type": "store.chroma", "params": {}},
        {"id": "lance", "type": "store.lancedb", "params": {}},
        {"id": "graph", "type": "kg.build", "params": {}},
        {"id": "bm25", "type": "bm25.index", "params": {}},
    ]})
    executor = Targets()
    index_stores(doc, executor, default_registry(), {})  # type: ignore[arg-type]
    assert executor.targets == ["chroma", "lance", "graph"]
