"""The grid of ``modrag eval --grid`` as a table; a double-clicked row becomes a variant."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QDialog, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from modrag_studio.evaluation.metric_registry import METRICS

COLUMNS = tuple(METRICS.headline())  # as the grid's own table and plots


def cell_changes(settings: dict[str, Any]) -> list[str]:
    """A grid cell's settings as variant changes (``node.param=value`` / ``node=type``)."""
    return [f"{name}={json.dumps(value) if not isinstance(value, str) else value}"
            for name, value in settings.items()]


class GridDialog(QDialog):
    """One row per cell: settings, the output's metrics, seconds."""

    def __init__(self, grid: dict[str, Any], on_open: Callable[[str, list[str]], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid, self.on_open = grid, on_open
        dataset = Path(grid.get("dataset", "")).name
        self.setWindowTitle(f"Grid: {grid.get('graph', '')} on {dataset}")
        self.resize(760, 360)
        axes = list(grid["axes"])
        output = grid.get("output", "")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"{output}: double-click a row to open it as a variant"))
        cells = grid["cells"]
        self.table = QTableWidget(len(cells), len(axes) + len(COLUMNS) + 1)
        self.table.setHorizontalHeaderLabels([*axes, *COLUMNS, "seconds"])
        for row, cell in enumerate(cells):
            values = [*(str(cell["settings"][a]) for a in axes),
                      *(f"{cell['metrics'].get(output, {}).get(m, 0.0):.4f}" for m in COLUMNS),
                      f"{cell['seconds']:.1f}"]
            for col, text in enumerate(values):
                self.table.setItem(row, col, QTableWidgetItem(text))
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.resizeColumnsToContents()
        self.table.cellDoubleClicked.connect(lambda row, _col: self.open_row(row))
        layout.addWidget(self.table)

    def open_row(self, row: int) -> None:
        self.on_open(f"grid_{row + 1}", cell_changes(self.grid["cells"][row]["settings"]))
