"""Subgraph edits on the editable model, each one undo step: make a subgraph of a selection,
expand one back, link an instance to a component file, update it from its file, detach it."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.engine.compose import components
from modrag_studio.engine.compose.inline import SubgraphError, collapse, inline
from modrag_studio.engine.core.document import GraphDocument, NodeLayout, NodeSpec
from modrag_studio.engine.edit.editor import GraphEditor


def _folder(editor: GraphEditor) -> Path | None:
    return editor.path.parent if editor.path is not None else None


def new_subgraph_id(editor: GraphEditor, base: str = "subgraph") -> str:
    taken = set(editor.document().node_ids())
    if base not in taken:
        return base
    return editor.new_node_id(base, taken)


def make_subgraph(editor: GraphEditor, node_ids: list[str], *, sub_id: str | None = None,
                  title: str | None = None) -> str:
    """Collapse ``node_ids`` into one subgraph node; returns its id."""
    sub_id = sub_id or new_subgraph_id(editor)
    doc = collapse(editor.document(), node_ids, sub_id, title=title)
    editor.replace(f"make subgraph {sub_id} of {len(set(node_ids))} nodes", doc)
    return sub_id


def expand_subgraph(editor: GraphEditor, sub_id: str) -> list[str]:
    """Put the nodes of subgraph ``sub_id`` back in its place; returns their ids."""
    before = set(editor.document().node_ids())
    doc = inline(editor.document(), sub_id)
    editor.replace(f"expand subgraph {sub_id}", doc)
    return [n for n in doc.node_ids() if n not in before]


def _replaced(doc: GraphDocument, spec: NodeSpec) -> GraphDocument:
    return doc.model_copy(update={"nodes": [spec if n.id == spec.id else n for n in doc.nodes]})


def _subgraph(editor: GraphEditor, sub_id: str) -> NodeSpec:
    try:
        spec = editor.document().node(sub_id)
    except KeyError:
        raise SubgraphError(f"no node '{sub_id}' in the graph") from None
    if spec.subgraph is None:
        raise SubgraphError(f"node '{sub_id}' is not a subgraph")
    return spec


def add_component(editor: GraphEditor, path: Path, pos: tuple[float, float] = (0.0, 0.0)
                  ) -> str:
    """Add an instance of the component file at ``path``, linked to it."""
    stem = path.name.removesuffix(components.COMPONENT_SUFFIX)
    node_id = new_subgraph_id(editor, stem.replace("-", "_") or "subgraph")
    spec = components.instance(path, node_id, _folder(editor))
    doc = editor.document()
    layout = doc.layout.model_copy(update={"nodes": {
        **doc.layout.nodes, node_id: NodeLayout(x=pos[0], y=pos[1])}}) if doc.layout else None
    editor.replace(f"add component {path.name}",
                   doc.model_copy(update={"nodes": [*doc.nodes, spec], "layout": layout}))
    return node_id


def update_from_component(editor: GraphEditor, sub_id: str) -> None:
    """Take the current version of the instance's component file."""
    spec = components.updated(_subgraph(editor, sub_id), _folder(editor))
    editor.replace(f"update {sub_id} from its component", _replaced(editor.document(), spec))


def detach(editor: GraphEditor, sub_id: str) -> None:
    """Stop following the component file (the nodes stay in the graph)."""
    spec = components.detached(_subgraph(editor, sub_id))
    editor.replace(f"detach {sub_id} from its component", _replaced(editor.document(), spec))


def save_as_component(editor: GraphEditor, sub_id: str, path: Path) -> None:
    """Write the subgraph as a component file and link the instance to it."""
    spec = _subgraph(editor, sub_id)
    components.save_component(components.as_component(spec), path)
    linked = components.instance(path, sub_id, _folder(editor), title=spec.title)
    editor.replace(f"link {sub_id} to {path.name}", _replaced(editor.document(), linked))
