"""The title a node is shown with, on the canvas and in reports: the user's title, else
"Input: question" for a graph input or output, else its role ("Rewrite"), else its type's.
Nodes that would share a title also name their id (``graph_titles``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.graph_io import port_of_node

NAMED_ENDS = {"input": "Input", "output": "Output"}  # by NodeType.graph_role

# Words for role param values (``NodeType.title_param``) that capitalising does not make.
ROLE_WORDS = {"hyde": "HyDE", "passthrough": "Pass-through"}


def role_title(spec: Any, node_type: Any = None) -> str | None:
    """The title saying a node's role, from the param its type titles it by
    (``NodeType.title_param``: "Rewrite", "Decompose")."""
    param = node_type.title_param if node_type is not None else None
    value = spec.params.get(param) if param else None
    if not isinstance(value, str) or not value:
        return None
    return ROLE_WORDS.get(value, value.replace("_", " ").capitalize())


def graph_titles(doc: Any, type_of: Callable[[str], Any]) -> dict[str, str]:
    """Every node's drawn title; nodes that would share one also name their id.

    ``type_of(node_id)`` gives the node's type (None when unknown).
    """
    titles = {}
    for spec in doc.nodes:
        node_type = type_of(spec.id)
        titles[spec.id] = node_title(spec, node_type) if node_type is not None \
            else spec.title or f"? {spec.type}"
    seen: dict[str, int] = {}
    for title in titles.values():
        seen[title] = seen.get(title, 0) + 1
    for spec in doc.nodes:
        title = titles[spec.id]
        label = spec.id.replace("_", " ")
        if seen[title] > 1 and not spec.title and label.lower() != title.lower():
            titles[spec.id] = f"{title} · {label}"
    return titles


def node_title(spec: Any, node_type: Any = None) -> str:
    """The title drawn on a node: the user's title, else "Input: question" for a graph input
    or output (its ``name``), else its role (``role_title``), else the type's title."""
    if spec.title:
        return spec.title
    role = role_title(spec, node_type)
    if role is not None:
        return role
    port = port_of_node(spec, node_type) if node_type is not None else None
    if port is not None and port.name:
        return f"{NAMED_ENDS[port.role]}: {port.name}"
    return node_type.display_title() if node_type is not None else spec.type
