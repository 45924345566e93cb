"""The canvas: NodeGraphQt used as a view of the editor model (the only NodeGraphQt import).

The editor (:class:`GraphEditor`) is the truth. User gestures on the canvas (wiring, moving,
dropping) are turned into editor commands; every editor change is mirrored back here by
diffing the old and new documents. NodeGraphQt's own undo stack and node ids are not used.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import MethodType

from PySide6.QtCore import QPointF, QRectF, QTimer
from PySide6.QtGui import QColor, QPen

from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import GraphDocument, Layout
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.passthrough import carried_type, edges_into
from modrag_studio.engine.core.ports import type_name
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.engine.layout.render import type_color
from modrag_studio.engine.layout.titles import graph_titles, node_title
from modrag_studio.ui.canvas.decor import LayoutItems, NodeDecorations
from modrag_studio.ui.canvas.gestures import CanvasGestures
from modrag_studio.ui.canvas.items import LOD_SCALE, label_output_ports
from modrag_studio.ui.canvas.node_face import (
    body_color,
    input_faces,
    node_tip,
    output_faces,
    port_labels,
)
from modrag_studio.ui.canvas.param_rows import NodeParamRows, RowsInNode
from modrag_studio.ui.canvas.port_highlight import PortHighlight
from modrag_studio.ui.canvas.queries import CanvasQueries
from modrag_studio.ui.canvas.routed_wires import port_centre, routed_path
from modrag_studio.ui.canvas.view import HintBubble
from modrag_studio.ui.panels.variant_overlay import VariantOverlay

with warnings.catch_warnings():  # its distutils import (see modrag_studio.ui.shell.startup)
    warnings.simplefilter("ignore")
    from NodeGraphQt import BaseNode, NodeGraph
    from NodeGraphQt.qgraphics.node_base import NodeItem
    from NodeGraphQt.qgraphics.pipe import PipeItem
    from NodeGraphQt.qgraphics.port import PortItem

_IN, _OUT = "in", "out"


class StudioNodeItem(RowsInNode, NodeItem):
    """A node item that hides its texts only when it is small in every view of the scene.

    NodeGraphQt measures the node in the scene's first view only, so a second view zoomed
    in (presentation mode) drew empty title bars while the editor was zoomed out.
    """

    on_zoom_level: Callable[[StudioNodeItem, bool], None] | None = None

    def auto_switch_mode(self) -> None:
        scene = self.scene()
        views = [v for v in scene.views() if v.isVisible()
                 and getattr(v, "sets_detail", True)] if scene is not None else []
        scale = max((v.transform().m11() for v in views), default=1.0)
        zoomed_out = scale < LOD_SCALE
        self.set_proxy_mode(zoomed_out
                            or scale * self.boundingRect().width() < self._proxy_mode_threshold)
        if zoomed_out != getattr(self, "zoomed_out", False):
            self.zoomed_out = zoomed_out
            if self.on_zoom_level is not None:
                self.on_zoom_level(self, zoomed_out)


class RerouteNodeItem(StudioNodeItem):
    """A reroute point: a small circle in the wire's colour, no title, ports on its rim."""

    SIZE = 14.0

    def auto_switch_mode(self) -> None:  # nothing to hide at any zoom
        pass

    def draw_node(self) -> None:
        self._text_item.setVisible(False)
        for text in [*self._input_items.values(), *self._output_items.values()]:
            text.setVisible(False)
        self._width = self._height = self.SIZE
        for ports, x in ((self.inputs, 0.0), (self.outputs, self.SIZE)):
            for port in ports:
                rect = port.boundingRect()
                port.setPos(x - rect.width() / 2, (self.SIZE - rect.height()) / 2)
        self.update()

    def paint(self, painter, option, widget=None) -> None:
        painter.save()
        painter.setRenderHint(painter.RenderHint.Antialiasing)
        colour = QColor(*self.color[:3])
        painter.setBrush(colour)
        painter.setPen(QPen(QColor(255, 210, 80) if self.selected else colour.lighter(170), 2.5))
        painter.drawEllipse(QRectF(0, 0, self.SIZE, self.SIZE))
        painter.restore()


