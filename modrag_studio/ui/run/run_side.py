"""The run features as the parts from ``ui/run`` up use them: a protocol here, so none of
them names the shell's ``RunFeatures`` (``ui/shell/run_features.py`` satisfies it)."""

from __future__ import annotations

from typing import Protocol

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.ui.inspection.inspector import Inspector
from modrag_studio.ui.inspection.overlays import OverlayManager
from modrag_studio.ui.run.bar import RunBar
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.mirror import RunMirror
from modrag_studio.ui.run.timeline import TimelineDock


class RunSide(Protocol):
    """One window's run features: the controller, the run bar, the run mirrored on the
    canvas, the inspector and timeline docks, "what will run" and Run itself."""

    @property
    def controller(self) -> RunController: ...

    @property
    def run_bar(self) -> RunBar: ...

    @property
    def mirror(self) -> RunMirror: ...

    @property
    def inspector(self) -> Inspector: ...

    @property
    def timeline(self) -> TimelineDock: ...

    @property
    def overlays(self) -> OverlayManager: ...

    def document(self) -> GraphDocument: ...

    def run(self, *, target: str | None = None, rerun: list[str] | None = None,
            start_from: str | None = None) -> bool: ...

    def select_node(self, node_id: str | None) -> None: ...
