"""The active variant as the canvas and the Properties panel show it.

A variant overrides some params of the base graph. While one is active, every place that
shows a param value (the key-param rows on the canvas, the Properties panel, the node detail
view) shows the value the variant runs with, marks the overridden ones, and sends an edit of
an overridden param to the variant instead of the base graph (``set_param``, given by the
variants feature). Plain Python: the views listen through ``listeners``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

VARIANT_COLOUR = "#c58cff"  # the purple of the variant badges


class VariantOverlay:
    """The active variant's name and param overrides ({node id: {param: value}})."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.params: dict[str, dict[str, Any]] = {}
        self.listeners: list[Callable[[], None]] = []
        # stores ``value`` as the active variant's ``node.param``; raises ParamRejected
        self.set_param: Callable[[str, str, Any], None] | None = None

    def show(self, name: str | None, params: dict[str, dict[str, Any]] | None = None) -> None:
        """Make ``name`` (None: the base graph) the variant shown, and tell the views."""
        params = {n: dict(p) for n, p in (params or {}).items()} if name else {}
        if (name, params) == (self.name, self.params):
            return
        self.name, self.params = name, params
        for listener in list(self.listeners):
            listener()

    def overrides(self, node_id: str, param: str) -> bool:
        return self.name is not None and param in self.params.get(node_id, {})

    def value(self, node_id: str, param: str, base: Any) -> Any:
        """What ``node_id.param`` runs with: the variant's value, else ``base``."""
        return self.params[node_id][param] if self.overrides(node_id, param) else base

    def note(self, node_id: str, param: str, base: Any) -> str:
        """A tooltip line for an overridden param ('' when the variant leaves it alone)."""
        if not self.overrides(node_id, param):
            return ""
        return f"variant '{self.name}' sets this (base graph: {base!r})"
