"""Node help: what a node type does, its ports with types, its params with defaults, an example."""

from __future__ import annotations

import html
import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QTextBrowser, QVBoxLayout, QWidget

from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import type_name


def param_rows(node_type: type[NodeType]) -> list[tuple[str, str, str, bool, str]]:
    """(name, type, default, required, description) for each param of the type."""
    schema = node_type.Params.model_json_schema()
    required = set(schema.get("required", []))
    rows = []
    for name, field in node_type.Params.model_fields.items():
        prop = schema.get("properties", {}).get(name, {})
        kind = prop.get("type") or " | ".join(
            str(m.get("type", m.get("$ref", "?")).rsplit("/", 1)[-1])
            for m in prop.get("anyOf", [])) or "object"
        if "enum" in prop:
            kind = " | ".join(map(str, prop["enum"]))
        default = "" if field.is_required() else json.dumps(field.get_default(
            call_default_factory=True), default=str)
        rows.append((name, kind, default, name in required, field.description or ""))
    return rows


def example_spec(node_type: type[NodeType], node_id: str = "my_node") -> dict[str, Any]:
    """A graph-file entry for the type: the params a user usually sets, with their defaults."""
    params = {name: json.loads(default) for name, _k, default, req, _d in param_rows(node_type)
              if default and not req}
    return {"id": node_id, "type": node_type.type_id, "params": dict(list(params.items())[:6])}


def node_help_html(node_type: type[NodeType], node_id: str | None = None) -> str:
    """The help page of a node type as HTML."""
    esc = html.escape
    parts = [f"<h2>{esc(node_type.display_title())}</h2>",
             f"<p><code>{esc(node_type.type_id)}</code> · {esc(node_type.category)}</p>",
             f"<p>{esc(node_type.description or 'No description.')}</p>"]
    for label, ports in (("Inputs", node_type.inputs), ("Outputs", node_type.outputs)):
        if not ports:
            continue
        parts.append(f"<h3>{label}</h3><table cellpadding='3'>")
        for port in ports:
            extra = ""
            if label == "Inputs":
                extra = " (required)" if port.required else " (optional)"
                extra += ", several" if port.multiple else ""
            parts.append(f"<tr><td><b>{esc(port.name)}</b></td>"
                         f"<td><code>{esc(type_name(port.type))}</code>{extra}</td>"
                         f"<td>{esc(port.description or '')}</td></tr>")
        parts.append("</table>")
    rows = param_rows(node_type)
    if rows:
        parts.append("<h3>Params</h3><table cellpadding='3'>"
                     "<tr><th align='left'>name</th><th align='left'>type</th>"
                     "<th align='left'>default</th><th></th></tr>")
        for name, kind, default, required, description in rows:
            shown = "<i>required</i>" if required else f"<code>{esc(default)}</code>"
            parts.append(f"<tr><td><b>{esc(name)}</b></td><td>{esc(kind)}</td>"
                         f"<td>{shown}</td><td>{esc(description)}</td></tr>")
        parts.append("</table>")
    example = json.dumps(example_spec(node_type, node_id or "my_node"), indent=2)
    parts.append(f"<h3>Example (graph file)</h3><pre>{esc(example)}</pre>")
    return "\n".join(parts)


class NodeHelpDialog(QDialog):
    """A non-modal window with a node type's help."""

    def __init__(self, node_type: type[NodeType], node_id: str | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Help: {node_type.display_title()}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.browser = QTextBrowser(self)
        self.browser.setHtml(node_help_html(node_type, node_id))
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        self.resize(640, 560)


def show_node_help(window: Any, node_id: str) -> NodeHelpDialog | None:
    """Open the help of the node ``node_id`` of the window's graph."""
    try:
        node_type = window.registry.get(window.editor.document().node(node_id).type)
    except (KeyError, UnknownNodeType):
        window.show_message(f"{node_id}: no help (unknown node type)")
        return None
    dialog = NodeHelpDialog(node_type, node_id, window)
    dialog.show()
    return dialog
