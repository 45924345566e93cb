"""Private copies of values handed to nodes, so no node can change another node's data."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

#: Exact types returned as they are without a call (the common leaves of a value).
_LEAVES = frozenset({str, bytes, int, float, bool, complex, type(None), frozenset})
_IMMUTABLE = tuple(_LEAVES)  # the same, subclasses included (``issubclass``)

Copier = Callable[[Any, dict[int, Any]], Any]


def isolate(value: Any) -> Any:
    """A deep copy of ``value``; numpy arrays become read-only views instead of copies.

    Instances of classes with ``shared_read_only = True`` (large index handles such as a BM25
    index) are passed by reference: copying them for every query would dominate a run.
    Nodes must treat such values as read-only.
    """
    return _copy(value, {})


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    cls = type(value)
    if cls in _LEAVES:
        return value
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS.setdefault(cls, _copier_for(cls))
    return copier(value, memo)


def _copier_for(cls: type) -> Copier:
    """How to copy instances of ``cls`` (decided once per class)."""
    if issubclass(cls, _IMMUTABLE) or getattr(cls, "shared_read_only", False):
        return _same
    if cls.__module__ == "numpy" and cls.__name__ == "ndarray":
        return _memoized(_readonly_array)
    if cls is list:
        return _memoized(_copy_list)
    if cls is dict:
        return _memoized(_copy_dict)
    if cls is tuple:
        return _copy_tuple
    if hasattr(cls, "__pydantic_fields__"):
        return _memoized(_copy_model)
    return copy.deepcopy


_COPIERS: dict[type, Copier] = {}


def _same(value: Any, memo: dict[int, Any]) -> Any:
    return value


def _memoized(copier: Copier) -> Copier:
    def copy_once(value: Any, memo: dict[int, Any]) -> Any:
        done = memo.get(id(value))
        return done if done is not None else copier(value, memo)

    return copy_once


def _readonly_array(array: Any, memo: dict[int, Any]) -> Any:
    view = array.view()
    view.flags.writeable = False
    memo[id(array)] = view
    return view


def _copy_list(value: list[Any], memo: dict[int, Any]) -> list[Any]:
    out: list[Any] = []
    memo[id(value)] = out
    leaves = _LEAVES
    out.extend(v if type(v) in leaves else _copy(v, memo) for v in value)
    return out


def _copy_dict(value: dict[Any, Any], memo: dict[int, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    memo[id(value)] = out
    leaves = _LEAVES
    for k, v in value.items():
        out[k] = v if type(v) in leaves else _copy(v, memo)
    return out


def _copy_tuple(value: tuple[Any, ...], memo: dict[int, Any]) -> tuple[Any, ...]:
    return tuple(_copy(v, memo) for v in value)


def _copy_model(model: Any, memo: dict[int, Any]) -> Any:
    new = model.__class__.__new__(model.__class__)
    memo[id(model)] = new
    leaves = _LEAVES
    fields = {k: v if type(v) in leaves else _copy(v, memo) for k, v in model.__dict__.items()}
    extra, private = model.__pydantic_extra__, model.__pydantic_private__
    object.__setattr__(new, "__dict__", fields)
    object.__setattr__(new, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    object.__setattr__(new, "__pydantic_extra__", None if extra is None else _copy(extra, memo))
    object.__setattr__(new, "__pydantic_private__",
                       None if private is None else _copy(private, memo))
    return new
