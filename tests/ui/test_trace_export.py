"""Run > Trace Export…: the studio's OTLP setting, checked in its dialog, remembered in the
settings, and applied to the runs of the run process (spans with the headers arrive at a
receiver on 127.0.0.1)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.run_tracing import ExportSettings  # noqa: E402
from modrag_studio.ui.shell.main_window import MainWindow  # noqa: E402
from tests.engine.helpers import edge, graph, node  # noqa: E402

pytestmark = pytest.mark.ui



class Receiver(BaseHTTPRequestHandler):
    got: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def receiver():
    Receiver.got = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def make(qtbot, path: Path) -> MainWindow:
    window = MainWindow(default_registry(),
                        settings=QSettings(str(path), QSettings.Format.IniFormat),
                        offer_restore=False)
    qtbot.addWidget(window)
    return window


def test_the_dialog_checks_remembers_and_applies_the_setting(qtbot, tmp_path, monkeypatch,
                                                             shots):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    window = make(qtbot, tmp_path / "studio.ini")
    feature = window.features.trace_export
    assert feature.action in window.menus["Run"].actions()
    assert window.controller.trace_export is None  # off by default

    dialog = feature.show()
    assert not dialog.enabled.isChecked() and not dialog.endpoint.isEnabled()
    assert dialog.endpoint.text() == "http://127.0.0.1:6006"
    dialog.enabled.setChecked(True)
    dialog.endpoint.setText("http://127.0.0.1:4318")
    dialog.headers.setText("x-api-key=secret%20key,broken")
    dialog.content.setChecked(True)
    dialog.accept()
    assert dialog.isVisible()  # refused, and it says why
    assert dialog.problem.text() == "Headers: 'broken' is not key=value."
    assert window.controller.trace_export is None
    dialog.headers.setText("x-api-key=secret%20key")
    assert dialog.problem.text() == ""  # an edit clears it
    dialog.resize(600, dialog.sizeHint().height())
    dialog.grab().save(str(shots / "trace-export-dialog.png"))
    dialog.accept()
    assert not dialog.isVisible()
    assert window.controller.trace_export == ExportSettings(
        "http://127.0.0.1:4318", "x-api-key=secret%20key", True)
    assert "Trace export on" in window.statusBar().currentMessage()
    assert "(on)" in feature.action.text()
    window.features.run.controller.shutdown()

    again = make(qtbot, tmp_path / "studio.ini")  # remembered in the settings
    assert again.controller.trace_export == ExportSettings(
        "http://127.0.0.1:4318", "x-api-key=secret%20key", True)
    dialog = again.features.trace_export.show()
    assert dialog.enabled.isChecked() and dialog.headers.text() == "x-api-key=secret%20key"
    dialog.enabled.setChecked(False)
    dialog.accept()
    assert again.controller.trace_export is None
    assert again.features.trace_export.action.text() == "&Trace Export…"
    again.features.run.controller.shutdown()


def test_runs_of_the_run_process_are_exported_with_the_headers(qtbot, tmp_path, receiver):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    settings.setValue("trace_export/enabled", True)
    settings.setValue("trace_export/endpoint", receiver)
    settings.setValue("trace_export/headers", "x-api-key=k%3D1")
    settings.sync()
    window = make(qtbot, tmp_path / "studio.ini")
    controller = window.features.run.controller
    assert controller.mode == "process"
    try:
        window.editor.reset(graph([node("c", "debug.constant", value="hello"),
                                   node("out", "graph.output", name="answer")],
                                  [edge("c.value", "out.value")], name="traced-in-studio"))
        window.features.run.run()
        qtbot.waitUntil(lambda: not controller.busy, timeout=120_000)
        assert controller.last_result.ok
        qtbot.waitUntil(lambda: bool(Receiver.got), timeout=30_000)  # spans reached it
        headers, body = Receiver.got[0]
        assert headers["x-api-key"] == "k=1"
        request = ExportTraceServiceRequest.FromString(body)
        spans = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
        assert sorted(s.name for s in spans) == ["c", "out", "traced-in-studio"]
        root = next(s for s in spans if s.name == "traced-in-studio")
        assert {s.parent_span_id for s in spans if s is not root} == {root.span_id}
    finally:
        controller.shutdown()
