"""A graph opened as an untitled copy of a template (a shipped sample): what it names
relative to the template's folder is made absolute, so the copy runs from anywhere and
saving it never touches the template."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import role_of
from modrag_studio.engine.core.paths import PATH_WORDS, existing_path_key, path_params
from modrag_studio.engine.core.registry import NodeRegistry


def _absolute(value: Any, folder: Path) -> Any:
    """``value`` made absolute when it is a relative path naming something in ``folder``."""
    if not isinstance(value, str) or Path(os.path.expanduser(value)).is_absolute():
        return value
    return existing_path_key(value, folder) or value


def template_copy(doc: GraphDocument, template: str | Path,
                  registry: NodeRegistry) -> GraphDocument:
    """``doc`` (loaded from ``template``) as a new, never-saved graph: relative defaults of
    path inputs and relative path params made absolute against the template's folder."""
    folder = Path(template).resolve().parent
    copy = doc.model_copy(deep=True)
    for node in copy.nodes:
        if node.subgraph is not None and node.subgraph.link is not None:
            link = node.subgraph.link  # a linked component: found from anywhere
            if not Path(os.path.expanduser(link.path)).is_absolute():
                node.subgraph.link = link.model_copy(
                    update={"path": str((folder / link.path).resolve())})
            continue
        if role_of(node.type, registry) == "input":
            if PATH_WORDS.search(str(node.params.get("name", ""))) and "default" in node.params:
                node.params["default"] = _absolute(node.params["default"], folder)
            continue
        if node.type not in registry:
            continue
        for name in path_params(getattr(registry.get(node.type), "Params", None)):
            if name in node.params:
                node.params[name] = _absolute(node.params[name], folder)
    copy._source_path = None
    return copy


def _relative(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\n" not in value \
        and not Path(os.path.expanduser(value)).is_absolute()


def relative_paths(doc: GraphDocument, registry: NodeRegistry,
                   inputs: dict[str, Any] | None = None) -> list[str]:
    """The relative paths ``doc`` names (path params, path inputs' defaults or the run's
    ``inputs``): what a never-saved graph resolves against the working directory."""
    found = []
    for node in doc.nodes:
        if role_of(node.type, registry) == "input":
            name = str(node.params.get("name", ""))
            value = (inputs or {}).get(name, node.params.get("default"))
            if PATH_WORDS.search(name) and _relative(value):
                found.append(str(value))
        elif node.type in registry:
            for param in path_params(getattr(registry.get(node.type), "Params", None)):
                if _relative(node.params.get(param)):
                    found.append(str(node.params[param]))
    return found
