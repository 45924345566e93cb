"""Plain JSON data from run values (contracts, lists, numpy arrays)."""

from __future__ import annotations

from typing import Any


def to_jsonable(value: Any) -> Any:
    """Contracts through ``model_dump``; arrays as lists; anything unknown as its ``repr``."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)
