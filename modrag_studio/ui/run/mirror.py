"""Mirroring a run on the canvas, the inspector, the timeline and the output overlays.

Turns the run controller's signals into node states, captions ("120 ms", "from cache",
"×3 · 40 ms"), progress bars, streamed text and output cards, and routes clicks on a card
row or a timeline bar to the inspector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.datatypes import Answer, Chunk, ScoredChunk
from modrag_studio.engine.core.formatting import duration, failure
from modrag_studio.engine.core.graph_io import role_of
from modrag_studio.engine.edit.copies import relative_paths
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import VISIT_STATES, NodeVisit
from modrag_studio.ui.canvas.protocols import RunCanvas
from modrag_studio.ui.inspection.inspector import Inspector
from modrag_studio.ui.inspection.overlays import OverlayManager
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.timeline import TimelineDock

CANVAS_STATES = set(VISIT_STATES)  # every visit state is drawn on its node
CAPTIONS = {"cached": "from cache", "skipped": "skipped", "failed": "failed",
            "cancelled": "cancelled", "bypassed": "passed on unchanged", "pinned": "pinned output"}


class NodeCaptions:
    """The line under each node: the run's part and the evaluation metrics' part."""

    def __init__(self, canvas: RunCanvas) -> None:
        self.canvas = canvas
        self.run: dict[str, str] = {}
        self.metrics: dict[str, str] = {}

    def set_run(self, node_id: str, text: str) -> None:
        self.run[node_id] = text
        self.show(node_id)

    def set_metrics(self, node_id: str, text: str | None) -> None:
        if text is None:
            self.metrics.pop(node_id, None)
        else:
            self.metrics[node_id] = text
        self.show(node_id)

    def show(self, node_id: str) -> None:
        parts = [self.run.get(node_id, ""), self.metrics.get(node_id, "")]
        self.canvas.set_node_caption(node_id, " · ".join(p for p in parts if p))


class RunMirror:
    """Keeps the canvas, inspector, timeline and overlays in step with the current run."""

    def __init__(self, controller: RunController, canvas: RunCanvas, overlays: OverlayManager,
                 inspector: Inspector, timeline: TimelineDock,
                 status: Callable[[str], None]) -> None:
        self.controller = controller
        self.canvas = canvas
        self.overlays = overlays
        self.inspector = inspector
        self.timeline = timeline
        self.status = status
        self.captions = NodeCaptions(canvas)
        self.visit_counts: dict[str, int] = {}
        self.times: dict[str, float] = {}
        self.order: list[str] = []
        self.last_error = ""
        c = controller
        c.run_started.connect(self.run_started)
        c.node_started.connect(self.node_started)
        c.node_progress.connect(self.node_progress)
        c.node_stream.connect(self.node_stream)
        c.node_finished.connect(self.node_finished)
        c.run_finished.connect(self.run_finished)
        c.run_error.connect(self.run_error)
        overlays.on_row_clicked.append(self.open_card_row)
        timeline.canvas.bar_clicked.connect(inspector.show_node)
        canvas.on_node_selected.append(self.select_node)

    def forget_run(self) -> None:
        """Another graph: drop the last run's views."""
        self.overlays.clear()
        self.captions.run, self.captions.metrics = {}, {}
        self.inspector.set_run(None)
        self.inspector.show_node(None)
        self.timeline.set_trace(None)

    def show_moved(self, moved: dict[str, str]) -> None:
        """Nodes now on the canvas under new ids (an expanded subgraph's inner nodes, whose
        run visits were ``sub/inner``) show the last run's state and caption again."""
        result = self.controller.last_result
        if result is None:
            return
        for old, new in moved.items():
            visit = result.trace.last_visit(old)
            if visit is None:
                continue
            self._state(new, visit.status, visit.cache_reason or visit.skip_reason or "")
            self.captions.set_run(new, duration(visit.duration_s) if visit.status == "done"
                                  else CAPTIONS.get(visit.status, visit.status))

    def _state(self, node_id: str, state: str, tooltip: str = "") -> None:
        if state in CANVAS_STATES:
            self.canvas.set_node_state(node_id, state, tooltip)

    # controller signals ------------------------------------------------------------------
    def run_started(self, run_id: str, node_ids: list[str]) -> None:
        self.canvas.clear_run_state()
        self.overlays.clear("output")
        self.inspector.streams = {}
        self.visit_counts, self.times, self.captions.run = {}, {}, {}
        self.order = list(node_ids)
        for node_id in node_ids:
            self._state(node_id, "queued", "waiting to run")
            self.captions.set_run(node_id, "")

    def node_started(self, node_id: str, iteration: int) -> None:
        self._state(node_id, "running", "running…")
        if iteration:
            self.captions.set_run(node_id, f"iteration {iteration + 1}")
        done = sum(1 for n in self.order if n in self.visit_counts)
        self.status(f"Running {node_id}… ({done}/{len(self.order)} nodes finished)")

    def node_progress(self, node_id: str, fraction: float | None, message: str) -> None:
        self.canvas.set_node_progress(node_id, fraction)
        if message:
            self.captions.set_run(node_id, message)

    def node_stream(self, node_id: str, text: str) -> None:
        full = self.controller.streams.get(node_id, text)
        self.overlays.show_stream(node_id, full)
        self.inspector.show_stream(node_id, full)

    def node_finished(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        node_id = visit.node_id
        count = self.visit_counts[node_id] = self.visit_counts.get(node_id, 0) + 1
        self.times[node_id] = self.times.get(node_id, 0.0) + visit.duration_s
        self.canvas.set_node_progress(node_id, None)
        tooltip = {
            "done": f"ran in {duration(visit.duration_s)}: {visit.cache_reason}",
            "cached": f"from cache: {visit.cache_reason}",
            "skipped": f"skipped: {visit.skip_reason}",
            "failed": failure(visit),
            "cancelled": "cancelled",
            "bypassed": "bypassed: inputs passed on unchanged",
            "pinned": f"pinned: {visit.details.get('pinned', 'pinned output')}",
        }.get(visit.status, visit.status)
        self._state(node_id, visit.status, tooltip)
        loops = f"×{count} · " if count > 1 else ""
        text = duration(self.times[node_id]) if visit.status == "done" else \
            CAPTIONS.get(visit.status, visit.status)
        self.captions.set_run(node_id, loops + text)
        if outputs and not self.canvas.is_reroute(node_id):
            is_output = role_of(visit.type_id, self.controller.registry) == "output"
            self.overlays.show_outputs(node_id, outputs, answers_only=is_output)
        if self.inspector.node_id == node_id and self.controller.streams.get(node_id):
            self.inspector.streams.pop(node_id, None)

    def run_finished(self, result: RunResult) -> None:
        trace = result.trace
        for visit in trace.visits:
            if visit.status == "cancelled" and not visit.started_at:
                self._state(visit.node_id, "cancelled", visit.skip_reason)
                self.captions.set_run(visit.node_id, "not run")
        self.inspector.set_run(result, self.controller.history)
        self.timeline.set_trace(trace)
        ran, cached = len(trace.ran()), len(trace.from_cache())
        failed = trace.with_status("failed")
        text = (f"Run {trace.status} in {duration(trace.duration_s)}: {ran} ran, "
                f"{cached} from cache")
        for status in ("pinned", "bypassed"):
            if found := trace.with_status(status):
                text += f", {len(found)} {status}"
        if failed:
            visit = trace.last_visit(failed[0])
            text += f"; {failed[0]} failed: {failure(visit, with_type=False) if visit else ''}"
            if visit is not None and visit.error is not None \
                    and visit.error.type == "MissingRunInput":
                text += ": type it in the run bar above the canvas"
        notes = [p["message"] for p in trace.problems if p.get("severity") == "warning"
                 and (p.get("code") != "unsaved-graph" or self._names_relative_paths())]
        if notes:
            text += f" ({'; '.join(notes)})"
        self.status(text + _answer_said(result))

    def _names_relative_paths(self) -> bool:
        """Whether the run named a relative path (a sample's untitled copy names none: the
        "working directory" note would be a false alarm for it); a recorded run shown again
        (no request here) says nothing about today's working directory."""
        request = self.controller.last_request
        if request is None:
            return False
        return bool(relative_paths(request.doc, self.controller.registry,
                                   dict(request.inputs)))  # as typed, before resolving

    def run_error(self, message: str) -> None:
        self.last_error = message
        started = bool(self.order and self.visit_counts)
        if not started:
            self.canvas.clear_run_state()
        else:  # the run broke off: keep what completed, mark the rest
            for node_id in self.order:
                if node_id not in self.visit_counts:
                    self._state(node_id, "cancelled", message)
                    self.canvas.set_node_progress(node_id, None)
        self.order = []
        self.status(f"{'Run stopped' if started else 'Cannot run'}: {message}")

    # clicks ----------------------------------------------------------------------------------
    def open_card_row(self, node_id: str, kind: str, row: int) -> None:
        """A click on an overlay row: a citation opens its source, a chunk its document."""
        result = self.controller.last_result
        outputs = result.node_outputs if result else {}
        visits = sorted(i for n, i in outputs if n == node_id)
        if not visits:
            return
        self.inspector.show_node(node_id)
        self.inspector.raise_()
        for value in outputs[(node_id, visits[-1])].values():
            if kind == "answer" and isinstance(value, Answer) and row < len(value.citations):
                self.inspector.open_citation(value.citations[row], value.evidence)
                return
            if isinstance(value, list) and row < len(value):
                item = value[row]
                chunk = item.chunk if isinstance(item, ScoredChunk) else item
                if isinstance(chunk, Chunk):
                    self.inspector.show_chunk_source(chunk)
                    return

    def select_node(self, node_id: str | None) -> None:
        self.timeline.canvas.selected = node_id
        self.timeline.canvas.update()
        self.inspector.show_node(node_id)


ANSWER_SHOWN_CHARS = 160


def _answer_said(result: RunResult) -> str:
    """The run's answer, in a few words for the status bar (its sources are on the output
    node); empty when the run answered nothing."""
    answer = next((v for v in result.outputs.values() if isinstance(v, Answer)), None)
    if answer is None or not answer.text.strip():
        return ""
    said = " ".join(answer.text.split())
    cut = said[:ANSWER_SHOWN_CHARS].rstrip() + ("…" if len(said) > ANSWER_SHOWN_CHARS else "")
    return f". Answer: {cut} (click the output node for its sources)"
