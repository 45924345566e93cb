"""What the evaluation dialogs share: one piece of long work at a time in a worker thread
with its cancel token (the work reports through Qt signals and never touches a widget),
and the default of a graph input."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.node import CancelToken


class BackgroundJob:
    """Runs ``compute(cancel)`` in a daemon thread, one job at a time, and reports
    ``finished(result, "")`` or, when it raises, ``finished(None, "Type: message")`` (give a
    signal's ``emit``: the thread never touches a widget)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.thread: threading.Thread | None = None
        self.cancel_token: CancelToken | None = None

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, compute: Callable[[CancelToken], Any],
              finished: Callable[[Any, str], None]) -> CancelToken:
        self.cancel_token = cancel = CancelToken()

        def work() -> None:
            try:
                result = compute(cancel)
            except Exception as exc:  # told to the caller, never raised into Qt
                finished(None, f"{type(exc).__name__}: {exc}")
            else:
                finished(result, "")

        self.thread = threading.Thread(target=work, name=self.name, daemon=True)
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
    from modrag_studio.composition import default_registry

    port = graph_interface(doc, default_registry()).input_named(input_name)
    return port.default or "" if port is not None else ""


def corpus_input_name(doc: GraphDocument) -> str | None:
    """The graph input taking the corpus folder (None: the graph has none)."""
    from modrag_studio.composition import default_registry
    from modrag_studio.evaluation.runner import pick_inputs

    try:
        return pick_inputs(doc, None, None, default_registry())[1]
    except Exception:  # no query input: the corpus input alone is what matters here
        names = graph_interface(doc, default_registry()).input_names
        return next((n for n in names if n in ("corpus", "corpus_path")), None)
