"""Subgraphs in the studio: Edit > Make Subgraph / Expand Subgraph (undoable), Open Subgraph
(its inner nodes with the last run's overlays), component files (the palette's Components,
Save as Component…, Update from Component… with what changed, Detach), and the collapsed
node's state rolled up from its inner nodes during a run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from modrag_studio.engine.compose import components
from modrag_studio.engine.compose.diff import changes
from modrag_studio.engine.compose.inline import SubgraphError
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.paths import data_home
from modrag_studio.engine.edit import subgraphs
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.ui.subgraphs.view import SubgraphRollup, SubgraphWindow

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.run_side import RunSide

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "sample_graphs" / "components"
PALETTE_PREFIX = "component"
#: asks whether to take a component's new version: (parent, node id, lines) -> yes
Ask = Callable[[QWidget, str, str, list[str]], bool]


def user_components() -> Path:
    """The user's components folder (``<data home>/components``)."""
    return data_home() / "components"


def ask_title(parent: QWidget) -> str | None:
    """The title of a new subgraph (None: cancelled)."""
    title, ok = QInputDialog.getText(parent, "Make subgraph", "Subgraph title:",
                                     text="Subgraph")
    return (title.strip() or "Subgraph") if ok else None


def slug(title: str) -> str:
    """A node id made from a title: ``Hybrid retrieval`` -> ``hybrid_retrieval``."""
    text = re.sub(r"[^A-Za-z0-9_]+", "_", title.strip().lower()).strip("_")[:48]
    return text if re.match(r"[A-Za-z_]", text or "0") else f"sub_{text}".rstrip("_")


