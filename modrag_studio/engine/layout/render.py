"""Text renderings of a graph: Mermaid, graphviz DOT and SVG (no Qt; the server reuses it)."""

from __future__ import annotations

import hashlib
import html
from typing import Literal

from modrag_studio.engine.compose.expand import expand, has_subgraphs
from modrag_studio.engine.compose.inline import inline
from modrag_studio.engine.compose.ports import is_subgraph, type_of
from modrag_studio.engine.core.document import GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import ModragError, UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import type_name
from modrag_studio.engine.core.registry import NodeRegistry

#: how subgraph nodes are drawn: their inner nodes in a titled cluster, their inner nodes
#: in place (no cluster), or one box with the subgraph's ports
SubgraphMode = Literal["clusters", "expand", "collapse"]


def _drawn(doc: GraphDocument, mode: SubgraphMode) -> tuple[GraphDocument, dict[str, str]]:
    """The document to draw and, for clusters, each top-level subgraph's title by id."""
    if mode == "collapse" or not has_subgraphs(doc):
        return doc, {}
    titles = {n.id: n.title or (n.subgraph.graph.metadata.name if n.subgraph else n.id)
              for n in doc.nodes if is_subgraph(n)}
    return expand(doc).doc, titles if mode == "clusters" else {}


def expanded_in_place(doc: GraphDocument) -> GraphDocument:
    """``doc`` with every subgraph expanded back into its nodes (the Expand command's)."""
    while (subs := [n.id for n in doc.nodes if is_subgraph(n) and n.subgraph is not None]):
        doc = inline(doc, subs[0])
    return doc


class RenderError(ModragError):
    """A rendering could not be produced (for example the graphviz ``dot`` program is missing)."""


# Colours of the common data types; other type names get a stable colour from their hash.
TYPE_COLORS: dict[str, tuple[int, int, int]] = {
    "str": (120, 200, 120),
    "Query": (90, 170, 240),
    "Document": (235, 170, 70),
    "list[Document]": (235, 140, 40),
    "Chunk": (200, 120, 220),
    "list[Chunk]": (170, 90, 210),
    "ScoredChunk": (240, 100, 110),
    "list[ScoredChunk]": (220, 70, 90),
    "Prompt": (90, 210, 200),
    "Answer": (250, 220, 80),
    "int": (160, 160, 230),
    "float": (130, 130, 210),
    "bool": (200, 200, 120),
    "list": (170, 170, 170),
    "dict": (150, 150, 150),
    "Any": (200, 200, 200),
}


def type_color(name: str) -> tuple[int, int, int]:
    """The colour of a data type name (``type_name(port.type)``); hashed when not listed."""
    if name in TYPE_COLORS:
        return TYPE_COLORS[name]
    digest = hashlib.sha1(name.encode("utf-8")).digest()
    # keep colours light enough to read on a dark canvas
    return tuple(90 + b % 150 for b in digest[:3])  # type: ignore[return-value]


