"""The user's gestures on the canvas (wiring, cutting, moving, renaming) turned into editor
commands, one undo step each: a helper the canvas adapter owns. It reads NodeGraphQt port
and node items through their public attributes only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.errors import ConnectionRefused
from modrag_studio.engine.edit.editor import GraphEditor

_IN = "in"
PortRef = tuple[str, str, str]  # node id, port, "in" / "out"
Wire = tuple[str, str, str, str]  # source, port, target, port


class CanvasGestures:
    """``ids`` maps NodeGraphQt node ids to ours; ``refuse(message, node, port)`` reports a
    refused edit; ``resync()`` redraws the wires from the editor's document."""

    def __init__(self, editor: GraphEditor, ids: dict[str, str],
                 refuse: Callable[[str, str | None, str | None], None],
                 resync: Callable[[], None]) -> None:
        self.editor = editor
        self.ids = ids
        self.refuse = refuse
        self.resync = resync

    def port_ref(self, port_item: Any) -> PortRef | None:
        node_id = self.ids.get(port_item.node.id)
        if node_id is None:
            return None
        return node_id, port_item.name, port_item.port_type

    def pair(self, a: Any, b: Any) -> Wire | None:
        """The wire between two port items, source first (None if either is not ours)."""
        ra, rb = self.port_ref(a), self.port_ref(b)
        if ra is None or rb is None:
            return None
        if ra[2] == _IN:
            ra, rb = rb, ra
        return ra[0], ra[1], rb[0], rb[1]

    def connection_changed(self, disconnected: list, connected: list) -> None:
        drops = [p for p in (self.pair(a, b) for a, b in disconnected) if p]
        adds = [p for p in (self.pair(a, b) for a, b in connected) if p]
        for src, sp, dst, dp in adds:
            reason = self.editor.connection_problem(src, sp, dst, dp)
            if reason is not None:
                self.refuse(f"{src}.{sp} -> {dst}.{dp}: {reason}", dst, dp)
                self.resync()
                return
        try:
            with self.editor.macro("connect" if adds else "disconnect"):
                for src, sp, dst, dp in drops:
                    self.editor.disconnect(src, sp, dst, dp)
                for src, sp, dst, dp in adds:
                    self.editor.connect(src, sp, dst, dp)
        except ConnectionRefused as exc:
            self.refuse(str(exc), adds[0][2] if adds else None, adds[0][3] if adds else None)
        self.resync()

    def connection_sliced(self, ports: list) -> None:
        with self.editor.macro("cut wires"):
            for a, b in ports:
                pair = self.pair(a, b)
                if pair:
                    self.editor.disconnect(*pair)
        self.resync()

    def nodes_moved(self, moved: dict) -> None:
        positions = {}
        for node_view in moved:
            node_id = self.ids.get(node_view.id)
            if node_id is not None:
                x, y = node_view.xy_pos
                positions[node_id] = (round(x, 1), round(y, 1))
        if positions:
            self.editor.move_nodes(positions)

    def node_renamed(self, view_id: str, name: str) -> None:
        node_id = self.ids.get(view_id)
        if node_id is not None:
            self.editor.set_title(node_id, name)
