"""The identity of a node type's code, part of every cache key.

A result computed by old code must never be served after the code changed (an upgrade, an
edited plug-in): the key holds a hash of the source of every module that defines the node
class or one of its bases (outside the engine), so changing any of them re-runs the node,
and the trace says "node code changed".
"""

from __future__ import annotations

import hashlib
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, version

from modrag_studio.engine.node import NodeType


@cache
def code_identity(node_type: type[NodeType]) -> str:
    """A short hash of the node class's module sources (computed once per class object).

    Without readable source (a frozen or compiled install) it falls back to the installed
    distribution's version, and last to the module name: the node ``version`` still counts.
    """
    digest = hashlib.sha256()
    for module_name in _defining_modules(node_type):
        digest.update(module_name.encode())
        digest.update(_module_identity(module_name).encode())
    return digest.hexdigest()[:16]


def _defining_modules(node_type: type[NodeType]) -> list[str]:
    names = []
    for cls in node_type.__mro__:
        if cls is NodeType or cls is object or cls.__module__ in names:
            continue
        names.append(cls.__module__)
    return names


def _module_identity(module_name: str) -> str:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if path:
        try:
            with open(path, "rb") as handle:
                return hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            pass
    top = module_name.split(".", 1)[0]
    for dist in packages_distributions().get(top, []):
        try:
            return f"{dist}=={version(dist)}"
        except PackageNotFoundError:
            continue
    return f"module:{module_name}"
