"""What a run hands back: the graph's outputs by name, the trace, and every node visit's
inputs and outputs (``RunResult``); the executor fills it in as the run goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.isolation import isolate
from modrag_studio.engine.run.trace import Trace

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """Graph outputs by name, the trace, and every node visit's full inputs and outputs.
    ``outputs`` are private copies made when first read (``output_of`` never pays for them);
    ``node_inputs`` and ``node_outputs`` share objects with the cache: treat them as read-only.
    """

    trace: Trace
    node_inputs: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    node_outputs: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    shared_outputs: dict[str, Any] = field(default_factory=dict, repr=False)
    registry: NodeRegistry | None = field(default=None, repr=False)  # the types that ran
    planned: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)  # plan_only
    _outputs: dict[str, Any] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "registry": None}  # node types are looked up where it lands

    @property
    def outputs(self) -> dict[str, Any]:
        if self._outputs is None:
            self._outputs = isolate(self.shared_outputs)
        return self._outputs

    @outputs.setter
    def outputs(self, value: dict[str, Any]) -> None:
        self._outputs = self.shared_outputs = value

    @property
    def status(self) -> str:
        return self.trace.status

    @property
    def ok(self) -> bool:
        return self.trace.status == "ok"

    def output_of(self, node_id: str, port: str, iteration: int | None = None) -> Any:
        """A node's output value (last visit unless ``iteration`` is given)."""
        if iteration is None:
            visits = [k for k in self.node_outputs if k[0] == node_id]
            if not visits:
                raise KeyError(f"node '{node_id}' produced nothing in this run")
            iteration = max(i for _, i in visits)
        return self.node_outputs[(node_id, iteration)][port]
