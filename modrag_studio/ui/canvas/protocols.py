"""What the studio's features need from the window, its editor and its canvas, and the
after-save step; with the canvas, the lowest part that names the window, so every part
above imports them from here and none names the shell (even for type checking).

Explicit protocols instead of ``getattr``/``hasattr`` probing: ``require`` checks a window
against them when the features are built (``ui/shell/composition.py``), so a renamed window
or canvas attribute fails at once with a message naming it, instead of silently disabling a
feature.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMenu, QStatusBar, QToolBar, QWidget

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.ui.panels.palette import NodePalette, NodeSearchPopup
from modrag_studio.ui.panels.problems import ProblemsPanel


class RunCanvas(Protocol):
    """The canvas as the run features drive it: node states, captions, progress, selection."""

    on_node_selected: list[Callable[[str | None], None]]

    def selected_node_ids(self) -> list[str]: ...

    def set_node_state(self, node_id: str, state: str, tooltip: str = "") -> None: ...

    def set_node_caption(self, node_id: str, text: str) -> None: ...

    def set_node_progress(self, node_id: str, fraction: float | None) -> None: ...

    def clear_run_state(self) -> None: ...

    def is_reroute(self, node_id: str) -> bool: ...


class RunEditor(Protocol):
    """The document holder: the graph to run, its file, and change notifications."""

    path: Path | None

    def document(self) -> GraphDocument: ...

    def subscribe(self, callback: Callable[[Any], None]) -> None: ...


class StudioWindow(Protocol):
    """A main window the run features install into."""

    registry: NodeRegistry
    settings: QSettings
    editor: RunEditor
    canvas: RunCanvas
    run_toolbar: QToolBar
    menus: dict[str, QMenu]
    docks: dict[str, QDockWidget]

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt's name)


class StudioShell(StudioWindow, Protocol):
    """The main window as every studio feature sees it (``ui/shell/composition.py``)."""

    actions: dict[str, QAction]
    palette: NodePalette
    problems: ProblemsPanel
    search_popup: NodeSearchPopup

    def show_message(self, text: str, timeout_ms: int = 10_000) -> None: ...

    def show_variant(self, name: str | None) -> None: ...

    def select_node(self, node_id: str) -> None: ...

    def add_dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget: ...

    def add_node_at(self, type_id: str, scene_pos: Any) -> str | None: ...

    def add_searched_node(self, type_id: str) -> str | None: ...

    def canvas_menu(self, view_pos: Any) -> QMenu: ...

    def popup_canvas_menu(self, view_pos: Any) -> None: ...

    def recent_files(self) -> list[str]: ...

    def new_document(self) -> None: ...

    def open_dialog(self) -> None: ...

    def open_path(self, path: Path, *, offer_restore: bool = True) -> bool: ...

    def ask_unsaved(self) -> bool: ...


class AfterSave(Protocol):
    """One step of the after-save chain (``MainWindow.after_save``), given the saved file."""

    def saved(self, path: Path) -> None: ...


class LastRun(Protocol):
    """The run controller as the canvas reads it: the last run's result."""

    last_result: RunResult | None


class CanvasRun(Protocol):
    """The run features as the canvas's menus and flags use them."""

    @property
    def controller(self) -> LastRun: ...

    def run(self, *, target: str | None = None, rerun: list[str] | None = None) -> bool: ...

    def select_node(self, node_id: str | None) -> None: ...


class NodeHelp(Protocol):
    """Help on a node (the shell's ``StudioUX``)."""

    def node_help(self, node_id: str | None = None) -> None: ...


def missing_members(obj: Any, protocol: type, prefix: str = "") -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (nested protocols checked too)."""
    hints = typing.get_type_hints(protocol)
    names = [*hints, *(n for cls in protocol.__mro__ if getattr(cls, "_is_protocol", False)
                       for n, v in vars(cls).items() if callable(v) and not n.startswith("_"))]
    missing = []
    for name in dict.fromkeys(names):
        if not hasattr(obj, name):
            missing.append(prefix + name)
            continue
        nested = hints.get(name)
        if isinstance(nested, type) and getattr(nested, "_is_protocol", False):
            missing.extend(missing_members(getattr(obj, name), nested, f"{prefix}{name}."))
    return missing


def require(obj: Any, protocol: type, what: str) -> None:
    """Raise TypeError naming every member of ``protocol`` that ``obj`` lacks."""
    missing = missing_members(obj, protocol)
    if missing:
        raise TypeError(f"{what} ({type(obj).__name__}) lacks what it needs: "
                        f"{', '.join(missing)}")
