"""Private copies of values handed to nodes, so no node can change another node's data."""

from __future__ import annotations

import copy
from typing import Any

_IMMUTABLE = (str, bytes, int, float, bool, complex, type(None), frozenset)


def _readonly_array(array: Any, memo: dict[int, Any]) -> Any:
    view = array.view()
    view.flags.writeable = False
    memo[id(array)] = view
    return view


def isolate(value: Any) -> Any:
    """A deep copy of ``value``; numpy arrays become read-only views instead of copies.

    Instances of classes with ``shared_read_only = True`` (large index handles such as a BM25
    index) are passed by reference: copying them for every query would dominate a run.
    Nodes must treat such values as read-only.
    """
    return _copy(value, {})


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, _IMMUTABLE):
        return value
    if id(value) in memo:
        return memo[id(value)]
    cls = type(value)
    if getattr(cls, "shared_read_only", False):
        return value
    if cls.__module__ == "numpy" and cls.__name__ == "ndarray":
        return _readonly_array(value, memo)
    if cls is list:
        out: list[Any] = []
        memo[id(value)] = out
        out.extend(_copy(v, memo) for v in value)
        return out
    if cls is dict:
        out_d: dict[Any, Any] = {}
        memo[id(value)] = out_d
        for k, v in value.items():
            out_d[k] = _copy(v, memo)
        return out_d
    if cls is tuple:
        return tuple(_copy(v, memo) for v in value)
    if hasattr(value, "__pydantic_fields__"):
        return _copy_model(value, memo)
    return copy.deepcopy(value, memo)


def _copy_model(model: Any, memo: dict[int, Any]) -> Any:
    new = model.__class__.__new__(model.__class__)
    memo[id(model)] = new
    object.__setattr__(new, "__dict__", {k: _copy(v, memo) for k, v in model.__dict__.items()})
    object.__setattr__(new, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    object.__setattr__(new, "__pydantic_extra__", _copy(model.__pydantic_extra__, memo))
    object.__setattr__(new, "__pydantic_private__", _copy(model.__pydantic_private__, memo))
    return new
