"""Render the studio canvas with a bypassed node, a pinned node and a reroute point.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_node_flags.py
        [--out docs/screenshots/editor-bypass-pin-reroute.png]

Uses the toy RAG graph of the UI tests (no models): runs it once, pins the splitter's output,
bypasses the question normaliser, puts a reroute point on the fusion -> answer wire, runs
again and saves the window.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"
                                             / "editor-bypass-pin-reroute.png"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="modrag-flags-"))
    for name in ("CACHE", "DATA", "CONFIG"):  # never the user's pins or cache
        os.environ[f"MODRAG_{name}_DIR"] = str(work / name.lower())
    from PySide6.QtCore import QPointF, QSettings
    from PySide6.QtWidgets import QApplication, QDockWidget

    from modrag_studio.engine.core.document import save
    from modrag_studio.ui.shell.main_window import MainWindow
    from tests.ui.run_helpers import flag_graph, toy_registry

    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(work / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(toy_registry(), settings=settings, offer_restore=False)
    path = work / "toy-rag.json"
    save(flag_graph(), path)
    window.open_path(path, offer_restore=False)
    window.resize(1400, 760)
    window.show()
    features = window.features.run

    def run() -> None:
        features.run()
        end = time.monotonic() + 60
        while features.controller.busy and time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)
        app.processEvents()

    run()
    window.features.node_flags.pin("split")
    window.editor.set_bypass(["normalise"], True)
    canvas = window.canvas
    a = canvas.port_scene_pos("fuse", "results", "out")
    b = canvas.port_scene_pos("answer", "evidence", "in")
    middle = (a + b) / 2
    window.features.node_flags.add_reroute(canvas.wire_at(middle),
                                           QPointF(middle.x() - 10, middle.y() + 70))
    canvas.select_nodes([])
    run()
    for dock in window.findChildren(QDockWidget):  # the canvas alone, large
        dock.hide()
    for _ in range(5):
        app.processEvents()
    canvas.fit_all()
    for _ in range(10):
        app.processEvents()
    trace = features.controller.last_result.trace
    print({v.node_id: v.status for v in trace.visits})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    canvas.view.grab().save(args.out)
    print(f"saved {args.out}")
    features.controller.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
