"""A run seen through subgraph nodes: the collapsed node shows its inner nodes' states rolled
up (and the values leaving it), and an opened subgraph shows its inner nodes, read-only,
with their states, captions and output cards from the run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from modrag_studio.engine.compose.expand import owner_of
from modrag_studio.engine.core.document import GraphDocument, NodeSpec
from modrag_studio.engine.core.formatting import duration, failure
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import NodeVisit
from modrag_studio.ui.canvas.adapter import CanvasAdapter
from modrag_studio.ui.inspection.overlays import OverlayManager

CAPTIONS = {"cached": "from cache", "skipped": "skipped", "failed": "failed",
            "cancelled": "cancelled", "bypassed": "passed on unchanged", "pinned": "pinned"}


def rolled_up(states: list[str], total: int) -> str:
    """The state a collapsed subgraph shows for its inner nodes' states."""
    for worst in ("failed", "running", "cancelled"):
        if worst in states:
            return worst
    if len(states) < total:
        return "running" if states else "queued"
    if all(s == "skipped" for s in states):
        return "skipped"
    if all(s in ("cached", "skipped", "pinned") for s in states):
        return "cached"
    return "done"


def visit_caption(visit: NodeVisit, count: int = 1) -> str:
    text = (duration(visit.duration_s) if visit.status == "done"
            else CAPTIONS.get(visit.status, visit.status))
    return f"×{count} · {text}" if count > 1 else text


def boundary_text(inner: GraphDocument) -> str:
    """The subgraph's ports and the inner ports they stand for, on one line."""
    boundary = inner.boundary
    if boundary is None:
        return "no ports"
    ins = [f"{b.name} → {', '.join(b.to)}" for b in boundary.inputs]
    outs = [f"{b.name} ← {b.source}" for b in boundary.outputs]
    return (f"inputs: {'; '.join(ins) or 'none'} &nbsp;·&nbsp; "
            f"outputs: {'; '.join(outs) or 'none'}")


class SubgraphRollup:
    """Keeps each collapsed subgraph node's state in step with its inner nodes' visits."""

    def __init__(self, canvas: Any, overlays: OverlayManager,
                 document: Callable[[], GraphDocument]) -> None:
        self.canvas = canvas
        self.overlays = overlays
        self.document = document
        self.visits: dict[str, dict[str, NodeVisit]] = {}  # owner -> inner id -> last visit
        self.sizes: dict[str, int] = {}

    def run_started(self, _run_id: str, node_ids: list[str]) -> None:
        self.visits = {}
        self.sizes = {}
        for node_id in node_ids:
            if "/" in node_id:
                owner = owner_of(node_id)
                self.sizes[owner] = self.sizes.get(owner, 0) + 1
        for owner in self.sizes:
            self.canvas.set_node_state(owner, "queued", "waiting to run")
            self.canvas.set_node_caption(owner, "")

    def node_started(self, node_id: str, _iteration: int) -> None:
        if "/" in node_id:
            self.canvas.set_node_state(owner_of(node_id), "running", f"running {node_id}…")

    def node_finished(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        if "/" not in visit.node_id:
            return
        owner = owner_of(visit.node_id)
        inner = self.visits.setdefault(owner, {})
        inner[visit.node_id] = visit
        total = self.sizes.get(owner, len(inner))
        state = rolled_up([v.status for v in inner.values()], total)
        failed = [v for v in inner.values() if v.status == "failed"]
        tooltip = (failure(failed[0]) if failed else
                   f"{len(inner)} of {total} inner nodes finished")
        self.canvas.set_node_state(owner, state, tooltip)
        took = sum(v.duration_s for v in inner.values() if v.status == "done")
        caption = (f"{len(inner)}/{total} · {duration(took)}" if state == "done" and took
                   else CAPTIONS.get(state, f"{len(inner)}/{total}"))
        self.canvas.set_node_caption(owner, caption)
        leaving = self._leaving(owner, visit.node_id, outputs)
        if leaving:
            self.overlays.show_outputs(owner, leaving)

    def _leaving(self, owner: str, node_id: str, outputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs of ``node_id`` that leave subgraph ``owner``, by the subgraph's port."""
        try:
            spec = self.document().node(owner)
        except KeyError:
            return {}
        boundary = spec.subgraph.graph.boundary if spec.subgraph is not None else None
        inner_id = node_id.split("/", 1)[1]
        found = {}
        for out in boundary.outputs if boundary else ():
            source, _, port = out.source.rpartition(".")
            if source == inner_id and port in outputs:
                found[out.name] = outputs[port]
        return found


class SubgraphWindow(QDialog):
    """An opened subgraph: its inner nodes on a canvas of their own, read-only, with the
    states and output cards of the last run (and of the runs that follow while it is open)."""

    def __init__(self, parent: QWidget | None, spec: NodeSpec, registry: NodeRegistry,
                 result: RunResult | None) -> None:
        super().__init__(parent)
        assert spec.subgraph is not None
        self.sub_id = spec.id
        inner = spec.subgraph.graph
        link = spec.subgraph.link
        self.setWindowTitle(f"Subgraph {spec.title or spec.id} ({spec.id}) — read-only")
        self.editor = GraphEditor(registry)
        self.editor.reset(inner)
        self.canvas = CanvasAdapter(self.editor, registry)
        self.overlays = OverlayManager(self.canvas)
        self.counts: dict[str, int] = {}
        self.editor.subscribe(self._keep_read_only)
        layout = QVBoxLayout(self)
        self.header = QLabel(
            f"<b>{spec.title or spec.id}</b> · {len(inner.nodes)} nodes · "
            + (f"linked to {link.path} (version {link.sha256[:12]})" if link else "detached")
            + " · read-only: Expand the subgraph to edit its nodes<br/><small>"
            + boundary_text(inner) + "</small>")
        layout.addWidget(self.header)
        layout.addWidget(self.canvas.view)
        self.resize(1000, 640)
        if result is not None:
            self.show_result(result)
        QTimer.singleShot(0, lambda: self.canvas.fit_all(max_scale=1.0))

    def _keep_read_only(self, change: Change) -> None:
        if change.kind == "edit" and self.editor.can_undo:
            QTimer.singleShot(0, self.editor.undo)

    def _inner(self, node_id: str) -> str | None:
        prefix = f"{self.sub_id}/"
        return node_id[len(prefix):] if node_id.startswith(prefix) else None

    def show_result(self, result: RunResult) -> None:
        self.canvas.clear_run_state()
        self.overlays.clear()
        self.counts = {}
        for visit in result.trace.visits:
            outputs = result.node_outputs.get((visit.node_id, visit.iteration), {})
            self.node_finished(visit, outputs)

    def node_finished(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        inner = self._inner(visit.node_id)
        if inner is None:
            return
        shown = owner_of(inner)  # a nested subgraph shows as its node here
        count = self.counts[inner] = self.counts.get(inner, 0) + 1
        self.canvas.set_node_state(shown, visit.status, visit.cache_reason or visit.status)
        self.canvas.set_node_caption(shown, visit_caption(visit, count))
        if outputs and shown == inner:
            self.overlays.show_outputs(inner, outputs)
