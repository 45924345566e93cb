"""``modrag-studio [GRAPH.json]``: start the studio."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modrag-studio", description="Design, run and inspect RAG graphs on a canvas.")
    parser.add_argument("graph", nargs="?", type=Path, help="graph file (JSON) to open")
    parser.add_argument("--no-restore", action="store_true",
                        help="do not offer to restore autosaved work")
    parser.add_argument("--screenshot", type=Path, metavar="PNG",
                        help="save a picture of the window once shown, then quit")
    return parser


def _running_app():
    """The running QApplication, if any (without importing Qt's widgets early)."""
    widgets = sys.modules.get("PySide6.QtWidgets")
    return widgets.QApplication.instance() if widgets is not None else None


def show_unexpected_errors(window) -> None:
    """An exception that escapes a slot is shown in a dialog (the traceback under *Show
    Details*) and on the status bar, not only on the terminal; the studio goes on."""
    import threading
    import traceback

    from PySide6.QtWidgets import QMessageBox

    previous = sys.excepthook
    open_boxes: list[QMessageBox] = []

    def hook(kind, value, trace) -> None:
        previous(kind, value, trace)  # the terminal keeps the traceback
        if threading.current_thread() is not threading.main_thread() or \
                issubclass(kind, KeyboardInterrupt) or any(b.isVisible() for b in open_boxes):
            return
        summary = f"{kind.__name__}: {value}"
        window.show_message(f"Unexpected error: {summary}")
        box = QMessageBox(QMessageBox.Icon.Critical, "Unexpected error",
                          f"The studio hit an error it did not expect, and goes on:\n\n"
                          f"{summary}\n\nSave your work (File > Save As) before going on; Show "
                          "Details has the traceback to report.",
                          QMessageBox.StandardButton.Close, window)
        box.setDetailedText("".join(traceback.format_exception(kind, value, trace)))
        box.setModal(False)
        open_boxes[:] = [box]
        box.show()

    sys.excepthook = hook


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from modrag_studio.ui.shell.platform_check import check_platform

    if _running_app() is None and (problem := check_platform(sys.argv[1:])):
        print(problem, file=sys.stderr)
        return 3
    from modrag_studio.engine.cache.node_cache import check_limits
    from modrag_studio.engine.core.errors import InvalidSetting
    from modrag_studio.engine.history.disk import history_limits

    try:  # a setting that cannot be used is named before any window opens
        check_limits()
        history_limits()
    except InvalidSetting as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from modrag_studio.ui.shell.main_window import APP_NAME, MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName("modrag-studio")
    window = MainWindow(path=args.graph, offer_restore=not args.no_restore)
    show_unexpected_errors(window)
    window.show()
    if args.screenshot is not None:
        from PySide6.QtCore import QTimer

        def shoot() -> None:
            window.canvas.fit_all()
            ok = window.grab().save(str(args.screenshot))
            window.editor.mark_saved()
            window.close()
            app.exit(0 if ok else 1)

        QTimer.singleShot(100, shoot)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
