"""Run > Trace Export…: the studio's OTLP setting (what ``--otlp`` is to ``modrag run``).

On, with a collector's URL (Phoenix, Langfuse, Jaeger, an OpenTelemetry Collector), every
run the studio starts is exported as a trace; headers carry an API key; the content switch
adds document text, messages, questions and answers. Remembered in the studio's settings
and given to the run controller, which hands it to the run process with each run.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.run_tracing import ExportSettings, available, parse_headers
from modrag_studio.ui.canvas.protocols import StudioWindow
from modrag_studio.ui.run.controller import RunController

KEY = "trace_export/"
DEFAULT_ENDPOINT = "http://127.0.0.1:6006"  # a local Phoenix


def load(settings: QSettings) -> tuple[bool, ExportSettings]:
    """Whether export is on, and the endpoint, headers and content switch remembered (the
    endpoint defaults to ``$OTEL_EXPORTER_OTLP_ENDPOINT``, else a local Phoenix)."""
    endpoint = str(settings.value(KEY + "endpoint", "") or "").strip() or (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT)
    return (_flag(settings.value(KEY + "enabled", False)),
            ExportSettings(endpoint, str(settings.value(KEY + "headers", "") or ""),
                           _flag(settings.value(KEY + "content", False))))


def save(settings: QSettings, enabled: bool, export: ExportSettings) -> None:
    settings.setValue(KEY + "enabled", enabled)
    settings.setValue(KEY + "endpoint", export.endpoint)
    settings.setValue(KEY + "headers", export.headers)
    settings.setValue(KEY + "content", export.content)
    settings.sync()


def _flag(value: object) -> bool:
    return value is True or str(value).lower() in ("true", "1")


class TraceExportDialog(QDialog):
    """The switch, the collector's URL, its headers and the content switch; OK checks them
    (a URL, headers as ``key=value``, the ``otel`` extra installed) before they are kept."""

    def __init__(self, parent: QWidget | None, enabled: bool, export: ExportSettings) -> None:
        super().__init__(parent)
        self.setWindowTitle("Trace Export")
        self.setObjectName("traceExportDialog")
        self.enabled = QCheckBox("Export every run as a trace over OTLP", self)
        self.enabled.setChecked(enabled)
        self.endpoint = QLineEdit(export.endpoint, self)
        self.endpoint.setPlaceholderText("http://127.0.0.1:6006 (Phoenix), "
                                         "http://127.0.0.1:4318 (OTel Collector)")
        self.headers = QLineEdit(export.headers, self)
        self.headers.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.headers.setPlaceholderText("key=value,key2=value2 (empty: "
                                        "$OTEL_EXPORTER_OTLP_HEADERS)")
        self.content = QCheckBox("Include document text, messages, questions and answers",
                                 self)
        self.content.setChecked(export.content)
        note = QLabel("Without content, spans carry ids, scores, ranks, models, token counts "
                      "and timings only. Headers (an API key) are kept in the studio's "
                      "settings file as typed; set OTEL_EXPORTER_OTLP_HEADERS instead to keep "
                      "them out of it. A collector that is down never holds a run up.", self)
        note.setWordWrap(True)
        self.problem = QLabel("", self)
        self.problem.setObjectName("traceExportProblem")
        self.problem.setStyleSheet("color: #b00020")
        self.problem.setWordWrap(True)
        form = QFormLayout()
        form.addRow(self.enabled)
        form.addRow("Collector URL", self.endpoint)
        form.addRow("Headers", self.headers)
        form.addRow(self.content)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.enabled.toggled.connect(self._enable)
        for edit in (self.endpoint, self.headers):
            edit.textChanged.connect(lambda _text: self.problem.setText(""))
        self._enable(enabled)
        # tall enough for the wrapped note at this width (a height of 0 squeezed every field)
        height = max(self.sizeHint().height(), self.layout().heightForWidth(560))
        self.setMinimumSize(560, height)
        self.resize(560, height)

    def values(self) -> tuple[bool, ExportSettings]:
        return (self.enabled.isChecked(),
                ExportSettings(self.endpoint.text().strip(), self.headers.text().strip(),
                               self.content.isChecked()))

    def check(self) -> str:
        """What is wrong with the values (empty: nothing)."""
        enabled, export = self.values()
        if not enabled:
            return ""
        if not export.endpoint:
            return "Give the collector's URL, e.g. http://127.0.0.1:6006."
        scheme = export.endpoint.split("://", 1)[0] if "://" in export.endpoint else "http"
        if scheme not in ("http", "https"):
            return f"Collector URL: '{scheme}://' is not http:// or https://."
        try:
            parse_headers(export.headers)
        except ValueError as exc:
            return f"Headers: {exc}."
        if not available():
            return ("Trace export needs the otel extra: pip install 'modrag-studio[otel]' "
                    "(scripts/setup.sh installs it).")
        return ""

    def accept(self) -> None:
        problem = self.check()
        self.problem.setText(problem)
        if not problem:
            super().accept()

    def _enable(self, on: bool) -> None:
        for widget in (self.endpoint, self.headers, self.content):
            widget.setEnabled(on)


class TraceExport(QObject):
    """The Run menu's "Trace Export…" entry: the dialog, the remembered setting, and the run
    controller's ``trace_export`` kept in step with it."""

    def __init__(self, window: StudioWindow, controller: RunController) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.window = window
        self.controller = controller
        self.dialog: TraceExportDialog | None = None
        self.action = QAction("&Trace Export…", window)  # type: ignore[arg-type]
        self.action.setObjectName("traceExportAction")
        self.action.setToolTip("Export every run as an OpenTelemetry trace (OTLP): Phoenix, "
                               "Langfuse, Jaeger, a collector")
        self.action.triggered.connect(lambda _checked=False: self.show())
        window.menus["Run"].addAction(self.action)
        self.apply()

    def apply(self) -> None:
        """Give the remembered setting to the run controller (None when export is off)."""
        enabled, export = load(self.window.settings)
        self.controller.trace_export = export if enabled and available() else None
        self.action.setText("&Trace Export… (on)" if self.controller.trace_export
                            else "&Trace Export…")

    def show(self) -> TraceExportDialog:
        enabled, export = load(self.window.settings)
        self.dialog = TraceExportDialog(self.window, enabled, export)  # type: ignore[arg-type]
        self.dialog.accepted.connect(self._accepted)
        self.dialog.open()
        return self.dialog

    def _accepted(self) -> None:
        assert self.dialog is not None
        enabled, export = self.dialog.values()
        save(self.window.settings, enabled, export)
        self.apply()
        self.window.statusBar().showMessage(
            f"Trace export on: runs go to {export.endpoint}" if enabled
            else "Trace export off", 5000)
