"""A studio window with a small RAG graph on a scripted model, for the evidence debugger tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from modrag_nodes import register_builtin_nodes
from modrag_nodes.llm.client import register_backend, unregister_backend
from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.ui.shell.main_window import MainWindow
from tests.generation.conftest import ScriptedBackend


@contextmanager
def evidence_window(qtbot: Any, tmp_path: Path, monkeypatch: Any, graph: dict,
                    reply: Callable[[list[ChatMessage]], str], *, node_types: tuple = (),
                    size: tuple[int, int] = (1400, 900)) -> Iterator[MainWindow]:
    """A shown window editing ``graph``; its ``llm.model`` backend ``test-fake`` answers with
    ``reply``; ``node_types`` are registered besides the built-in ones."""
    backend = ScriptedBackend()
    backend.respond_with(reply)
    register_backend("test-fake", lambda: backend)
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    for node_type in node_types:
        registry.register(node_type)
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(registry, settings=settings, offer_restore=False)
    win.editor.reset(from_json_dict(graph))
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    try:
        yield win
    finally:
        win.features.run.controller.shutdown()
        unregister_backend("test-fake")


def run_and_wait(qtbot: Any, win: MainWindow, inputs: dict[str, str]) -> None:
    """Run the window's graph with ``inputs`` and wait for the result."""
    controller = win.features.run.controller
    assert controller.run(win.features.run.document(), inputs)
    qtbot.waitUntil(lambda: not controller.busy and controller.last_result is not None,
                    timeout=20_000)