def hex_color(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _node_type(spec: NodeSpec, registry: NodeRegistry) -> type[NodeType] | None:
    try:
        return type_of(spec, registry)
    except UnknownNodeType:
        return None


def _title(spec: NodeSpec, node_type: type[NodeType] | None) -> str:
    if spec.title:
        return spec.title
    return node_type.display_title() if node_type is not None else spec.type


def _mermaid_text(text: str) -> str:
    return html.escape(text, quote=True).replace("&#x27;", "'")


def to_mermaid(doc: GraphDocument, registry: NodeRegistry,
               subgraphs: SubgraphMode = "clusters") -> str:
    """A Mermaid ``flowchart LR``: one box per node (title and type), edges labelled by ports.

    Node ids are mapped to ``n0, n1, ...`` so any id is safe; loop-back edges are dotted and
    labelled with their iteration limit. Unknown node types are drawn with a dashed border.
    Subgraphs (``subgraphs``): their inner nodes in a Mermaid ``subgraph`` block, in place,
    or one box.
    """
    doc, clusters = _drawn(doc, subgraphs)
    lines = ["flowchart LR"]
    ids = {spec.id: f"n{i}" for i, spec in enumerate(doc.nodes)}
    unknown = []
    boxes: dict[str | None, list[str]] = {}
    for spec in doc.nodes:
        node_type = _node_type(spec, registry)
        if node_type is None:
            unknown.append(ids[spec.id])
        title = _mermaid_text(_title(spec, node_type))
        label = f"{title}<br/><small>{spec.id} · {spec.type}</small>"
        owner = spec.id.split("/", 1)[0] if "/" in spec.id else None
        boxes.setdefault(owner if owner in clusters else None, []).append(
            f'{ids[spec.id]}["{label}"]')
    lines += [f"    {box}" for box in boxes.pop(None, [])]
    for index, (owner, inner) in enumerate(boxes.items()):
        lines.append(f'    subgraph s{index}["{_mermaid_text(clusters[owner])} ({owner})"]')
        lines += [f"        {box}" for box in inner]
        lines.append("    end")
    for edge in doc.edges:
        src, dst = ids.get(edge.source_node), ids.get(edge.target_node)
        if src is None or dst is None:
            continue
        ports = _mermaid_text(f"{edge.source_port} → {edge.target_port}")
        if edge.loop is not None:
            lines.append(f'    {src} -.->|"{ports} (loop ≤{edge.loop.max_iterations})"| {dst}')
        else:
            lines.append(f'    {src} -->|"{ports}"| {dst}')
    if unknown:
        lines.append("    classDef unknown stroke-dasharray: 5 5,stroke:#c33")
        lines.append(f"    class {','.join(unknown)} unknown")
    return "\n".join(lines) + "\n"


def _port_row(name: str, tp: str, port: str, align: str) -> str:
    color = hex_color(type_color(tp))
    return (
        f'<TD PORT="{port}" ALIGN="{align}" BGCOLOR="{color}">'
        f"{html.escape(name)} <FONT POINT-SIZE=\"9\">{html.escape(tp)}</FONT></TD>"
    )


def _dot_label(spec: NodeSpec, node_type: type[NodeType] | None) -> str:
    title = html.escape(_title(spec, node_type))
    subtitle = html.escape(f"{spec.id} · {spec.type}")
    rows = [
        f'<TR><TD COLSPAN="2" BGCOLOR="#3b4252"><FONT COLOR="white"><B>{title}</B></FONT>'
        f'<BR/><FONT COLOR="#d8dee9" POINT-SIZE="9">{subtitle}</FONT></TD></TR>'
    ]
    inputs = list(node_type.inputs) if node_type else []
    outputs = list(node_type.outputs) if node_type else []
    for i in range(max(len(inputs), len(outputs))):
        left = (
            _port_row(inputs[i].name, type_name(inputs[i].type), f"in_{inputs[i].name}", "LEFT")
            if i < len(inputs) else "<TD></TD>"
        )
        right = (
            _port_row(outputs[i].name, type_name(outputs[i].type), f"out_{outputs[i].name}",
                      "RIGHT")
            if i < len(outputs) else "<TD></TD>"
        )
        rows.append(f"<TR>{left}{right}</TR>")
    table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
    return f"<{table}{''.join(rows)}</TABLE>>"


def to_dot(doc: GraphDocument, registry: NodeRegistry,
           subgraphs: SubgraphMode = "clusters") -> str:
    """Graphviz DOT source: left-to-right, ports as coloured table cells, edges port to port;
    subgraphs as titled clusters of their inner nodes, in place, or one box (``subgraphs``)."""
    import graphviz

    doc, clusters = _drawn(doc, subgraphs)
    dot = graphviz.Digraph(
        name=doc.metadata.name or "graph",
        graph_attr={"rankdir": "LR", "fontname": "Helvetica", "label": doc.metadata.name,
                    "labelloc": "t", "nodesep": "0.4", "ranksep": "0.8"},
        node_attr={"shape": "plain", "fontname": "Helvetica", "fontsize": "11"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )
    known: dict[str, type[NodeType] | None] = {}
    inside: dict[str, list[NodeSpec]] = {}
    for spec in doc.nodes:
        node_type = _node_type(spec, registry)
        known[spec.id] = node_type
        owner = spec.id.split("/", 1)[0] if "/" in spec.id else None
        if owner in clusters:
            inside.setdefault(owner, []).append(spec)
        else:
            dot.node(spec.id, label=_dot_label(spec, node_type))
    for index, (owner, specs) in enumerate(inside.items()):
        with dot.subgraph(name=f"cluster_{index}") as cluster:
            cluster.attr(label=f"{clusters[owner]} ({owner})", style="rounded,dashed",
                         color="#7b88a8", fontcolor="#4c566a")
            for spec in specs:
                cluster.node(spec.id, label=_dot_label(spec, known[spec.id]))
    for edge in doc.edges:
        if edge.source_node not in known or edge.target_node not in known:
            continue
        src_type, dst_type = known[edge.source_node], known[edge.target_node]
        tail = (f"{edge.source_node}:out_{edge.source_port}:e"
                if src_type and src_type.output_port(edge.source_port) else edge.source_node)
        head = (f"{edge.target_node}:in_{edge.target_port}:w"
                if dst_type and dst_type.input_port(edge.target_port) else edge.target_node)
        attrs: dict[str, str] = {}
        out_port = src_type.output_port(edge.source_port) if src_type else None
        if out_port is not None:
            attrs["color"] = hex_color(type_color(type_name(out_port.type)))
        if edge.loop is not None:
            attrs.update(style="dashed", constraint="false",
                         label=f"loop ≤{edge.loop.max_iterations}")
        dot.edge(tail, head, **attrs)
    return dot.source


def to_svg(doc: GraphDocument, registry: NodeRegistry,
           subgraphs: SubgraphMode = "clusters") -> str:
    """The DOT rendering laid out by graphviz ``dot`` as SVG text."""
    import graphviz

    source = graphviz.Source(to_dot(doc, registry, subgraphs))
    try:
        data = source.pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise RenderError(
            "the graphviz 'dot' program was not found on PATH; install graphviz "
            "(Debian/Ubuntu: apt-get install graphviz, macOS: brew install graphviz) "
            "or export DOT or Mermaid instead"
        ) from None
    except graphviz.CalledProcessError as exc:
        raise RenderError(f"graphviz 'dot' failed: {exc.stderr or exc}") from None
    return data
