"""The editable graph model behind the studio's canvas (plain Python, no Qt).

Every edit is a command on an undo stack: the document before and the document after (graph
documents are small immutable pydantic values, so a snapshot is both simple and exact).
Listeners subscribed with :meth:`GraphEditor.subscribe` receive a :class:`Change` after
every edit, undo, redo or reset and mirror the difference (the canvas, the problems panel).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import (
    EdgeSpec,
    GraphDocument,
    GroupLayout,
    Layout,
    NodeLayout,
    NodeSpec,
    NoteLayout,
)
from modrag_studio.engine.core.errors import ConnectionRefused, ModragError, UnknownNodeType
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import carried_problem, connection_problem
from modrag_studio.engine.edit.clipboard import fragment_text, with_fragment
from modrag_studio.engine.layout.auto_layout import with_auto_layout


class ParamRejected(ModragError):
    """A param value failed the node's Params model; ``field`` and ``message`` say why."""

    def __init__(self, node_id: str, field_name: str, message: str) -> None:
        self.node_id = node_id
        self.field = field_name
        self.message = message
        super().__init__(f"{node_id}.params.{field_name}: {message}")


@dataclass(frozen=True)
class Change:
    """What happened: ``kind`` is "edit", "undo", "redo", "reset" or "layout" (a deferred
    layout search placed the nodes of a graph just opened); both documents given."""

    kind: str
    label: str
    old: GraphDocument
    new: GraphDocument


@dataclass
class _Command:
    label: str
    before: GraphDocument
    after: GraphDocument
    # an action outside the document (pinning an output): what undo and redo call
    undo_action: Callable[[], None] | None = None
    redo_action: Callable[[], None] | None = None


@dataclass
class _Macro:
    label: str
    before: GraphDocument
    depth: int = 1


