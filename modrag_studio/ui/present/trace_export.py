"""Saving the last run's trace as JSON, and replaying traces in presentation mode."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from modrag_studio.engine.core.datatypes import Answer
from modrag_studio.engine.evidence.attribution import Attribution
from modrag_studio.engine.layout.titles import node_title
from modrag_studio.engine.run.trace import Trace
from modrag_studio.reporting.run_report import write_run_report
from modrag_studio.ui.canvas.protocols import StudioWindow
from modrag_studio.ui.present.presentation import PresentationWindow
from modrag_studio.ui.run.controller import RunController


class TraceExport:
    """Export the last run's trace, or its report as one HTML page (File menu, Run menu).

    ``attributions`` (run id -> where the expected evidence went, or None) are asked in
    order for the report's "where the evidence was lost" (the evidence debugger registers one).
    """

    def __init__(self, window: StudioWindow, controller: RunController,
                 status: Callable[[str, int], None]) -> None:
        self.window = window
        self.controller = controller
        self.status = status
        self.attributions: list[Callable[[str], Attribution | None]] = []

    def last_trace(self) -> Trace | None:
        result = self.controller.last_result
        return result.trace if result else None

    def export(self, path: str | Path) -> Path:
        trace = self.last_trace()
        if trace is None:
            raise ValueError("no run to export yet: run the graph first")
        path = Path(path)
        path.write_text(trace.to_json(), encoding="utf-8")
        self.status(f"Trace saved to {path}", 5000)
        return path

    def export_dialog(self) -> None:
        trace = self.last_trace()
        if trace is None:
            self.status("Run the graph first; there is no trace to export.", 5000)
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Export run trace",  # type: ignore[arg-type]
                                              f"{trace.graph_name}-trace.json",
                                              "Trace JSON (*.json)")
        if path:
            self.export(path)


    def export_report(self, path: str | Path) -> Path:
        """The last run as a self-contained HTML page (``reporting.run_report``)."""
        result = self.controller.last_result
        if result is None:
            raise ValueError("no run to report yet: run the graph first")
        run_id = result.trace.run_id
        attribution = next((found for source in self.attributions
                            if (found := source(run_id)) is not None), None)
        registry = self.window.registry
        doc = self.window.editor.document()
        titles = {node.id: node_title(node, registry.get(node.type))
                  for node in doc.nodes if node.type in registry}
        path = write_run_report(path, doc, result, registry=registry,
                                attribution=attribution, titles=titles)
        self.status(f"Run report saved to {path}", 5000)
        return path

    def export_report_dialog(self) -> None:
        result = self.controller.last_result
        if result is None:
            self.status("Run the graph first; there is no run to report.", 5000)
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Export run report",  # type: ignore[arg-type]
                                              f"{result.trace.graph_name}-report.html",
                                              "Web page (*.html)")
        if path:
            try:
                self.export_report(path)
            except OSError as exc:
                self.status(f"Could not save the run report: {exc.strerror or exc}", 8000)


Narrator = Callable[[str | None], str]


class Presenter:
    """Presentation mode: replay the last run, or a recorded trace, step by step.

    ``narrators`` (run id -> a node's evidence sentence, or None) are asked in order; the
    first that knows the run narrates it (the evidence debugger registers one).
    """

    def __init__(self, window: StudioWindow, traces: TraceExport,
                 status: Callable[[str, int], None]) -> None:
        self.window = window
        self.traces = traces
        self.status = status
        self.presentation: PresentationWindow | None = None
        self.narrators: list[Callable[[str], Narrator | None]] = []

    def evidence(self, run_id: str) -> Narrator | None:
        return next((found for narrator in self.narrators
                     if (found := narrator(run_id)) is not None), None)

    def titles(self) -> dict[str, str]:
        """Node titles for the narration, as the canvas draws them ("Input: query")."""
        registry = self.window.registry
        return {node.id: node_title(node, registry.get(node.type))
                for node in self.window.editor.document().nodes if node.type in registry}

    def sources(self, run_id: str) -> Callable[[str], str] | None:
        """Node id -> the passage its answer cites first, for a replay of the last run (a
        recorded trace holds no passages: None)."""
        result = self.traces.controller.last_result
        if result is None or result.trace.run_id != run_id:
            return None
        return lambda node_id: cited_passage(result.node_outputs, node_id)

    def present(self, trace: Trace | None = None,
                full_screen: bool = True) -> PresentationWindow | None:
        trace = trace or self.traces.last_trace()
        if trace is None:
            self.status("Run the graph first (or replay a recorded trace).", 5000)
            return None
        self.presentation = PresentationWindow(trace, self.window.canvas, self.titles(),
                                               evidence=self.evidence(trace.run_id),
                                               registry=self.window.registry,
                                               sources=self.sources(trace.run_id))
        if full_screen:
            self.presentation.showFullScreen()
        else:
            self.presentation.resize(1280, 800)
            self.presentation.show()
        return self.presentation

    def replay_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Recorded run trace", "",  # type: ignore[arg-type]
                                              "Trace JSON (*.json)")
        if path:
            try:
                trace = Trace.model_validate_json(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self.status(f"{path}: not a run trace ({exc})", 8000)
                return
            self.present(trace)


def cited_passage(outputs: dict[tuple[str, int], dict[str, Any]], node_id: str,
                  limit: int = 320) -> str:
    """``doc_id: “text”`` of the first valid citation of the answer ``node_id`` produced
    last ("" when it produced no answer with a citation)."""
    visits = sorted(i for n, i in outputs if n == node_id)
    values = outputs[(node_id, visits[-1])].values() if visits else []
    answer = next((v for v in values if isinstance(v, Answer)), None)
    if answer is None:
        return ""
    chunks = {item.chunk_id: item.chunk for item in answer.evidence}
    for citation in answer.citations:
        chunk = chunks.get(citation.chunk_id or "")
        if citation.valid and chunk is not None:
            text = " ".join(chunk.text.split())
            text = text if len(text) <= limit else text[: limit - 1] + "…"
            return f"{chunk.doc_id}: “{text}”"
    return ""
