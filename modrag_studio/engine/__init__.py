"""The headless core: graph documents, typed ports, registry, validation, executor, cache.

Nothing under this package imports Qt.
"""

from modrag_studio.engine.cache import NodeCache
from modrag_studio.engine.document import GraphDocument, load, loads, save
from modrag_studio.engine.errors import (
    ConnectionRefused,
    GraphInvalid,
    GraphLoadError,
    ModragError,
    NodeConfigError,
    RunCancelled,
    UnknownNodeType,
)
from modrag_studio.engine.executor import BadRunInput, Executor, RunResult
from modrag_studio.engine.graph_io import (
    GraphInterface,
    GraphPort,
    graph_input_names,
    graph_interface,
)
from modrag_studio.engine.hooks import RunHook
from modrag_studio.engine.node import CancelToken, NodeContext, NodeType
from modrag_studio.engine.ports import InputPort, OutputPort, check_types, type_name
from modrag_studio.engine.registry import NodeRegistry, default_registry
from modrag_studio.engine.trace import NodeVisit, Trace
from modrag_studio.engine.validation import Problem, validate

__all__ = [
    "BadRunInput", "CancelToken", "ConnectionRefused", "Executor", "GraphDocument",
    "GraphInterface", "GraphInvalid", "GraphLoadError", "GraphPort", "InputPort", "ModragError",
    "NodeCache", "NodeConfigError", "NodeContext", "NodeRegistry", "NodeType", "NodeVisit",
    "OutputPort", "Problem", "RunCancelled", "RunHook", "RunResult", "Trace", "UnknownNodeType",
    "check_types", "default_registry", "graph_input_names", "graph_interface", "load", "loads",
    "save", "type_name", "validate",
]
