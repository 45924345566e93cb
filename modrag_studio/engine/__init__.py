"""The headless engine, for running graphs from a script: documents, the registry,
validation, the executor and its cache, hooks and traces.

Nothing under this package imports Qt or the node library: the registry it runs with is
built by the application (``modrag_studio.composition``). A node type imports what it needs
from one module, ``modrag_studio.engine.core.node`` (the node-author API), not from here.
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
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.run.executor import BadRunInput, Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.trace import NodeVisit, Trace

__all__ = [
    "BadRunInput", "CancelToken", "ConnectionRefused", "Executor", "GraphDocument",
    "GraphInterface", "GraphInvalid", "GraphLoadError", "GraphPort", "ModragError",
    "NodeCache", "NodeConfigError", "NodeRegistry", "NodeVisit", "Problem", "RunCancelled",
    "RunHook", "RunResult", "Trace", "UnknownNodeType", "graph_input_names",
    "graph_interface", "load", "loads", "save", "validate",
]
