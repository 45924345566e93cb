"""Graphs built the way the palette builds them: nodes added with no params set."""

from __future__ import annotations

from modrag_nodes.graph_io import GraphInput, GraphOutput
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.editor import GraphEditor


def palette_graph(registry: NodeRegistry | None = None) -> GraphDocument:
    """Graph input -> text.upper -> Graph output, every param left at its default."""
    editor = GraphEditor(registry or default_registry())
    source = editor.add_node(GraphInput.type_id)
    upper = editor.add_node("text.upper", (200, 0))
    sink = editor.add_node(GraphOutput.type_id, (400, 0))
    editor.connect(source, "value", upper, "text")
    editor.connect(upper, "text", sink, "value")
    return editor.document()