class RoutedPipeItem(PipeItem):
    """A wire that goes around the nodes its curve would cross (``ui.routed_wires``).

    While a node is dragged, or the canvas is rebuilt (``viewer.routes_deferred``), the plain
    curve is drawn (routing on every mouse move would lag); the adapter redraws every wire
    when the drag or rebuild ends, with the node boxes measured once (``viewer.boxes``).
    """

    def draw_path(self, start_port, end_port=None, cursor_pos=None):
        super().draw_path(start_port, end_port, cursor_pos)
        viewer = self.viewer()
        if (cursor_pos is not None or end_port is None or not self.isVisible()
                or viewer is None or viewer.LMB_state or getattr(viewer, "routes_deferred", 0)):
            return
        out_port, in_port = self.output_port, self.input_port
        if out_port is None or in_port is None:
            return
        ends = [port_centre(out_port), port_centre(in_port)]
        own = {out_port.node, in_port.node}
        tangent = min(abs(ends[1].x() - ends[0].x()), in_port.node.boundingRect().width())
        boxes = getattr(viewer, "boxes", None) or [(n, n.sceneBoundingRect())
                                                   for n in viewer.all_nodes() if n.isVisible()]
        path = routed_path(ends[0], ends[1], tangent, [n.sceneBoundingRect() for n in own],
                           [rect for n, rect in boxes if n not in own])
        if path is not None:
            self.setPath(path)
            self._draw_direction_pointer()


def _establish_routed(viewer, start_port, end_port) -> None:
    """``NodeViewer.establish_connection`` with a :class:`RoutedPipeItem`."""
    pipe = RoutedPipeItem()
    viewer.scene().addItem(pipe)
    pipe.set_connections(start_port, end_port)
    pipe.draw_path(pipe.input_port, pipe.output_port)
    if start_port.node.selected or end_port.node.selected:
        pipe.highlight()
    if not start_port.node.visible or not end_port.node.visible:
        pipe.hide()


def _no_port_drawing(painter, rect, info) -> None:
    """Ports of a reroute point are hit areas on its rim; the dot is drawn by the node."""


class RerouteNode(BaseNode):
    """The NodeGraphQt node of reroute points (``passes_through`` node types)."""

    __identifier__ = "modrag"
    NODE_NAME = "reroute"

    def __init__(self) -> None:
        super().__init__(RerouteNodeItem)


class StudioNode(BaseNode):
    """The one NodeGraphQt node class; ports are added per instance from our node type."""

    __identifier__ = "modrag"
    NODE_NAME = "node"

    def __init__(self) -> None:
        super().__init__(StudioNodeItem)


