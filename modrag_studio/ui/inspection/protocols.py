"""What the inspection tools (the evidence debugger, citation navigation) need from the run
features and from each other: small protocols here, where they are used, so nothing in
``ui/inspection`` names the run controller or the shell (the parts above it)."""

from __future__ import annotations

from typing import Any, Protocol

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.lineage import Appearance
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.ui.inspection.inspector import Inspector


class RunRequestSeen(Protocol):
    """The last run's request: its inputs."""

    inputs: dict[str, Any]


class RunSource(Protocol):
    """The run controller as the inspection tools read it."""

    run_started: Any  # Qt signal: run_id, node ids
    run_finished: Any  # Qt signal: RunResult
    registry: NodeRegistry
    executor: Executor
    last_result: RunResult | None

    @property
    def last_request(self) -> RunRequestSeen | None: ...

    @property
    def busy(self) -> bool: ...


class GraphKeys(Protocol):
    def graph_key(self, doc: GraphDocument) -> str: ...


class InspectedRun(Protocol):
    """The run features as the inspection tools use them (``ui/shell/run_features.py``)."""

    @property
    def controller(self) -> RunSource: ...

    @property
    def inspector(self) -> Inspector: ...

    @property
    def actions(self) -> GraphKeys: ...

    def document(self) -> GraphDocument: ...


class LineageMarks(Protocol):
    """What citation navigation asks of the evidence debugger."""

    def show_lineage(self, chunk_id: str) -> list[Appearance]: ...

    def mark_node(self, node_id: str, text: str) -> None: ...
