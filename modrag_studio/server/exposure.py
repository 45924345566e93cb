"""Which graph inputs a served graph lets a client choose, and where an exposed path may point.

By default a client may set only text inputs (the question). An input is *path-like* when its
name says so or when its value reaches, through any chain of edges, a port that takes a file
or folder (``load.files.path`` ...): such inputs stay fixed to their defaults (or to a value
the operator gives at start-up) unless the operator exposes them by name, and an exposed path
is confined to the declared data root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_input_names, graph_interface
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.trust.reach import path_like_inputs


class ExposureError(ValueError):
    """The operator's choice of exposed or fixed inputs cannot work for this graph."""


class PathOutsideRoot(ValueError):
    """A client gave a path that leaves the data root."""


def input_defaults(doc: GraphDocument,
                   registry: NodeRegistry | None = None) -> dict[str, str | None]:
    inputs = graph_interface(doc, registry or default_registry()).inputs
    return {port.name: port.default for port in inputs}


@dataclass
class Exposure:
    """The request fields of a served graph and the inputs fixed by the operator."""

    exposed: list[str]
    path_inputs: set[str]
    fixed: dict[str, str] = field(default_factory=dict)
    data_root: Path | None = None

    @classmethod
    def plan(cls, doc: GraphDocument, *, expose: Iterable[str] = (),
             fixed: Mapping[str, str] | None = None,
             data_root: str | os.PathLike[str] | None = None,
             registry: NodeRegistry | None = None) -> Exposure:
        """Exposed = text inputs + ``expose``; raises ExposureError naming the input when the
        choice cannot work (unknown name, path input without a data root, no value).
        ``registry``: the node types the server runs with (default: the built-in ones)."""
        registry = registry or default_registry()
        names = graph_input_names(doc, registry)
        fixed = dict(fixed or {})
        wanted = list(dict.fromkeys(expose))
        for name in [*wanted, *fixed]:
            if name not in names:
                raise ExposureError(f"graph has no input '{name}'; its inputs are: "
                                    f"{', '.join(names) or 'none'}")
        paths = path_like_inputs(doc, registry)
        exposed = [n for n in names if (n not in paths or n in wanted) and n not in fixed]
        root = None
        if any(n in paths for n in exposed):
            if data_root is None:
                shown = ", ".join(n for n in exposed if n in paths)
                raise ExposureError(f"input(s) {shown} take a path: exposing them needs "
                                    "--data-root FOLDER (the only place a client may point)")
            root = Path(data_root).resolve(strict=True)
            if not root.is_dir():
                raise ExposureError(f"--data-root {data_root} is not a folder")
        defaults = input_defaults(doc, registry)
        for name in names:
            if name not in exposed and name not in fixed and defaults.get(name) is None:
                raise ExposureError(
                    f"input '{name}' takes a path and has no default: give it a value with "
                    f"--input {name}=VALUE or expose it with --expose-input {name} "
                    "(and --data-root)")
        return cls(exposed=exposed, path_inputs=paths, fixed=fixed, data_root=root)

    def run_inputs(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The executor's inputs for a request body: exposed fields (paths confined to the
        data root and made absolute) plus the fixed values. Raises PathOutsideRoot."""
        inputs: dict[str, Any] = dict(self.fixed)
        for name in self.exposed:
            if name not in body:
                continue
            value = body[name]
            if name in self.path_inputs and value is not None:
                value = str(confine(str(value), self.data_root, name))
            inputs[name] = value
        return inputs


def confine(value: str, root: Path | None, name: str) -> Path:
    """``value`` (relative to ``root``, or absolute) resolved with symlinks; it must stay inside
    ``root``. ``~`` is not expanded (it is an ordinary file name character here)."""
    if root is None:
        raise PathOutsideRoot(f"input '{name}': paths are not accepted (no data root)")
    if "\x00" in value:
        raise PathOutsideRoot(f"input '{name}': a path cannot hold a NUL character")
    candidate = Path(value)
    if value.startswith("~"):
        candidate = Path(".") / value  # a literal folder named '~...' inside the root
    joined = candidate if candidate.is_absolute() else root / candidate
    resolved = Path(os.path.realpath(joined))
    if resolved != root and root not in resolved.parents:
        raise PathOutsideRoot(f"input '{name}': '{value}' is outside the server's data root")
    return resolved
