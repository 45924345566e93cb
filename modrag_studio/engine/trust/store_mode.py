"""Store write modes for the current context: read-only (a served request: nodes that keep a
persistent store query it but never create, delete from or rewrite it), and whether a
synchronisation may delete a large share of a collection (``--allow-delete``)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from modrag_studio.engine.core.errors import NodeConfigError

_deletes_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "modrag_large_deletes_allowed", default=False)
_read_only: contextvars.ContextVar[bool] = contextvars.ContextVar("modrag_read_only_stores",
                                                                  default=False)


class StoreReadOnly(NodeConfigError):
    """A node would have to write a store while stores are read-only."""


@contextmanager
def scoped(var: contextvars.ContextVar[Any], value: Any) -> Iterator[None]:
    """``var`` is ``value`` in this thread/context until the block ends."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def read_only_stores():
    """Stores are read-only in this thread/context until the block ends."""
    return scoped(_read_only, True)


def allow_large_deletes(allowed: bool = True):
    """Let store synchronisations delete any share of a collection (``--allow-delete``)."""
    return scoped(_deletes_allowed, allowed)


def stores_read_only() -> bool:
    return _read_only.get()


def deletes_allowed() -> bool:
    return _deletes_allowed.get()


def refuse_write(what: str) -> None:
    """Raise StoreReadOnly saying what would have been written, when stores are read-only."""
    if _read_only.get():
        raise StoreReadOnly(
            f"{what}; the served index is read-only: requests never change it. Index at "
            "server start-up (inputs fixed by the operator) or with 'modrag run' beforehand")