class CanvasAdapter:
    """Mirrors a :class:`GraphEditor` on a NodeGraphQt canvas and reports gestures back.

    Composed of helpers that share its node map: ``queries`` (items, ports, wires,
    selection, fit), ``decor`` (run states, captions, badges, bypassed / pinned looks),
    ``layout`` (groups and notes), ``ports`` (compatible ports lit while wiring) and
    ``gestures`` (the user's edits sent to the editor). The helpers' methods callers use
    are the canvas's own (the table at the end of the class).
    """

    def __init__(self, editor: GraphEditor, registry: NodeRegistry) -> None:
        self.editor = editor
        self.registry = registry
        self.graph = NodeGraph()
        self.graph.register_node(StudioNode)
        self.graph.register_node(RerouteNode)
        self.graph.set_acyclic(False)  # loop edges are allowed; validation reports bad cycles
        self.view = self.graph.viewer()
        self.view.establish_connection = MethodType(_establish_routed, self.view)
        self.scene = self.view.scene()
        self.on_node_selected: list[Callable[[str | None], None]] = []
        self.on_node_moved: list[Callable[[str], None]] = []
        self.on_message: list[Callable[[str], None]] = []
        self.on_edit_layout_item: list[Callable[[str], None]] = []
        self.on_zoom_level: list[Callable[[bool], None]] = []  # zoomed out (level of detail)
        # a new wire released over empty canvas: (node id, port, "in"/"out", scene position)
        self.on_wire_dropped: list[Callable[[str, str, str, QPointF], None]] = []
        self.zoomed_out = False
        self._nodes: dict[str, StudioNode] = {}
        self._ids: dict[str, str] = {}  # NodeGraphQt id -> our node id
        self.decor = NodeDecorations(self._nodes, editor)
        self.layout = LayoutItems(self._nodes, self.scene, editor, self.on_edit_layout_item)
        self.queries = CanvasQueries(self.graph, self.view, self._nodes, self._ids,
                                     self.layout.items, self._on_selection_changed)
        self.gestures = CanvasGestures(editor, self._ids, self.refuse,
                                       lambda: self._sync_edges(editor.document()))
        self.ports = PortHighlight(self._nodes, self.port_type, self.gestures.port_ref)
        self.hint = HintBubble(self.scene, self.view)
        self.variant = VariantOverlay()  # the active variant's values, shown on the rows
        self.params = NodeParamRows(editor, self.refuse, self.variant)
        self.variant.listeners.append(lambda: [self.decor.refresh_detail(n) for n in self._nodes])
        self.on_node_opened: list[Callable[[str], None]] = []  # double-click: the detail view
        self._rewire_signals()
        # NodeGraphQt's own undo/redo actions would make Ctrl+Z ambiguous: ours is the editor's
        for action in (self.view._undo_action, self.view._redo_action):
            if action is not None:
                action.setShortcuts([])
                action.setEnabled(False)
        self._live_pos: dict[str, tuple[float, float]] = {}
        self.scene.changed.connect(self._follow_drag)
        editor.subscribe(self._on_change)
        self._rebuild(editor.document())

    # --- signal plumbing: route NodeGraphQt gestures to the editor -----------------------

    def _rewire_signals(self) -> None:
        v, g = self.view, self.graph
        v.connection_changed.disconnect(g._on_connection_changed)
        v.connection_sliced.disconnect(g._on_connection_sliced)
        v.moved_nodes.disconnect(g._on_nodes_moved)
        v.insert_node.disconnect(g._on_insert_node)
        v.search_triggered.disconnect(g._on_search_triggered)
        v.node_name_changed.disconnect(g._on_node_name_changed)
        gestures = self.gestures
        v.connection_changed.connect(gestures.connection_changed)
        v.connection_sliced.connect(gestures.connection_sliced)
        v.moved_nodes.connect(gestures.nodes_moved)
        v.insert_node.connect(lambda _pipe, _nid, moved: gestures.nodes_moved(moved))
        v.node_name_changed.connect(gestures.node_renamed)
        v.node_selection_changed.connect(self._on_selection_changed)
        v.node_double_clicked.connect(self._node_opened)
        # highlight compatible ports while a wire is dragged
        start, end = v.start_live_connection, v.end_live_connection

        def start_live(port_item):
            start(port_item)
            if port_item is not None:
                self.ports.highlight(port_item)

        def end_live():
            self.ports.clear()
            end()

        v.start_live_connection = start_live
        v.end_live_connection = end_live
        apply = v.apply_live_connection

        def apply_live(event):
            dropped = self._empty_drop(event.scenePos())
            apply(event)
            if dropped is not None:
                for callback in list(self.on_wire_dropped):
                    callback(*dropped, event.scenePos())

        v.apply_live_connection = apply_live

    def _empty_drop(self, scene_pos: QPointF) -> tuple[str, str, str] | None:
        """(node, port, "in"/"out") of a new wire released over empty canvas, else None."""
        v = self.view
        if not v._LIVE_PIPE.isVisible() or v._detached_port is not None \
                or v._start_port is None:
            return None
        if any(isinstance(i, NodeItem | PortItem) for i in self.scene.items(scene_pos)):
            return None
        return self.gestures.port_ref(v._start_port)

    def _follow_drag(self, _regions) -> None:
        """Report selected nodes that moved (live, while dragged) to ``on_node_moved``."""
        if not self.on_node_moved:
            return
        for node_id in self.selected_node_ids():
            pos = self._nodes[node_id].view.pos()
            xy = (pos.x(), pos.y())
            if self._live_pos.get(node_id) != xy:
                self._live_pos[node_id] = xy
                for callback in list(self.on_node_moved):
                    callback(node_id)

    def _on_selection_changed(self, *_args) -> None:
        selected = self.selected_node_ids()
        for callback in list(self.on_node_selected):
            callback(selected[0] if selected else None)

    def _node_opened(self, item_id: str) -> None:
        node_id = self._ids.get(item_id)
        for callback in list(self.on_node_opened) if node_id is not None else []:
            callback(node_id)

    def refuse(self, message: str, node_id: str | None = None, port: str | None = None) -> None:
        """Report a refused edit: status listeners and a transient message near the port."""
        for callback in list(self.on_message):
            callback(message)
        pos = QPointF(0, 0)
        node = self._nodes.get(node_id or "")
        if node is not None:
            found = node.get_input(port) if port else None
            pos = (found.view if found is not None else node.view).scenePos()
        self.hint.show(message, pos)

    def current_hint(self) -> str:
        """The transient message shown on the canvas ("" when none)."""
        return self.hint.text()

    # --- mirroring the editor ------------------------------------------------------------

    def _type_of(self, node_id: str) -> type[NodeType] | None:
        try:
            return type_of(self.editor.document().node(node_id), self.registry)
        except (KeyError, UnknownNodeType):
            return None

    def _on_change(self, change: Change) -> None:
        if change.kind == "reset":
            self._rebuild(change.new)
            return
        old, new = change.old, change.new
        if old is new:
            return
        old_nodes = {n.id: n for n in old.nodes}
        new_nodes = {n.id: n for n in new.nodes}
        for node_id in old_nodes.keys() - new_nodes.keys():
            self._remove_node(node_id)
        new_layout = new.layout or Layout()
        old_layout = old.layout or Layout()
        for spec in new.nodes:
            before = old_nodes.get(spec.id)
            if before is None or before.type != spec.type:
                if before is not None:
                    self._remove_node(spec.id)
                self._add_node(new, spec.id)
            elif before.params != spec.params and spec.id in self._nodes:
                self.params.show(spec.id, self._nodes[spec.id].view, self._type_of(spec.id),
                                 spec)
                self._nodes[spec.id].view.draw_node()
                self.decor.refresh_detail(spec.id)
            if new_layout.nodes.get(spec.id) != old_layout.nodes.get(spec.id):
                self._place(spec.id, new)
        titles = graph_titles(new, self._type_of)  # may change with params and other nodes
        for node_id in self._nodes:
            self._set_title(node_id, new, titles)
            self.decor.show_flags(node_id, new_nodes[node_id].bypass)
        self._sync_edges(new)
        if (new_layout.groups, new_layout.notes) != (old_layout.groups, old_layout.notes):
            self.layout.sync(new_layout)
        if (new_layout.nodes != old_layout.nodes or new.edges != old.edges
                or old_nodes.keys() != new_nodes.keys()):
            self.redraw_wires()

    def _rebuild(self, doc: GraphDocument) -> None:
        if self.zoomed_out:  # new items start in full detail; the first paint says otherwise
            self.zoomed_out = False
            self._announce_zoom_level()
        self.view.setUpdatesEnabled(False)
        self.view.routes_deferred = True  # wires are routed once, at the end
        try:
            self._rebuild_items(doc)
        finally:
            self.view.routes_deferred = False
            self.view.setUpdatesEnabled(True)
        self.redraw_wires()

    def _rebuild_items(self, doc: GraphDocument) -> None:
        for node_id in list(self._nodes):
            self._remove_node(node_id)
        titles = graph_titles(doc, self._type_of)
        for spec in doc.nodes:
            self._add_node(doc, spec.id, titles)
        self._sync_edges(doc)
        self.layout.sync(doc.layout or Layout())
        self.graph.undo_stack().clear()

    def redraw_wires(self) -> None:
        """Draw every wire again: a moved or added node may now stand in another's way."""
        self.view.boxes = [(n, n.sceneBoundingRect()) for n in self.view.all_nodes()
                           if n.isVisible()]
        try:
            for pipe in self.view.all_pipes():
                if pipe.input_port is not None and pipe.output_port is not None:
                    pipe.draw_path(pipe.input_port, pipe.output_port)
        finally:
            self.view.boxes = None

    def _add_node(self, doc: GraphDocument, node_id: str,
                  titles: dict[str, str] | None = None) -> None:
        spec = doc.node(node_id)
        try:
            node_type = type_of(spec, self.registry)  # a subgraph: ports from its boundary
        except UnknownNodeType:
            node_type = None
        reroute = node_type is not None and node_type.passes_through
        node = RerouteNode() if reroute else StudioNode()
        hidden = _no_port_drawing if reroute else None  # the dot itself is drawn
        if node_type is not None:
            for port in input_faces(node_type):
                node.add_input(port.name, multi_input=port.several, display_name=not reroute,
                               painter_func=hidden, color=port.color).view.setToolTip(port.tip)
            for port in output_faces(node_type):
                node.add_output(port.name, multi_output=port.several, display_name=not reroute,
                                painter_func=hidden, color=port.color).view.setToolTip(port.tip)
        node.set_color(*body_color(node_type))
        node.NODE_NAME = node_title(spec, node_type)
        if not reroute:
            node.view.studio_id, node.view.param_rows = node_id, self.params
            self.params.show(node_id, node.view, node_type, spec)
        node.view._proxy_mode_threshold = 45  # keep titles drawn on wide graphs zoomed out
        self.graph.add_node(node, selected=False, push_undo=False)
        self._nodes[node_id] = node
        self._ids[node.id] = node_id
        self._set_title(node_id, doc, titles)
        self._place(node_id, doc)
        node.view.setToolTip(node_tip(node_id, spec.type, node_type))
        node.view.on_zoom_level = self._zoom_level_changed
        if reroute:
            return
        self.decor.add(node_id, node.view, spec.bypass)

    def _zoom_level_changed(self, item: StudioNodeItem, zoomed_out: bool) -> None:
        self.decor.set_zoomed_out(self._ids.get(getattr(item, "id", ""), ""), zoomed_out)
        if zoomed_out != self.zoomed_out:
            self.zoomed_out = zoomed_out
            # not from inside a paint: listeners change the geometry of other items
            QTimer.singleShot(0, self.view, self._announce_zoom_level)

    def _announce_zoom_level(self) -> None:
        for callback in list(self.on_zoom_level):
            callback(self.zoomed_out)

    def _set_title(self, node_id: str, doc: GraphDocument,
                   titles: dict[str, str] | None = None) -> None:
        node = self._nodes[node_id]
        titles = titles if titles is not None else graph_titles(doc, self._type_of)
        title = titles.get(node_id, node_id)
        redraw = label_output_ports(node, port_labels(doc.node(node_id), self._type_of(node_id)))
        if node.view.name != title:  # add_node may have made the name unique ("Upper 1")
            node.model.name = title
            node.view.name = title
            redraw = True
        if redraw:
            node.view.draw_node()

    def _place(self, node_id: str, doc: GraphDocument) -> None:
        entry = (doc.layout or Layout()).nodes.get(node_id)
        node = self._nodes[node_id]
        x, y = (entry.x, entry.y) if entry else (0.0, 0.0)
        node.view.xy_pos = [x, y]
        node.model.pos = [x, y]
        chosen = entry.color if entry is not None else None
        node_type = None if chosen or node_id not in doc.node_ids() else self._type_of(node_id)
        node.view.color = (*body_color(node_type, chosen), 255)
        node.view.update()
        for port in node.input_ports() + node.output_ports():
            port.view.redraw_connected_pipes()
        for callback in list(self.on_node_moved):
            callback(node_id)

    def _remove_node(self, node_id: str) -> None:
        node = self._nodes.pop(node_id, None)
        if node is None:
            return
        self._ids.pop(node.id, None)
        self.decor.forget(node_id)
        self.params.forget(node_id)
        self.graph.remove_node(node, push_undo=False)

    def _sync_edges(self, doc: GraphDocument) -> None:
        wanted = {(e.source_node, e.source_port, e.target_node, e.target_port)
                  for e in doc.edges}
        current = self.queries.canvas_edges()
        for src, sp, dst, dp in current - wanted:
            out, inp = self._ports(src, sp, dst, dp)
            if out is not None and inp is not None:
                out.disconnect_from(inp, push_undo=False, emit_signal=False)
        for src, sp, dst, dp in wanted - current:
            out, inp = self._ports(src, sp, dst, dp)
            if out is not None and inp is not None:
                out.connect_to(inp, push_undo=False, emit_signal=False)
                self._colour_pipes(src, out)
        # pipes the viewer drew or removed by itself during a gesture are redrawn from truth
        self._prune_orphan_pipes()
        self._colour_reroutes()

    def port_type(self, node_id: str, port: str, kind: str):
        """A port's type (None when unknown); out of a reroute point, the type wired in."""
        if kind == _OUT and self.is_reroute(node_id):
            doc = self.editor.document()
            return carried_type(node_id, port, self._type_of, edges_into(doc.edges))
        node_type = self._type_of(node_id)
        if node_type is None:
            return None
        spec = node_type.input_port(port) if kind == _IN else node_type.output_port(port)
        return spec.type if spec is not None else None

    def _colour_reroutes(self) -> None:
        """Reroute dots and the wires leaving them in the colour of the type they carry."""
        for node_id, node in self._nodes.items():
            if isinstance(node.view, RerouteNodeItem):
                tp = self.port_type(node_id, "value", _OUT)
                node.view.color = (*type_color(type_name(tp)), 255)
                for port in node.output_ports():
                    self._colour_pipes(node_id, port)
                node.view.update()

    def _colour_pipes(self, node_id: str, out_port) -> None:
        tp = self.port_type(node_id, out_port.name(), _OUT)
        r, g, b = type_color(type_name(tp)) if tp is not None else (200, 200, 200)
        for pipe in out_port.view.connected_pipes:
            pipe.color = (r, g, b, 255)
            pipe.set_pipe_styling(color=pipe.color, width=2, style=pipe.style)

    def _prune_orphan_pipes(self) -> None:
        from NodeGraphQt.qgraphics.pipe import LivePipeItem, PipeItem

        for item in list(self.scene.items()):
            if isinstance(item, PipeItem) and not isinstance(item, LivePipeItem):
                inp, out = item.input_port, item.output_port
                if inp is None or out is None or item not in inp.connected_pipes:
                    self.scene.removeItem(item)

    def _ports(self, src: str, sp: str, dst: str, dp: str):
        a, b = self._nodes.get(src), self._nodes.get(dst)
        if a is None or b is None:
            return None, None
        return a.get_output(sp), b.get_input(dp)

    def is_reroute(self, node_id: str) -> bool:
        node = self._nodes.get(node_id)
        return node is not None and isinstance(node.view, RerouteNodeItem)

    def wire_at(self, scene_pos: QPointF, reach: float = 5.0) -> tuple[str, str, str, str] | None:
        """The wire (source, port, target, port) drawn under ``scene_pos``, else None."""
        from NodeGraphQt.qgraphics.pipe import LivePipeItem, PipeItem

        area = QRectF(scene_pos.x() - reach, scene_pos.y() - reach, 2 * reach, 2 * reach)
        for item in self.scene.items(area):
            if isinstance(item, PipeItem) and not isinstance(item, LivePipeItem) \
                    and item.input_port is not None and item.output_port is not None:
                return self.gestures.pair(item.output_port, item.input_port)
        return None

    # the helpers' methods, as callers address the canvas (``RunCanvas`` and the studio)
    node_ids = property(lambda self: self.queries.node_ids)
    node_item = property(lambda self: self.queries.node_item)
    canvas_edges = property(lambda self: self.queries.canvas_edges)
    input_port_items = property(lambda self: self.queries.input_port_items)
    node_scene_rect = property(lambda self: self.queries.node_scene_rect)
    port_scene_pos = property(lambda self: self.queries.port_scene_pos)
    selected_node_ids = property(lambda self: self.queries.selected_node_ids)
    select_nodes = property(lambda self: self.queries.select_nodes)
    center_on = property(lambda self: self.queries.center_on)
    fit_all = property(lambda self: self.queries.fit_all)
    items_rect = property(lambda self: self.queries.items_rect)
    set_node_state = property(lambda self: self.decor.set_node_state)
    node_state = property(lambda self: self.decor.node_state)
    set_node_caption = property(lambda self: self.decor.set_node_caption)
    set_node_progress = property(lambda self: self.decor.set_node_progress)
    clear_run_state = property(lambda self: self.decor.clear_run_state)
    set_problems = property(lambda self: self.decor.set_problems)
    set_pinned = property(lambda self: self.decor.set_pinned)
    node_flags = property(lambda self: self.decor.node_flags)
    badged_node_ids = property(lambda self: self.decor.badged_node_ids)
    layout_item = property(lambda self: self.layout.layout_item)
    compatible_ports = property(lambda self: self.ports.compatible_ports)
