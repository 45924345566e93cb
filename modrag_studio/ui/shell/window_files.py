"""The main window's document files: New, Open (offering a newer autosave), Save and Save
As (atomic), the autosave side file, recent files and exports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from modrag_studio.engine.core.document import GraphDocument, load, save
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.ui.canvas.adapter import CanvasAdapter
from modrag_studio.ui.canvas.protocols import AfterSave
from modrag_studio.ui.shell import exports, files
from modrag_studio.ui.shell.deferred_layout import LayoutAfterFirstPaint

APP_NAME = "ModRAG Studio"
MAX_RECENT = 10
GRAPH_FILTER = "Graph files (*.json);;All files (*)"


class DocumentFiles:
    """The file half of the main window, mixed into it (a QMainWindow that owns what is
    declared here)."""

    editor: GraphEditor
    registry: NodeRegistry
    canvas: CanvasAdapter
    settings: QSettings
    recent_menu: QMenu
    deferred_layout: LayoutAfterFirstPaint
    after_save: list[AfterSave]

    def show_message(self, text: str, timeout_ms: int = 10_000) -> None:
        raise NotImplementedError

    def _error(self, title: str, text: str) -> None:
        raise NotImplementedError

    def ask_unsaved(self) -> bool:
        """True when it is fine to drop the current document (saved, or the user agreed)."""
        if not self.editor.dirty:
            return True
        answer = QMessageBox.question(
            self, APP_NAME, "The graph has unsaved changes. Save them?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        if answer == QMessageBox.StandardButton.Discard:
            files.discard_autosave(self.editor.path)  # discarded: nothing left to restore
            return True
        return False

    def ask_restore(self, autosave: Path) -> bool:
        """Offer to restore an autosave found after a crash (a dialog; tests drive it)."""
        answer = QMessageBox.question(
            self, "Restore unsaved work?",
            f"ModRAG Studio did not close cleanly. Restore the unsaved changes from "
            f"{autosave}?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def new_document(self) -> None:
        if self.ask_unsaved():
            files.discard_autosave(self.editor.path)
            self.editor.reset(GraphDocument())
            self.show_message("New graph")

    def open_dialog(self) -> None:
        if not self.ask_unsaved():
            return
        start = str(self.editor.path.parent) if self.editor.path else ""
        name, _ = QFileDialog.getOpenFileName(self, "Open graph", start, GRAPH_FILTER)
        if name:
            self.open_path(Path(name))

    def open_path(self, path: Path, *, offer_restore: bool = True) -> bool:
        """Load a graph file (offering a newer autosave when there is one)."""
        path = Path(path)
        autosave = files.find_restorable(path) if offer_restore else None
        source, dirty = path, False
        if autosave is not None:
            if self.ask_restore(autosave):
                source, dirty = autosave, True
            else:
                autosave.unlink(missing_ok=True)
        try:
            doc = load(source)
        except ModragError as exc:
            self._error("Cannot open graph", str(exc))
            return False
        self.editor.reset(doc, path, dirty=dirty, defer_layout=True)
        self.deferred_layout.arm()
        self._add_recent(path)
        QTimer.singleShot(0, self.canvas.fit_all)
        self.show_message(f"Opened {path}" + (" (restored unsaved changes)" if dirty else ""))
        return True

    def _offer_untitled_restore(self) -> None:
        autosave = files.find_restorable(None)
        if autosave is None:
            return
        if self.ask_restore(autosave):
            try:
                doc = load(autosave)
            except ModragError as exc:
                self._error("Cannot restore", str(exc))
                return
            self.editor.reset(doc, None, dirty=True)
        autosave.unlink(missing_ok=True)

    def save(self) -> bool:
        if self.editor.path is None:
            return self.save_as()
        return self.save_to(self.editor.path)

    def save_as(self) -> bool:
        start = str(self.editor.path or "graph.json")
        name, _ = QFileDialog.getSaveFileName(self, "Save graph as", start, GRAPH_FILTER)
        if not name:
            return False
        path = Path(name)
        if not path.suffix:
            path = path.with_suffix(".json")
        return self.save_to(path)

    def save_to(self, path: Path) -> bool:
        """Save atomically (temporary file, then rename) and forget the autosave."""
        path = Path(path)
        old_path = self.editor.path
        self.deferred_layout.refine()
        try:
            save(self.editor.document(), path)
        except OSError as exc:
            self._error("Cannot save", f"{path}: {exc.strerror or exc}")
            return False
        files.discard_autosave(old_path)
        files.discard_autosave(path)
        self.editor.mark_saved(path)
        self._add_recent(path)
        self.show_message(f"Saved {path}")
        for step in self.after_save:
            step.saved(path)
        return True

    def autosave_now(self) -> Path | None:
        """Write the autosave side file when there are unsaved changes."""
        if not self.editor.dirty:
            return None
        try:
            return files.write_autosave(self.editor.document(), self.editor.path)
        except OSError as exc:
            self.show_message(f"autosave failed: {exc}")
            return None

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value or []]

    def _add_recent(self, path: Path) -> None:
        entry = str(Path(path).resolve())
        recent = [entry] + [p for p in self.recent_files() if p != entry]
        self.settings.setValue("recent_files", recent[:MAX_RECENT])
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_files()
        for entry in recent:
            action = self.recent_menu.addAction(entry)
            action.triggered.connect(lambda _c=False, p=entry: self._open_recent(p))
        self.recent_menu.setEnabled(bool(recent))

    def _open_recent(self, entry: str) -> None:
        if self.ask_unsaved():
            self.open_path(Path(entry))

    def export_dialog(self, kind: str) -> None:
        label, file_filter, suffix = exports.EXPORT_KINDS[kind]
        base = self.editor.path.with_suffix(suffix) if self.editor.path else Path("graph" + suffix)
        name, _ = QFileDialog.getSaveFileName(self, label.rstrip("…"), str(base), file_filter)
        if name:
            self.export(kind, Path(name))

    def export(self, kind: str, path: Path) -> Path | None:
        """Export as ``kind`` (see ``exports.EXPORT_KINDS``) to ``path``."""
        path = Path(path)
        try:
            if kind == "png":
                exports.export_png(self.canvas.scene, self.canvas.items_rect(), path)
            elif kind == "svg":
                exports.export_canvas_svg(self.canvas.scene, self.canvas.items_rect(), path,
                                          self.editor.document().metadata.name)
            else:
                exports.export_text(kind, self.editor.document(), self.registry, path)
        except (ModragError, OSError, ValueError) as exc:
            self._error("Export failed", str(exc))
            return None
        self.show_message(f"Exported {path}")
        return path

