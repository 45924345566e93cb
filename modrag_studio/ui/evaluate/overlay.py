"""An evaluation report's per-node metrics shown on the canvas (captions and metric cards)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from modrag_studio.ui.evaluate.metrics import ReportError, caption, load_report
from modrag_studio.ui.inspection.overlays import OverlayManager
from modrag_studio.ui.run.mirror import NodeCaptions


class EvaluationOverlay:
    """Shows and clears a report's metrics; ``metrics`` holds what is shown, by node id."""

    def __init__(self, parent: QWidget, captions: NodeCaptions, overlays: OverlayManager,
                 status: Callable[[str, int], None]) -> None:
        self.parent = parent
        self.captions = captions
        self.overlays = overlays
        self.status = status
        self.metrics: dict[str, dict[str, float]] = {}

    def show(self, path: str | Path) -> dict[str, dict[str, float]]:
        metrics, _ = load_report(path)
        self.clear()
        self.metrics = metrics
        for node_id, values in metrics.items():
            self.captions.set_metrics(node_id, caption(values))
            self.overlays.show_metrics(node_id, values)
        self.status(f"Evaluation metrics shown on {len(metrics)} node(s)", 5000)
        return metrics

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent, "Evaluation report", "",
                                              "Report JSON (*.json)")
        if path:
            try:
                self.show(path)
            except ReportError as exc:
                self.status(str(exc), 8000)

    def clear(self) -> None:
        for node_id in list(self.captions.metrics):
            self.captions.set_metrics(node_id, None)
        self.metrics = {}
        self.overlays.clear("metrics")
