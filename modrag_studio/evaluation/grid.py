"""A parameter grid: every combination evaluated on one cache, a table and a plot per metric.

Axes are ordered upstream first (by the graph's topological order), so the most expensive
changes (chunk size, say) vary slowest and each distinct upstream is indexed once; the cells
of one upstream re-use it from the cache and run only the nodes after the changed ones.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.edit.variants import VariantError, apply_variant
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.metric_registry import METRICS
from modrag_studio.evaluation.runner import evaluate_graph

#: The metrics of the grid's table and plots: the registry's headline columns.
PLOTTED = tuple(METRICS.headline())


@dataclass(frozen=True)
class Axis:
    """One param of one node and its values; ``param`` None means the node's type."""

    node_id: str
    param: str | None
    values: tuple[Any, ...]

    @property
    def name(self) -> str:
        return f"{self.node_id}.{self.param}" if self.param else self.node_id


@dataclass
class GridCell:
    settings: dict[str, Any]
    metrics: dict[str, dict[str, float]]
    seconds: float
    failures: int
    scratch_seconds: float | None = None

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.settings.items())


@dataclass
class GridResult:
    axes: list[Axis]
    cells: list[GridCell] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def scratch_seconds(self) -> float | None:
        times = [c.scratch_seconds for c in self.cells]
        return None if any(t is None for t in times) else sum(times)  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        return {"axes": {a.name: list(a.values) for a in self.axes},
                "seconds": round(self.seconds, 2),
                "scratch_seconds": None if self.scratch_seconds is None
                else round(self.scratch_seconds, 2),
                "cells": [{"settings": c.settings, "metrics": c.metrics,
                           "seconds": round(c.seconds, 2), "failures": c.failures,
                           "scratch_seconds": c.scratch_seconds} for c in self.cells]}


def parse_grid(specs: list[str], doc: GraphDocument, parse_value: Callable[[str], Any]
               ) -> list[Axis]:
    """``node.param=v1,v2`` (or ``node=type.a,type.b``: node types) to axes, upstream first."""
    axes = []
    for spec in specs:
        target, eq, raw = spec.partition("=")
        node_id, dot, param = target.partition(".")
        if not eq or (dot and not param) or not raw:
            raise ValueError(f"--grid '{spec}': expected node.param=v1,v2,... or "
                             "node=type.a,type.b")
        if node_id not in doc.node_ids():
            raise ValueError(f"--grid '{spec}': no node '{node_id}' in the graph")
        values = tuple(parse_value(v.strip()) if param else v.strip() for v in raw.split(","))
        axes.append(Axis(node_id, param or None, values))
    order = {node_id: i for i, node_id in enumerate(Topology.of(doc).order()[0])}
    return sorted(axes, key=lambda a: order.get(a.node_id, 0))


def cell_graph(doc: GraphDocument, axes: list[Axis], values: tuple[Any, ...]) -> GraphDocument:
    params: dict[str, dict[str, Any]] = {}
    swap: dict[str, str] = {}
    for axis, value in zip(axes, values, strict=True):
        if axis.param is None:
            swap[axis.node_id] = str(value)
        else:
            params.setdefault(axis.node_id, {})[axis.param] = value
    name = "_".join(f"{a.param or a.node_id}{v}" for a, v in zip(axes, values, strict=True))
    safe = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)[:60] or "cell"
    try:
        variant = VariantSpec(name=f"g_{safe}", params=params, swap=swap)
        return apply_variant(doc, variant, default_registry())
    except VariantError as exc:
        raise ValueError(f"--grid: {exc}") from None


def run_grid(doc: GraphDocument, dataset: BeirDataset, outputs: list[str], axes: list[Axis], *,
             executor: Executor, from_scratch: bool = False,
             on_cell: Callable[[int, int, GridCell], None] | None = None,
             **eval_kwargs: Any) -> GridResult:
    """Evaluate every combination; ``from_scratch`` also times each cell on an empty cache
    and an empty work folder (what the grid would cost without sharing)."""
    result = GridResult(axes)
    combos = list(itertools.product(*(a.values for a in axes)))
    started = time.perf_counter()
    for index, values in enumerate(combos):
        graph = cell_graph(doc, axes, values)
        t0 = time.perf_counter()
        report = evaluate_graph(graph, dataset, outputs, executor=executor, **eval_kwargs)
        cell = GridCell({a.name: v for a, v in zip(axes, values, strict=True)},
                        {spec: {k: round(v, 4) for k, v in m.items()}
                         for spec, m in report.outputs.items()},
                        time.perf_counter() - t0, len(report.failures))
        result.cells.append(cell)
        if on_cell is not None:
            on_cell(index + 1, len(combos), cell)
    result.seconds = time.perf_counter() - started
    if from_scratch:
        for cell, values in zip(result.cells, combos, strict=True):
            with tempfile.TemporaryDirectory(prefix="modrag-grid-scratch-") as scratch:
                fresh = Executor(executor.registry, NodeCache(disk_dir=Path(scratch) / "c"),
                                 work_dir=Path(scratch) / "w")
                t0 = time.perf_counter()
                evaluate_graph(cell_graph(doc, axes, values), dataset, outputs,
                               executor=fresh, **eval_kwargs)
                cell.scratch_seconds = round(time.perf_counter() - t0, 2)
    return result


def format_grid(result: GridResult, output: str, metrics: tuple[str, ...] = PLOTTED) -> str:
    names = [a.name for a in result.axes]
    width = max(12, *(len(n) + 2 for n in names))
    lines = ["".join(f"{n:<{width}}" for n in names)
             + "".join(f"{m:>11}" for m in metrics) + f"{'seconds':>9}"]
    for cell in result.cells:
        values = cell.metrics.get(output, {})
        lines.append("".join(f"{str(cell.settings[n]):<{width}}" for n in names)
                     + "".join(f"{values.get(m, 0.0):>11.4f}" for m in metrics)
                     + f"{cell.seconds:>9.1f}")
    lines.append(f"grid: {len(result.cells)} cells in {result.seconds:.1f} s on one cache")
    if result.scratch_seconds is not None:
        saved = 1 - result.seconds / result.scratch_seconds if result.scratch_seconds else 0
        lines.append(f"the same cells from scratch: {result.scratch_seconds:.1f} s "
                     f"(the shared cache saves {saved:.0%})")
    return "\n".join(lines)


def plot_grid(result: GridResult, output: str, folder: Path,
              metrics: tuple[str, ...] = PLOTTED) -> list[Path]:
    """One PNG per metric: the first axis on x, one line per combination of the others.

    Returns [] when matplotlib is not installed (``pip install .[plots]``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    first, rest = result.axes[0], result.axes[1:]
    series: dict[str, list[tuple[int, float]]] = {}
    written = []
    for metric in metrics:
        series.clear()
        for cell in result.cells:
            key = ", ".join(f"{a.name}={cell.settings[a.name]}" for a in rest) or metric
            x = first.values.index(cell.settings[first.name])
            series.setdefault(key, []).append((x, cell.metrics.get(output, {}).get(metric, 0)))
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        for key, points in series.items():
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=key)
        ax.set_xticks(range(len(first.values)), [str(v) for v in first.values])
        ax.set_xlabel(first.name)
        ax.set_ylabel(metric)
        ax.set_title(f"{metric} of {output}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = folder / f"{metric.replace('@', '_at_')}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
