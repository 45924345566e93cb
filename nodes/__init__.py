"""The built-in node library (import name ``modrag_nodes``).

Every module below this package is imported at registration and each ``NodeType`` subclass
it defines with a ``type_id`` is registered. Node modules must keep heavy imports (torch,
sentence-transformers, chromadb, ...) inside functions so registration stays fast.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modrag_studio.engine.core.registry import NodeRegistry

log = logging.getLogger(__name__)


def iter_node_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}.")
        if not info.ispkg and not info.name.rsplit(".", 1)[-1].startswith("_")
    )


def register_builtin_nodes(registry: NodeRegistry) -> None:
    from modrag_studio.engine.core.node import NodeType

    for module_name in iter_node_modules():
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # one broken module must not hide every other node type
            registry.load_errors.append(f"{module_name}: {type(exc).__name__}: {exc}")
            log.warning("node module %s failed to import: %s", module_name, exc)
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, NodeType)
                and value.__module__ == module_name
                and "type_id" in value.__dict__
            ):
                registry.register(value)
