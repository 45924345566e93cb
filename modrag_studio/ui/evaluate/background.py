"""What the evaluation dialogs share: one piece of long work at a time in a worker thread
with its cancel token (the work reports through Qt signals and never touches a widget),
and the default of a graph input."""

from __future__ import annotations

import threading
from collections.abc import Callable

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken


class BackgroundJob:
    """Runs ``work(cancel)`` in a daemon thread; one job at a time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.thread: threading.Thread | None = None
        self.cancel_token: CancelToken | None = None

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, work: Callable[[CancelToken], None]) -> CancelToken:
        self.cancel_token = cancel = CancelToken()
        self.thread = threading.Thread(target=work, args=(cancel,), name=self.name,
                                       daemon=True)
        self.thread.start()
        return cancel

    def cancel(self) -> None:
        if self.cancel_token is not None:
            self.cancel_token.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.busy


def input_default(doc: GraphDocument, input_name: str | None) -> str:
    """The default value of the graph input ``input_name`` ('' when it has none)."""
    for node in doc.nodes:
        if node.type == "graph.input" and node.params.get("name") == input_name:
            return str(node.params.get("default") or "")
    return ""
