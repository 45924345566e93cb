"""The composition root: the engine's registry filled with the built-in node library.

The engine knows node types only through a ``NodeRegistry`` it is given; this module is the one
place that puts the built-in nodes (``modrag_nodes``) and installed node packages (entry points)
into it. Applications (CLI, server, studio, benchmarks) take their registry from here.
"""

from __future__ import annotations

import threading

from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.safety import SafetyRecipe

#: What "make answers safe" inserts after an unchecked answer: the grounding check (no model
#: call), the refusal that names what no document states, and the selector between them.
SAFE_ANSWERS = SafetyRecipe(check="check.grounding", refuse="answer.refuse",
                            select="answer.select")

_default: NodeRegistry | None = None
_default_lock = threading.Lock()


def build_registry(*, plugins: bool = True) -> NodeRegistry:
    """A new registry with the built-in nodes (and, with ``plugins``, installed node packages)."""
    from modrag_nodes import register_builtin_nodes

    registry = NodeRegistry()
    register_builtin_nodes(registry)
    if plugins:
        registry.load_entry_points()
    return registry


def default_registry() -> NodeRegistry:
    """The process-wide registry: built-in nodes plus entry-point node packages."""
    global _default
    with _default_lock:
        if _default is None:
            _default = build_registry()
        return _default