def ask_update(parent: QWidget, node_id: str, path: str, lines: list[str]) -> bool:
    box = QMessageBox(QMessageBox.Icon.Question, "Component changed",
                      f"The component file of subgraph '{node_id}' changed:\n{path}\n\n"
                      "Update the instance to the new version?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, parent)
    box.setDetailedText("\n".join(lines) or "no change in what runs")
    box.setInformativeText("\n".join(lines[:8]) + ("\n…" if len(lines) > 8 else ""))
    return box.exec() == QMessageBox.StandardButton.Yes


class SubgraphActions(QObject):
    """The subgraph commands of one window (see the module docstring)."""

    def __init__(self, window: StudioShell, run: RunSide, *,
                 folders: list[Path] | None = None, ask: Ask = ask_update,
                 name: Callable[[QWidget], str | None] = ask_title) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.window = window
        self.run = run
        self.editor: GraphEditor = window.editor  # type: ignore[assignment]
        self.canvas = window.canvas
        self.folders = folders if folders is not None else [user_components(), SHIPPED]
        self.ask = ask
        self.name = name
        self.opened: list[SubgraphWindow] = []
        self.rollup = SubgraphRollup(self.canvas, run.overlays, self.editor.document)
        c = run.controller
        c.run_started.connect(self.rollup.run_started)
        c.node_started.connect(self.rollup.node_started)
        c.node_finished.connect(self.rollup.node_finished)
        c.node_finished.connect(self._to_opened)
        self._actions()
        self.refresh_palette()
        self.editor.subscribe(self._on_change)

    # menus ------------------------------------------------------------------------------
    def _actions(self) -> None:
        menu = self.window.menus["Edit"]
        menu.addSeparator()
        for key, text, shortcut, slot in (
                ("make_subgraph", "Make &Subgraph", "Ctrl+Alt+G", self.make_selected),
                ("expand_subgraph", "E&xpand Subgraph", "Ctrl+Alt+E", self.expand_selected),
                ("open_subgraph", "&Open Subgraph", "Ctrl+Alt+O", self.open_selected),
                ("save_component", "Save Subgraph as &Component…", None,
                 self.save_selected_as_component),
                ("update_component", "&Update Subgraph from Component…", None,
                 self.update_selected),
                ("detach_component", "&Detach Subgraph from Component", None,
                 self.detach_selected)):
            action = QAction(text, self.window)  # type: ignore[call-overload]
            if shortcut:
                action.setShortcut(QKeySequence(shortcut))
            action.triggered.connect(lambda _c=False, s=slot: s())
            menu.addAction(action)
            self.window.actions[key] = action

    def menu_items(self, node_id: str) -> list[tuple[str, Callable[[], object]]]:
        """The node menu's subgraph entries for ``node_id``."""
        spec = self._spec(node_id)
        if spec is None or spec.subgraph is None:
            return [("Make Subgraph", self.make_selected)] if len(self._selected()) > 1 else []
        items: list[tuple[str, Callable[[], object]]] = [
            ("Open Subgraph", lambda: self.open(node_id)),
            ("Expand Subgraph", lambda: self.expand(node_id))]
        if spec.subgraph.link is not None:
            items += [("Update from Component…", lambda: self.offer_update(node_id, True)),
                      ("Detach from Component", lambda: self.detach(node_id))]
        else:
            items.append(("Save as Component…", lambda: self.save_as_component(node_id)))
        return items

    def _spec(self, node_id: str):
        try:
            return self.editor.document().node(node_id)
        except KeyError:
            return None

    def _selected(self) -> list[str]:
        return [n for n in self.canvas.selected_node_ids() if not self.canvas.is_reroute(n)]

    def _selected_subgraph(self) -> str | None:
        found = [n for n in self._selected() if (s := self._spec(n)) is not None
                 and s.subgraph is not None]
        if len(found) != 1:
            self.window.show_message("Select one subgraph node")
            return None
        return found[0]

    # commands ---------------------------------------------------------------------------
    def make_selected(self, title: str | None = None) -> str | None:
        ids = self._selected()
        if len(ids) < 1:
            self.window.show_message("Select the nodes to make a subgraph of")
            return None
        if title is None:
            title = self.name(self.window)  # type: ignore[arg-type]
            if title is None:
                return None
        try:
            sub_id = subgraphs.make_subgraph(
                self.editor, ids, sub_id=subgraphs.new_subgraph_id(self.editor, slug(title)),
                title=title)
        except SubgraphError as exc:
            self.window.show_message(str(exc))
            return None
        self.canvas.select_nodes([sub_id])
        self.window.show_message(f"Made subgraph '{sub_id}' of {len(ids)} nodes "
                                 "(Expand Subgraph puts them back)")
        return sub_id

    def expand_selected(self) -> list[str]:
        sub_id = self._selected_subgraph()
        return self.expand(sub_id) if sub_id else []

    def expand(self, sub_id: str) -> list[str]:
        spec = self._spec(sub_id)
        inner = [n.id for n in spec.subgraph.graph.nodes] if spec and spec.subgraph else []
        try:
            ids = subgraphs.expand_subgraph(self.editor, sub_id)
        except SubgraphError as exc:
            self.window.show_message(str(exc))
            return []
        # the last run knew them as ``sub_id/inner``: they keep their "done", "from cache"
        self.run.mirror.show_moved({f"{sub_id}/{old}": new
                                    for old, new in zip(inner, ids, strict=False)})
        self.canvas.select_nodes(ids)
        return ids

    def open_selected(self) -> SubgraphWindow | None:
        sub_id = self._selected_subgraph()
        return self.open(sub_id) if sub_id else None

    def open(self, sub_id: str) -> SubgraphWindow | None:
        spec = self._spec(sub_id)
        if spec is None or spec.subgraph is None:
            return None
        view = SubgraphWindow(self.window, spec, self.window.registry,  # type: ignore[arg-type]
                              self.run.controller.last_result)
        self.opened.append(view)
        view.finished.connect(lambda _r, v=view: self.opened.remove(v))
        view.show()
        return view

    def _to_opened(self, visit, outputs) -> None:
        for view in self.opened:
            view.node_finished(visit, outputs)

    def save_selected_as_component(self) -> None:
        sub_id = self._selected_subgraph()
        if sub_id:
            self.save_as_component(sub_id)

    def save_as_component(self, sub_id: str, path: Path | None = None) -> None:
        if path is None:
            folder = user_components()
            folder.mkdir(parents=True, exist_ok=True)
            chosen, _ = QFileDialog.getSaveFileName(
                self.window, "Save as component",  # type: ignore[arg-type]
                str(folder / f"{sub_id}{components.COMPONENT_SUFFIX}"),
                f"Components (*{components.COMPONENT_SUFFIX})")
            if not chosen:
                return
            path = Path(chosen)
        if not path.name.endswith(components.COMPONENT_SUFFIX):
            path = path.with_name(path.name.removesuffix(".json") + components.COMPONENT_SUFFIX)
        try:
            subgraphs.save_as_component(self.editor, sub_id, path)
        except (ModragError, OSError, ValueError) as exc:
            self.window.show_message(f"Cannot save the component: {exc}")
            return
        self.refresh_palette()
        self.window.show_message(f"Saved {path.name}; '{sub_id}' is linked to it")

    def update_selected(self) -> None:
        sub_id = self._selected_subgraph()
        if sub_id:
            self.offer_update(sub_id, asked=True)

    def offer_update(self, sub_id: str, asked: bool = False) -> bool:
        """Show what changed in the component file and take it when the user agrees."""
        spec = self._spec(sub_id)
        if spec is None or spec.subgraph is None or spec.subgraph.link is None:
            return False
        folder = self.editor.path.parent if self.editor.path else None
        path = components.link_path(spec.subgraph.link, folder)
        try:
            new = components.load_component(path) if path is not None else None
        except ModragError as exc:
            self.window.show_message(str(exc))
            return False
        if new is None or components.content_hash(new) == spec.subgraph.link.sha256:
            if asked:
                self.window.show_message(f"Subgraph '{sub_id}' has its component's version")
            return False
        if not self.ask(self.window, sub_id, str(path),  # type: ignore[arg-type]
                        changes(spec.subgraph.graph, new)):
            return False
        subgraphs.update_from_component(self.editor, sub_id)
        self.window.show_message(f"Subgraph '{sub_id}' updated from {path.name}")
        return True

    def detach_selected(self) -> None:
        sub_id = self._selected_subgraph()
        if sub_id:
            self.detach(sub_id)

    def detach(self, sub_id: str) -> None:
        try:
            subgraphs.detach(self.editor, sub_id)
        except (SubgraphError, ValueError) as exc:
            self.window.show_message(str(exc))

    # palette and opened graphs ---------------------------------------------------------
    def add_at(self, path: str, pos: tuple[float, float]) -> str:
        """The palette's adder for ``component:<path>`` entries."""
        return subgraphs.add_component(self.editor, Path(path), pos)

    def refresh_palette(self) -> None:
        entries = []
        for info in components.find_components(self.folders):
            tip = (f"{info.path}\n{info.error}" if info.error else
                   f"{info.description}\ninputs: {', '.join(info.inputs) or 'none'}\n"
                   f"outputs: {', '.join(info.outputs) or 'none'}\n{info.path}")
            if not info.error:
                entries.append((info.name, f"{PALETTE_PREFIX}:{info.path}", tip))
        self.window.palette.set_extra("Components", entries)

    def _on_change(self, change: Change) -> None:
        if change.kind != "reset":
            return
        for spec in change.new.nodes:  # a graph opened: offer newer component versions
            if spec.subgraph is not None and spec.subgraph.link is not None:
                self.offer_update(spec.id)
