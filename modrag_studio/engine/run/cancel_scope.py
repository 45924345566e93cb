"""The cancel token of the run in this context, for work outside a node's ``run`` (a node's
``fingerprint`` walking a folder) that has no ``NodeContext`` to ask."""

from __future__ import annotations

import contextvars
from typing import Any

from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.trust.store_mode import scoped

_token: contextvars.ContextVar[Any] = contextvars.ContextVar("modrag_cancel_token",
                                                             default=None)


def cancel_scope(token: Any):
    """Work in this block may check ``token`` (a CancelToken) through ``check_cancelled``."""
    return scoped(_token, token)


def is_cancelled() -> bool:
    token = _token.get()
    return bool(token is not None and token.cancelled)


def check_cancelled() -> None:
    """Raise RunCancelled when the run in this context was cancelled."""
    if is_cancelled():
        raise RunCancelled("run cancelled")
