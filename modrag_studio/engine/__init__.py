"""The headless core: graph documents, typed ports, registry, validation, executor, cache.

Nothing under this package imports Qt or the node library: the registry it runs with is
built by the application (``modrag_studio.composition``).
"""

from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.core.document import GraphDocument, load, loads, save
from modrag_studio.engine.core.errors import (
    ConnectionRefused,
    GraphInvalid,
    GraphLoadError,
    ModragError,
    NodeConfigError,
    RunCancelled,
    UnknownNodeType,
)
from modrag_studio.engine.core.graph_io import (
    GraphInterface,
    GraphPort,
    graph_input_names,
    graph_interface,
)
from modrag_studio.engine.core.node import CancelToken, NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort, check_types, type_name
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.run.executor import BadRunInput, Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.trace import NodeVisit, Trace

__all__ = [
    "BadRunInput", "CancelToken", "ConnectionRefused", "Executor", "GraphDocument",
    "GraphInterface", "GraphInvalid", "GraphLoadError", "GraphPort", "InputPort", "ModragError",
    "NodeCache", "NodeConfigError", "NodeContext", "NodeRegistry", "NodeType", "NodeVisit",
    "OutputPort", "Problem", "RunCancelled", "RunHook", "RunResult", "Trace", "UnknownNodeType",
    "check_types", "graph_input_names", "graph_interface", "load", "loads",
    "save", "type_name", "validate",
]
