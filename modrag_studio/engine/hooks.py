"""Lifecycle hooks around the executor: timing, progress, logging and canvas updates."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


class RunHook:
    """Override any subset. Every method takes keyword arguments only and returns nothing.

    Hooks run on the executor's thread; a GUI hook must hand events to the GUI thread.
    """

    def on_run_start(self, *, run_id: str, graph_name: str, inputs: dict[str, Any],
                     node_ids: list[str]) -> None: ...

    def on_node_start(self, *, run_id: str, node_id: str, type_id: str, iteration: int) -> None: ...

    def on_node_progress(self, *, run_id: str, node_id: str, fraction: float | None,
                         message: str) -> None: ...

    def on_node_stream(self, *, run_id: str, node_id: str, text: str) -> None: ...

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict[str, Any],
                    outputs: dict[str, Any]) -> None: ...

    def on_run_end(self, *, run_id: str, trace: Any) -> None: ...


class HookSet:
    """Calls every hook; a failing hook is logged and never breaks the run."""

    def __init__(self, hooks: Iterable[RunHook] = ()) -> None:
        self.hooks = list(hooks)

    def emit(self, event: str, **kwargs: Any) -> None:
        for hook in self.hooks:
            method = getattr(hook, event, None)
            if method is None:
                continue
            try:
                method(**kwargs)
            except Exception:
                log.exception("hook %s.%s failed", type(hook).__name__, event)
