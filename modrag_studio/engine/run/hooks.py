"""Lifecycle hooks around the executor: timing, progress, logging and canvas updates."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)


class RunHook:
    """Override any subset. Every method takes keyword arguments only and returns nothing.

    Each method also takes ``**kwargs``: later versions may pass more keywords, and a hook
    written today keeps working. Hooks run on the executor's thread; a GUI hook must hand
    events to the GUI thread.
    """

    def on_run_start(self, *, run_id: str, graph_name: str, inputs: dict[str, Any],
                     node_ids: list[str], **kwargs: Any) -> None: ...

    def on_node_start(self, *, run_id: str, node_id: str, type_id: str, iteration: int,
                      **kwargs: Any) -> None: ...

    def on_node_progress(self, *, run_id: str, node_id: str, fraction: float | None,
                         message: str, **kwargs: Any) -> None: ...

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None: ...

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict[str, Any],
                    outputs: dict[str, Any], **kwargs: Any) -> None: ...

    def on_run_end(self, *, run_id: str, trace: Any, **kwargs: Any) -> None: ...


class HookSet:
    """Calls every hook. A failing hook never breaks the run; each (hook, event) that raises
    is logged once with its traceback and listed in ``failures`` (the executor puts them in
    the trace as warnings). An event a hook does not override (``RunHook``'s no-op) is not
    called: a run pays per visit only for the hooks that listen."""

    def __init__(self, hooks: Iterable[RunHook] = ()) -> None:
        self.hooks = list(hooks)
        self.failures: list[str] = []
        self._failed: dict[tuple[int, str], int] = {}
        self._listeners: dict[str, list[tuple[RunHook, Callable[..., None]]]] = {}

    def listeners(self, event: str) -> list[tuple[RunHook, Callable[..., None]]]:
        """The hooks that handle ``event``, with their methods (looked up once per event)."""
        found = self._listeners.get(event)
        if found is None:
            base = getattr(RunHook, event, None)
            found = [(hook, method) for hook in self.hooks
                     if (method := getattr(hook, event, None)) is not None
                     and (base is None or getattr(type(hook), event, None) is not base)]
            self._listeners[event] = found
        return found

    def emit(self, event: str, **kwargs: Any) -> None:
        for hook, method in self.listeners(event):
            try:
                method(**kwargs)
            except Exception as exc:
                self._report(hook, event, exc)

    def _report(self, hook: RunHook, event: str, exc: Exception) -> None:
        slot = (id(hook), event)
        count = self._failed.get(slot, 0)
        self._failed[slot] = count + 1
        if count:
            return
        message = f"hook {type(hook).__name__}.{event} failed: {type(exc).__name__}: {exc}"
        self.failures.append(message)
        log.warning("%s (reported once per run; later failures of it are not)", message,
                    exc_info=exc)