@dataclass
class GraphEditor:
    """Holds the current document, its file path and the undo/redo history."""

    registry: NodeRegistry
    _doc: GraphDocument = field(default_factory=GraphDocument)
    path: Path | None = None
    _undo: list[_Command] = field(default_factory=list)
    _redo: list[_Command] = field(default_factory=list)
    _listeners: list[Callable[[Change], None]] = field(default_factory=list)
    _saved_marker: object | None = None
    _macro: _Macro | None = None
    #: (the document as opened, its quick layout) while :meth:`refine_layout` is due
    _layout_due: tuple[GraphDocument, GraphDocument] | None = None

    def __post_init__(self) -> None:
        self._doc = self._prepared(self._doc)
        self._saved_marker = self._marker()

    # --- state -----------------------------------------------------------------------------

    def document(self) -> GraphDocument:
        """The current document, layout included (what Save writes)."""
        return self._doc

    def subscribe(self, callback: Callable[[Change], None]) -> None:
        self._listeners.append(callback)

    def unsubscribe(self, callback: Callable[[Change], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    @property
    def dirty(self) -> bool:
        """Whether the document differs from what was last loaded or saved."""
        return self._marker() is not self._saved_marker

    def mark_saved(self, path: Path | None = None) -> None:
        if path is not None:
            self.path = Path(path)
        self._saved_marker = self._marker()
        self._emit(Change("saved", "save", self._doc, self._doc))

    def _marker(self) -> object | None:
        edits = [c for c in self._undo if c.undo_action is None]  # actions leave the file
        return edits[-1] if edits else None

    def reset(self, doc: GraphDocument, path: Path | None = None, *, dirty: bool = False,
              defer_layout: bool = False) -> None:
        """Replace the document (New, Open, restore); clears the undo history.

        Nodes without a position are laid out by the full search, or with ``defer_layout``
        by one quick candidate, the search left to :meth:`refine_layout` (the studio runs
        it after the window's first paint).
        """
        old = self._doc
        self._layout_due = None
        if defer_layout:
            self._doc = with_auto_layout(doc, self.registry, engine="bands")
            if self._doc is not doc:
                self._layout_due = (doc, self._doc)
        else:
            self._doc = self._prepared(doc)
        self.path = Path(path) if path is not None else None
        self._undo.clear()
        self._redo.clear()
        self._saved_marker = object() if dirty else self._marker()
        self._emit(Change("reset", "open", old, self._doc))

    def _prepared(self, doc: GraphDocument) -> GraphDocument:
        return with_auto_layout(doc, self.registry)

    @property
    def layout_due(self) -> bool:
        """Whether a deferred layout search (``reset(defer_layout=True)``) is still to run."""
        return self._layout_due is not None

    def refine_layout(self) -> bool:
        """Run the deferred layout search; its positions replace the quick ones when nothing
        was edited since the reset. Not an undo step and not an edit (the saved state stays);
        listeners get a "layout" change. Returns whether any node moved."""
        due, self._layout_due = self._layout_due, None
        if due is None or self._doc is not due[1]:
            return False
        best = self._prepared(due[0])
        if best == self._doc:
            return False
        quick, self._doc = self._doc, best
        self._emit(Change("layout", "lay out", quick, best))
        return True

    # --- undo / redo -----------------------------------------------------------------------

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo_label(self) -> str:
        return self._undo[-1].label if self._undo else ""

    def redo_label(self) -> str:
        return self._redo[-1].label if self._redo else ""

    def undo(self) -> None:
        if not self._undo:
            return
        cmd = self._undo.pop()
        self._redo.append(cmd)
        if cmd.undo_action is not None:
            cmd.undo_action()
        self._doc = cmd.before
        self._emit(Change("undo", cmd.label, cmd.after, cmd.before))

    def redo(self) -> None:
        if not self._redo:
            return
        cmd = self._redo.pop()
        self._undo.append(cmd)
        if cmd.redo_action is not None:
            cmd.redo_action()
        self._doc = cmd.after
        self._emit(Change("redo", cmd.label, cmd.before, cmd.after))

    def push_action(self, label: str, do: Callable[[], None], undo: Callable[[], None]) -> None:
        """Do an undoable action that lives outside the document (pin an output): ``do`` now
        and on redo, ``undo`` on undo. The document and its saved state do not change."""
        do()
        self._undo.append(_Command(label, self._doc, self._doc, undo, do))
        self._redo.clear()
        self._emit(Change("edit", label, self._doc, self._doc))

    @contextmanager
    def macro(self, label: str) -> Iterator[None]:
        """Group the edits made inside into one undoable command."""
        if self._macro is not None:
            self._macro.depth += 1
        else:
            self._macro = _Macro(label, self._doc)
        try:
            yield
        finally:
            self._macro.depth -= 1
            if self._macro.depth == 0:
                macro, self._macro = self._macro, None
                if macro.before is not self._doc and macro.before != self._doc:
                    self._undo.append(_Command(macro.label, macro.before, self._doc))
                    self._redo.clear()
                    self._emit(Change("edit", macro.label, macro.before, self._doc))

    def replace(self, label: str, doc: GraphDocument) -> None:
        """Make ``doc`` the document, one undo step named ``label`` (nothing when equal)."""
        self._apply(label, doc)

    def _apply(self, label: str, new: GraphDocument) -> None:
        if new == self._doc:
            return
        old, self._doc = self._doc, new
        if self._macro is not None:
            return
        self._undo.append(_Command(label, old, new))
        self._redo.clear()
        self._emit(Change("edit", label, old, new))

    def _emit(self, change: Change) -> None:
        for callback in list(self._listeners):
            callback(change)

    # --- helpers ---------------------------------------------------------------------------

    def _layout(self) -> Layout:
        return self._doc.layout or Layout()

    def _with(self, **update: Any) -> GraphDocument:
        return self._doc.model_copy(update=update)

    def new_node_id(self, type_id: str, taken: set[str] | None = None) -> str:
        """A readable unused id such as ``constant_2`` for a node of ``type_id``."""
        taken = taken if taken is not None else set(self._doc.node_ids())
        base = re.sub(r"[^A-Za-z0-9_]", "_", type_id.rsplit(".", 1)[-1]) or "node"
        if not re.match(r"[A-Za-z_]", base):
            base = f"n_{base}"
        base = base[:56]
        index = 1
        while f"{base}_{index}" in taken:
            index += 1
        return f"{base}_{index}"

    # --- nodes -----------------------------------------------------------------------------

    def add_node(
        self,
        type_id: str,
        pos: tuple[float, float] = (0.0, 0.0),
        params: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str:
        """Add a node of a registered type at ``pos``; returns its new id."""
        node_type = self.registry.get(type_id)
        node_id = node_id or self.new_node_id(node_type.type_id)
        if node_id in self._doc.node_ids():
            raise ModragError(f"node id '{node_id}' is already in the graph")
        spec = NodeSpec(id=node_id, type=node_type.type_id, version=node_type.version,
                        params=dict(params or {}))
        layout = self._layout()
        nodes = {**layout.nodes, node_id: NodeLayout(x=pos[0], y=pos[1])}
        self._apply(
            f"add {node_type.display_title()}",
            self._with(nodes=[*self._doc.nodes, spec],
                       layout=layout.model_copy(update={"nodes": nodes})),
        )
        return node_id

    def remove_nodes(self, node_ids: list[str]) -> None:
        """Delete nodes, their edges and their layout entries."""
        gone = set(node_ids) & set(self._doc.node_ids())
        if not gone:
            return
        layout = self._layout()
        nodes = {k: v for k, v in layout.nodes.items() if k not in gone}
        bridges = self._bridges(gone)
        edges = [bridges.get((e.source, e.target), e) for e in self._doc.edges
                 if (e.source_node not in gone or (e.source, e.target) in bridges)
                 and e.target_node not in gone]
        self._apply(
            f"delete {len(gone)} node(s)" if len(gone) > 1 else f"delete {next(iter(gone))}",
            self._with(
                nodes=[n for n in self._doc.nodes if n.id not in gone],
                edges=edges,
                layout=layout.model_copy(update={"nodes": nodes}),
            ),
        )

    def _passes_through(self, node_id: str) -> bool:
        try:
            return self.registry.get(self._doc.node(node_id).type).passes_through
        except (KeyError, UnknownNodeType):
            return False

    def _bridges(self, gone: set[str]) -> dict[tuple[str, str], EdgeSpec]:
        """The wires deleted reroute points stood on, joined again (through whole chains),
        by the reroute's outgoing edge (whose place they take)."""
        feeds = {e.target_node: e for e in self._doc.edges if e.loop is None}
        bridges = {}
        for edge in self._doc.edges:
            if edge.source_node not in gone or edge.target_node in gone \
                    or not self._passes_through(edge.source_node):
                continue
            source, seen = feeds.get(edge.source_node), {edge.source_node}
            while source is not None and source.source_node in gone \
                    and self._passes_through(source.source_node) \
                    and source.source_node not in seen:
                seen.add(source.source_node)
                source = feeds.get(source.source_node)
            if source is not None and source.source_node not in gone:
                bridges[(edge.source, edge.target)] = EdgeSpec(
                    source=source.source, target=edge.target, loop=edge.loop)
        return bridges

    def insert_reroute(self, source: str, source_port: str, target: str, target_port: str,
                       pos: tuple[float, float], type_id: str | None = None) -> str:
        """Put a reroute point on the wire ``source.port -> target.port`` (one undo step):
        a node of ``type_id``, by default the registry's pass-through type
        (``NodeType.passes_through``)."""
        wire = (f"{source}.{source_port}", f"{target}.{target_port}")
        if not any((e.source, e.target) == wire for e in self._doc.edges):
            raise ModragError(f"no wire {wire[0]} -> {wire[1]} to put a reroute point on")
        if type_id is None:
            type_id = next((t.type_id for t in self.registry if t.passes_through), None)
            if type_id is None:
                raise ModragError("no pass-through node type is registered to reroute with")
        point = self.registry.get(type_id)
        into, out = point.inputs[0].name, point.outputs[0].name
        with self.macro(f"reroute {wire[0]} -> {wire[1]}"):
            node_id = self.add_node(type_id, pos)
            edges: list[EdgeSpec] = []
            for edge in self._doc.edges:  # in place: a multiple input keeps its order
                if (edge.source, edge.target) != wire:
                    edges.append(edge)
                    continue
                edges += [EdgeSpec(source=edge.source, target=f"{node_id}.{into}"),
                          EdgeSpec(source=f"{node_id}.{out}", target=edge.target, loop=edge.loop)]
            self._apply("reroute", self._with(edges=edges))
        return node_id

    def set_bypass(self, node_ids: list[str], bypass: bool) -> None:
        """Disable (bypass) or enable nodes, one undoable step."""
        wanted = set(node_ids)
        nodes = [n.model_copy(update={"bypass": bypass}) if n.id in wanted else n
                 for n in self._doc.nodes]
        word = "bypass" if bypass else "enable"
        self._apply(f"{word} {', '.join(sorted(wanted))}", self._with(nodes=nodes))

    def move_nodes(self, positions: dict[str, tuple[float, float]]) -> None:
        layout = self._layout()
        nodes = dict(layout.nodes)
        for node_id, (x, y) in positions.items():
            if node_id in self._doc.node_ids():
                old = nodes.get(node_id, NodeLayout())
                nodes[node_id] = old.model_copy(update={"x": float(x), "y": float(y)})
        self._apply(f"move {len(positions)} node(s)",
                    self._with(layout=layout.model_copy(update={"nodes": nodes})))

    def node_position(self, node_id: str) -> tuple[float, float]:
        entry = self._layout().nodes.get(node_id, NodeLayout())
        return entry.x, entry.y

    def set_node_color(self, node_id: str, color: str | None) -> None:
        layout = self._layout()
        nodes = dict(layout.nodes)
        nodes[node_id] = nodes.get(node_id, NodeLayout()).model_copy(update={"color": color})
        self._apply(f"colour {node_id}",
                    self._with(layout=layout.model_copy(update={"nodes": nodes})))

    def set_title(self, node_id: str, title: str | None) -> None:
        self._replace_node(node_id, title=title or None, label=f"rename {node_id}")

    def _replace_node(self, node_id: str, *, label: str, **update: Any) -> None:
        self._doc.node(node_id)  # raises KeyError for an unknown id
        nodes = [n.model_copy(update=update) if n.id == node_id else n for n in self._doc.nodes]
        self._apply(label, self._with(nodes=nodes))

    # --- params ----------------------------------------------------------------------------

    def set_metadata(self, *, name: str | None = None, description: str | None = None) -> None:
        """Rename the graph or change its description (one undoable step)."""
        update = {k: v for k, v in (("name", name), ("description", description))
                  if v is not None}
        if update:
            metadata = self._doc.metadata.model_copy(update=update)
            self._apply("graph settings", self._with(metadata=metadata))

    def set_param(self, node_id: str, name: str, value: Any) -> None:
        """Set one param after validating the whole params dict through the node's model.

        Raises :class:`ParamRejected` (nothing changes) when the value is not valid.
        """
        spec = self._doc.node(node_id)
        node_type = self.registry.get(spec.type)
        params = {**spec.params, name: value}
        try:
            model = node_type.Params.model_validate(params)
        except ValidationError as exc:
            errors = exc.errors()
            mine = [e for e in errors if e["loc"] and e["loc"][0] == name] or errors
            raise ParamRejected(node_id, name, mine[0]["msg"]) from None
        dumped = model.model_dump(mode="json")
        params[name] = dumped.get(name, value)
        self._replace_node(node_id, params=params, label=f"set {node_id}.{name}")

    def reset_param(self, node_id: str, name: str) -> None:
        spec = self._doc.node(node_id)
        params = {k: v for k, v in spec.params.items() if k != name}
        self._replace_node(node_id, params=params, label=f"reset {node_id}.{name}")

    # --- edges -----------------------------------------------------------------------------

    def connection_problem(self, source: str, source_port: str, target: str,
                           target_port: str) -> str | None:
        """Why the connection would be refused, or None."""
        ids = set(self._doc.node_ids())
        for node_id in (source, target):
            if node_id not in ids:
                return f"node '{node_id}' is not in the graph"
        if source == target:
            return f"node '{source}' cannot connect to itself (use a loop edge)"
        try:
            source_type = type_of(self._doc.node(source), self.registry)
            target_type = type_of(self._doc.node(target), self.registry)
        except UnknownNodeType as exc:
            return str(exc)
        reason = connection_problem(source_type, source_port, target_type, target_port)
        if reason is None and source_type.passes_through:  # a reroute carries its input's type
            edge = EdgeSpec(source=f"{source}.{source_port}", target=f"{target}.{target_port}")
            reason = carried_problem(self._doc, self._type_or_none, edge, target_type)
        return reason

    def _type_or_none(self, node_id: str) -> Any:
        try:
            return type_of(self._doc.node(node_id), self.registry)
        except (KeyError, UnknownNodeType):
            return None

    def connect(self, source: str, source_port: str, target: str, target_port: str) -> None:
        """Connect ``source.source_port -> target.target_port``.

        Raises :class:`ConnectionRefused` with the reason (types met, ports that would fit).
        A single-connection input that is already wired is re-wired to the new source.
        """
        reason = self.connection_problem(source, source_port, target, target_port)
        if reason is not None:
            raise ConnectionRefused(f"{source}.{source_port} -> {target}.{target_port}: {reason}")
        new_edge = EdgeSpec(source=f"{source}.{source_port}", target=f"{target}.{target_port}")
        if any(e.source == new_edge.source and e.target == new_edge.target
               for e in self._doc.edges):
            return
        target_type = type_of(self._doc.node(target), self.registry)
        port = target_type.input_port(target_port)
        edges = list(self._doc.edges)
        if port is not None and not port.multiple:
            edges = [e for e in edges if not (e.target == new_edge.target and e.loop is None)]
        edges.append(new_edge)
        self._apply(f"connect {new_edge.source} -> {new_edge.target}", self._with(edges=edges))

    def disconnect(self, source: str, source_port: str, target: str, target_port: str) -> None:
        src, dst = f"{source}.{source_port}", f"{target}.{target_port}"
        edges = [e for e in self._doc.edges if not (e.source == src and e.target == dst)]
        self._apply(f"disconnect {src} -> {dst}", self._with(edges=edges))

    # --- groups and notes ------------------------------------------------------------------

    def _new_layout_id(self, prefix: str) -> str:
        layout = self._layout()
        taken = {g.id for g in layout.groups} | {n.id for n in layout.notes}
        index = 1
        while f"{prefix}_{index}" in taken:
            index += 1
        return f"{prefix}_{index}"

    def add_group(self, title: str, rect: tuple[float, float, float, float],
                  color: str | None = None) -> str:
        """A titled backdrop at ``rect`` = (x, y, width, height); returns its id."""
        group = GroupLayout(id=self._new_layout_id("group"), title=title, x=rect[0], y=rect[1],
                            width=rect[2], height=rect[3], color=color)
        layout = self._layout()
        self._apply(f"add group {title!r}", self._with(
            layout=layout.model_copy(update={"groups": [*layout.groups, group]})))
        return group.id

    def update_group(self, group_id: str, **update: Any) -> None:
        layout = self._layout()
        groups = [g.model_copy(update=update) if g.id == group_id else g for g in layout.groups]
        self._apply(f"edit group {group_id}",
                    self._with(layout=layout.model_copy(update={"groups": groups})))

    def add_note(self, text: str, pos: tuple[float, float]) -> str:
        note = NoteLayout(id=self._new_layout_id("note"), text=text, x=pos[0], y=pos[1])
        layout = self._layout()
        self._apply("add note", self._with(
            layout=layout.model_copy(update={"notes": [*layout.notes, note]})))
        return note.id

    def update_note(self, note_id: str, **update: Any) -> None:
        layout = self._layout()
        notes = [n.model_copy(update=update) if n.id == note_id else n for n in layout.notes]
        self._apply(f"edit note {note_id}",
                    self._with(layout=layout.model_copy(update={"notes": notes})))

    def remove_layout_items(self, item_ids: list[str]) -> None:
        """Delete groups and notes by id."""
        gone = set(item_ids)
        layout = self._layout()
        self._apply("delete group/note", self._with(layout=layout.model_copy(update={
            "groups": [g for g in layout.groups if g.id not in gone],
            "notes": [n for n in layout.notes if n.id not in gone],
        })))

    # --- clipboard (the fragment format lives in ``clipboard``) ----------------------------

    def copy(self, node_ids: list[str]) -> str:
        """The selected nodes and the edges between them as JSON text for the clipboard."""
        return fragment_text(self._doc, node_ids)

    def paste(self, text: str, offset: tuple[float, float] = (40.0, 40.0)) -> list[str]:
        """Insert a copied fragment with fresh ids; returns the new node ids (empty if none)."""
        pasted = with_fragment(self._doc, text, offset, known=self.registry.__contains__,
                               new_id=self.new_node_id)
        if pasted is None:
            return []
        doc, new_ids = pasted
        self._apply(f"paste {len(new_ids)} node(s)", doc)
        return new_ids

    def duplicate(self, node_ids: list[str]) -> list[str]:
        return self.paste(self.copy(node_ids))
