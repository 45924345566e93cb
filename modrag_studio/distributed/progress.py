"""Progress of an indexing job, one event shape for the CLI and the studio.

A Ray job reports blocks and rows per pipeline stage (read, split, embed, write) from the
workers' counter; a local job reports the plan's nodes through executor hooks (rows = the
items a node produced). ``IndexProgress.line()`` is the CLI's progress line; the studio draws
one bar per stage from the same event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.run.hooks import RunHook

RAY_STAGES = ("read", "split", "embed", "write")


@dataclass
class StageState:
    """One stage: blocks and rows done; ``total_blocks`` / ``total_rows`` when known."""

    blocks: int = 0
    rows: int = 0
    total_blocks: int | None = None
    total_rows: int | None = None
    fraction: float | None = None  # a running local node's own estimate
    message: str = ""  # and its words ("embedded 512/1,004 chunks (3.1/s, 2 min left)")
    done: bool = False
    note: str = ""  # e.g. "cached"

    def text(self) -> str:
        if self.message and not self.done:
            return self.message
        rows = f"{self.rows} / {self.total_rows}" if self.total_rows else f"{self.rows}"
        blocks = f"{self.blocks} / {self.total_blocks}" if self.total_blocks else f"{self.blocks}"
        extra = f" ({self.note})" if self.note else ""
        return f"{blocks} blocks {rows} rows{extra}"

    def ratio(self) -> float | None:
        """Done so far as a fraction of the whole stage (None when unknown)."""
        if self.done:
            return 1.0
        if self.fraction is not None and not self.blocks:
            return self.fraction
        if self.total_rows:
            return min(1.0, self.rows / self.total_rows)
        if self.total_blocks:
            return min(1.0, self.blocks / self.total_blocks)
        return self.fraction


@dataclass
class IndexProgress:
    """Stages in pipeline order with their counts (one event, a snapshot)."""

    mode: str  # "local" or "ray"
    stages: dict[str, StageState] = field(default_factory=dict)

    def line(self) -> str:
        return " | ".join(f"{name} {stage.text()}" for name, stage in self.stages.items())

    def counts(self) -> dict[str, list[int]]:
        """stage -> [blocks, rows] (the summary's form)."""
        return {name: [s.blocks, s.rows] for name, s in self.stages.items()}

    @classmethod
    def from_ray(cls, counts: dict[str, list[int]], read_blocks: int,
                 with_store: bool, done: bool = False) -> IndexProgress:
        """A snapshot of the Ray workers' counter; the totals a stage can be measured by are
        the corpus's read blocks (read) and the chunks split so far (embed, write). Ray Data
        may merge blocks between stages, so split has no total until the end."""
        names = RAY_STAGES if with_store else RAY_STAGES[:2]
        progress = cls("ray")
        split_rows = counts.get("split", [0, 0])[1]
        for name in names:
            blocks, rows = counts.get(name, [0, 0])
            state = StageState(blocks, rows, done=done)
            if name == "read":
                state.total_blocks = read_blocks
            elif name != "split":
                state.total_rows = split_rows or None
            progress.stages[name] = state
        return progress


class LocalProgress(RunHook):
    """Executor hook turning node events of a local indexing run into IndexProgress events
    over the plan's nodes (``stages``: node ids in plan order)."""

    def __init__(self, stages: list[str], emit: Callable[[IndexProgress], None]) -> None:
        self.progress = IndexProgress("local", {name: StageState(total_blocks=1)
                                                for name in stages})
        self.emit = emit

    def on_node_start(self, *, run_id: str, node_id: str, **kwargs: Any) -> None:
        stage = self.progress.stages.get(node_id)
        if stage is not None:
            stage.note = "running"
            self.emit(self.progress)

    def on_node_progress(self, *, run_id: str, node_id: str, fraction: float | None,
                         message: str = "", **kwargs: Any) -> None:
        stage = self.progress.stages.get(node_id)
        if stage is not None and fraction is not None:
            stage.fraction, stage.message = fraction, message
            self.emit(self.progress)

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict, outputs: dict,
                    **kwargs: Any) -> None:
        stage = self.progress.stages.get(visit.node_id)
        if stage is None or visit.status not in ("done", "cached"):
            return
        stage.blocks, stage.rows = 1, max((_rows(v) for v in outputs.values()), default=0)
        stage.done, stage.note = True, "cached" if visit.cached else ""
        self.emit(self.progress)


def _rows(value: Any) -> int:
    """Items in a node output: a list's length, an index's chunks, a store's vectors."""
    if isinstance(value, list):
        return len(value)
    for name in ("n_chunks", "count"):
        number = getattr(value, name, None)
        if isinstance(number, int):
            return number
    return 0
