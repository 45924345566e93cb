"""The trace of a run: one record per node visit, exportable as JSON."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from modrag_studio.engine.core.formatting import short
from modrag_studio.engine.core.ports import type_name

#: The one state vocabulary: what a node visit is in the trace, and what the studio shows on
#: a node (``NODE_STATES`` adds "idle", a node no run has reached); the executor's own
#: bookkeeping (``run_state.NodeStatus``) uses the subset it needs plus "pending".
VisitStatus = Literal["queued", "running", "done", "cached", "skipped", "failed", "cancelled",
                      "bypassed", "pinned"]
VISIT_STATES: tuple[str, ...] = get_args(VisitStatus)
NODE_STATES: tuple[str, ...] = ("idle", *VISIT_STATES)
RunStatus = Literal["ok", "failed", "cancelled", "invalid"]


class ErrorInfo(BaseModel):
    type: str
    message: str
    traceback: str = ""


class ValueSummary(BaseModel):
    """A short description of a value on a port: its type, size and first items."""

    type: str
    count: int | None = None
    preview: list[str] = Field(default_factory=list)


class NodeVisit(BaseModel):
    node_id: str
    type_id: str
    iteration: int = 0
    status: VisitStatus = "queued"
    started_at: float | None = None
    duration_s: float = 0.0
    cached: bool = False
    cache_reason: str = ""
    cache_key: str = ""
    inputs: dict[str, ValueSummary] = Field(default_factory=dict)
    outputs: dict[str, ValueSummary] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None
    skip_reason: str = ""


class Trace(BaseModel):
    run_id: str
    graph_name: str
    status: RunStatus = "ok"
    started_at: float = 0.0
    duration_s: float = 0.0
    inputs: dict[str, Any] = Field(default_factory=dict)
    visits: list[NodeVisit] = Field(default_factory=list)
    problems: list[dict[str, Any]] = Field(default_factory=list)

    def visits_of(self, node_id: str) -> list[NodeVisit]:
        return [v for v in self.visits if v.node_id == node_id]

    def last_visit(self, node_id: str) -> NodeVisit | None:
        visits = self.visits_of(node_id)
        return visits[-1] if visits else None

    def ran(self) -> list[str]:
        """Node ids that executed (not from cache) at least once, in order."""
        return _unique(v.node_id for v in self.visits if v.status == "done")

    def from_cache(self) -> list[str]:
        return _unique(v.node_id for v in self.visits if v.status == "cached")

    def with_status(self, status: VisitStatus) -> list[str]:
        return _unique(v.node_id for v in self.visits if v.status == status)

    def failures(self) -> dict[str, str]:
        """Node id -> the error of its last failed visit, in run order."""
        return {v.node_id: v.error.message for v in self.visits if v.error is not None}

    def failure_summary(self, otherwise: str = "") -> str:
        """Every failed visit in one line (``node 'a' (type) failed: message; ...``), or
        ``otherwise`` when none failed."""
        failed = [f"node '{v.node_id}' ({v.type_id}) failed: {v.error.message}"
                  for v in self.visits if v.error is not None]
        return "; ".join(failed) or otherwise

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False, default=str)


def _unique(ids) -> list[str]:
    seen: list[str] = []
    for node_id in ids:
        if node_id not in seen:
            seen.append(node_id)
    return seen


def summarize(value: Any, preview_items: int = 3) -> ValueSummary:
    """Type, length and the first few previews of ``value`` (never the whole value)."""
    if isinstance(value, list):
        item_type = type_name(type(value[0])) if value else "Any"
        return ValueSummary(
            type=f"list[{item_type}]",
            count=len(value),
            preview=[_preview(v) for v in value[:preview_items]],
        )
    if isinstance(value, dict):
        return ValueSummary(
            type="dict", count=len(value), preview=[_short(str(k)) for k in list(value)[:5]]
        )
    shape = getattr(value, "shape", None)
    if shape is not None:
        return ValueSummary(type=f"{type(value).__name__}{tuple(shape)}", count=len(value))
    count = getattr(value, "count", None)
    return ValueSummary(
        type=type(value).__name__,
        count=count if isinstance(count, int) else None,
        preview=[_preview(value)],
    )


def _preview(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):  # never repr every item of a large container
        return _short(_container(value))
    method = getattr(value, "preview", None)
    if callable(method):
        try:
            return _short(str(method()))
        except Exception:  # a preview must never break a run
            pass
    return _short(repr(value) if not isinstance(value, str) else value)


def _container(value: list[Any] | tuple[Any, ...] | dict[Any, Any], shown: int = 3) -> str:
    """Like ``repr`` for the first ``shown`` items, then how many there are in all."""
    if isinstance(value, dict):
        items = [f"{k!r}: {_item(v)}" for k, v in list(value.items())[:shown]]
        opening, closing = "{", "}"
    else:
        items = [_item(v) for v in value[:shown]]
        opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
    more = f", … {len(value)} items" if len(value) > shown else ""
    return f"{opening}{', '.join(items)}{more}{closing}"


def _item(value: Any) -> str:
    if isinstance(value, (str, bytes)):
        return repr(value[:200])
    if isinstance(value, (list, tuple, dict)):
        return _container(value, shown=2)
    return _preview(value) if callable(getattr(value, "preview", None)) else repr(value)


_short = partial(short, limit=160)
