"""The run in progress, live: elapsed time and a progress bar on every running node, and the
inspector and timeline following the run (never an earlier run's state, never a deleted node).

Subscribes to the run controller's signals from outside the run features, so it needs no
change there; a timer ticks while nodes run.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from modrag_studio.engine.run.trace import NodeVisit, Trace

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.run_side import RunSide

TICK_MS = 250


class LiveRun(QObject):
    """Follows one window's runs (see module docstring)."""

    def __init__(self, window: StudioShell, run: RunSide) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.window = window
        self.features = run
        self.canvas = window.canvas
        self.inspector = self.features.inspector
        self.timeline = self.features.timeline
        self.started: dict[str, float] = {}        # node id -> monotonic start
        self.started_wall: dict[str, float] = {}
        self.fractions: dict[str, float | None] = {}
        self.visits: list[NodeVisit] = []
        self.run_id = ""
        self.run_started_wall = 0.0
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self.tick)
        c = self.features.controller
        c.run_started.connect(self._run_started)
        c.node_started.connect(self._node_started)
        c.node_progress.connect(self._node_progress)
        c.node_finished.connect(self._node_finished)
        c.run_finished.connect(self._run_finished)
        c.run_error.connect(self._run_error)
        window.editor.subscribe(self._document_changed)

    # run events ---------------------------------------------------------------------------
    def _run_started(self, run_id: str, node_ids: list[str]) -> None:
        self.run_id, self.run_started_wall = run_id, time.time()
        self.started, self.started_wall, self.fractions, self.visits = {}, {}, {}, []
        self.inspector.begin_live(list(node_ids))
        self._update_timeline()

    def _node_started(self, node_id: str, iteration: int) -> None:
        self.started[node_id] = time.monotonic()
        self.started_wall[node_id] = time.time()
        self.fractions[node_id] = None
        self.inspector.live_started_node(node_id, self.started[node_id])
        self.tick()
        if not self.timer.isActive():
            self.timer.start()

    def _node_progress(self, node_id: str, fraction: float | None, _message: str) -> None:
        if node_id in self.started:
            self.fractions[node_id] = fraction

    def _node_finished(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        self._stop(visit.node_id)
        self.visits.append(visit)
        self.inspector.live_finished_node(visit, outputs)
        self._update_timeline()

    def _run_finished(self, _result: Any) -> None:
        for node_id in list(self.started):
            self._stop(node_id)
        self.timer.stop()

    def _run_error(self, _message: str) -> None:
        for node_id in list(self.started):
            self._stop(node_id)
            self.visits.append(NodeVisit(node_id=node_id, type_id=self._type_of(node_id),
                                         status="cancelled", started_at=None))
        self.timer.stop()
        self.inspector.end_live()
        self._update_timeline(status="cancelled")

    def _stop(self, node_id: str) -> None:
        self.started.pop(node_id, None)
        self.started_wall.pop(node_id, None)
        self.fractions.pop(node_id, None)
        deco = self.canvas.decor.states.get(node_id)
        if deco is not None:
            deco.set_elapsed(None)
            deco.set_busy(False)

    # every tick ---------------------------------------------------------------------------
    def tick(self) -> None:
        """Elapsed time on running nodes, a moving bar where no progress is reported."""
        now = time.monotonic()
        phase = (now * 0.7) % 1.0
        for node_id, started in self.started.items():
            deco = self.canvas.decor.states.get(node_id)
            if deco is None:
                continue
            deco.set_elapsed(now - started)
            deco.set_busy(self.fractions.get(node_id) is None, phase)
        inspected = self.inspector.node_id
        if inspected in self.started and inspected not in self.inspector.live_visits:
            self.inspector.title.setText(self.inspector.live_title(inspected))
        if self.started:
            self._update_timeline()

    def _update_timeline(self, status: str = "ok") -> None:
        now = time.time()
        running = [NodeVisit(node_id=n, type_id=self._type_of(n), status="running",
                             started_at=self.started_wall[n],
                             duration_s=now - self.started_wall[n]) for n in self.started]
        self.timeline.set_trace(Trace(
            run_id=self.run_id or "live", graph_name=self.window.editor.document().metadata.name,
            status=status, started_at=self.run_started_wall,
            duration_s=max(0.0, now - self.run_started_wall), visits=self.visits + running))

    def _type_of(self, node_id: str) -> str:
        try:
            return self.window.editor.document().node(node_id).type
        except KeyError:
            return ""

    # edits --------------------------------------------------------------------------------
    def _document_changed(self, change: Any) -> None:
        """A deleted node leaves the inspector and the timeline."""
        gone = set(change.old.node_ids()) - set(change.new.node_ids())
        if not gone:
            return
        if self.inspector.node_id in gone:
            self.inspector.show_node(None)
        trace = self.timeline.canvas.trace
        if trace is not None and any(v.node_id in gone for v in trace.visits):
            self.timeline.set_trace(trace.model_copy(update={
                "visits": [v for v in trace.visits if v.node_id not in gone]}))
        for node_id in gone:
            self._stop(node_id)
