"""The identity of a node type's code, part of every cache key.

A result computed by old code must never be served after the code changed (an upgrade, an
edited plug-in): the key holds a hash of the source of every module that defines the node
class or one of its bases (outside the engine), and of the helper modules those import from
their own library (``ingest/splitters.py`` -> ``ingest/spans.py``, ``grounding/check.py`` ->
``generation/fact_match.py``, followed transitively, lazy imports too), so changing any of
them re-runs the node, and the trace says "node code changed". A module that reads data files
beside it names them in ``__data_files__`` (the text package's word lists): they count as its
source.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, version

from modrag_studio.engine.core.node import NodeType


@cache
def code_identity(node_type: type[NodeType]) -> str:
    """A short hash of the node class's module sources (computed once per class object).

    Without readable source (a frozen or compiled install) it falls back to the installed
    distribution's version, and last to the module name: the node ``version`` still counts.
    """
    digest = hashlib.sha256()
    for module_name in defining_modules(node_type):
        digest.update(module_name.encode())
        digest.update(_module_identity(module_name).encode())
    return digest.hexdigest()[:16]


def defining_modules(node_type: type[NodeType]) -> list[str]:
    """The modules whose code is in ``node_type``'s cache keys: the class's and its bases'
    (outside the engine), and the helpers they import from their own package."""
    names: list[str] = []
    for cls in node_type.__mro__:
        if cls is NodeType or cls is object or cls.__module__ in names:
            continue
        names.append(cls.__module__)
        for helper in _package_helpers(cls.__module__):
            if helper not in names:
                names.append(helper)
    return names


def _package_helpers(module_name: str) -> list[str]:
    """Modules of ``module_name``'s own library (its top-level package: a node of
    ``modrag_nodes.grounding`` uses ``modrag_nodes.generation.fact_match``) that it imports,
    directly or through each other (in the order first met); the application's own modules
    (``modrag_studio``) are followed within their package only."""
    package = module_name.rpartition(".")[0]
    if package and not package.startswith("modrag_studio"):
        package = package.split(".")[0]
    if not package:
        return []
    found: list[str] = []
    todo = [module_name]
    while todo:
        for name in _imported_modules(todo.pop(), package):
            if name != module_name and name not in found:
                found.append(name)
                todo.append(name)
    return found


@cache
def _imported_modules(module_name: str, package: str) -> tuple[str, ...]:
    path = _source_path(module_name)
    if path is None:
        return ()
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    names: list[str] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            candidates = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        names += [c for c in candidates
                  if c.startswith(package + ".") and _source_path(c) is not None]
    return tuple(dict.fromkeys(names))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body``, nested ones too (in functions, classes, ``if``, ``try``,
    ``with``, loops, ``match``): imports are statements, so the expressions, which are most
    of a module's tree, are not walked."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                todo.extend(inner)
        for clause in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            todo.extend(clause.body)


def _source_path(module_name: str) -> str | None:
    """The source file of a module (a plain module, not a package) without importing it."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None) if module is not None else None
    if path is None:
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec is not None and spec.has_location else None
    if path is None or path.endswith("__init__.py") or not path.endswith(".py"):
        return None
    return path


def _module_identity(module_name: str) -> str:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if path:
        digest = hashlib.sha256()
        folder = os.path.dirname(path)
        try:
            for name in (path, *(os.path.join(folder, data)
                                 for data in getattr(module, "__data_files__", ()))):
                with open(name, "rb") as handle:
                    digest.update(handle.read())
            return digest.hexdigest()
        except OSError:
            pass
    top = module_name.split(".", 1)[0]
    for dist in packages_distributions().get(top, []):
        try:
            return f"{dist}=={version(dist)}"
        except PackageNotFoundError:
            continue
    return f"module:{module_name}"
