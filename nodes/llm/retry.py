"""Connection retries shared by the server backends (Ollama, OpenAI-compatible)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.node import CancelToken


def is_connect_error(exc: BaseException) -> bool:
    import httpx

    return isinstance(exc, ConnectionError | httpx.ConnectError | httpx.ConnectTimeout)


def retry_on_connect(call: Callable[[], Any], *, retries: int, backoff_s: float,
                     cancel: CancelToken | None,
                     unreachable: Callable[[int], Exception]) -> Any:
    """``call()``, retried ``retries`` times on connection failures with exponential backoff
    (first delay ``backoff_s``); then ``unreachable(attempts)`` is raised. A cancel during a
    wait raises ``RunCancelled``."""
    attempts = max(0, retries) + 1
    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:
            if not is_connect_error(exc):
                raise
            if attempt == attempts - 1:
                raise unreachable(attempts) from None
            delay = backoff_s * 2**attempt
            if cancel is None:
                time.sleep(delay)
            elif cancel.wait(delay):
                cancel.raise_if_cancelled()
    raise AssertionError("unreachable")
