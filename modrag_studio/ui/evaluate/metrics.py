"""Read an evaluation report and map its metrics onto the nodes they were computed at."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modrag_studio.evaluation.metric_registry import METRICS, PRIMARY

_FIRST = METRICS.get(PRIMARY).name  # the primary metric's values lead a caption


class ReportError(ValueError):
    """The file is not an evaluation report this studio can read."""


def _numeric(metrics: Any) -> dict[str, float]:
    if not isinstance(metrics, dict):
        return {}
    return {str(k): float(v) for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def _add(out: dict[str, dict[str, float]], endpoint: str, metrics: Any) -> None:
    node_id, _, port = str(endpoint).partition(".")
    values = _numeric(metrics)
    if not node_id or not values:
        return
    slot = out.setdefault(node_id, {})
    for name, value in values.items():
        slot[name if not port or port in ("chunks", "results", "value") else
             f"{port}: {name}"] = value


def node_metrics(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{node_id: {metric: value}}`` from a report.

    Accepts ``{"nodes": {"node.port": {...}}}`` (or keyed by node id), ``{"nodes": [{"node":
    "node.port", "metrics": {...}}]}``, and the same under ``"per_node"``/``"results"``.
    """
    out: dict[str, dict[str, float]] = {}
    block = next((report[k] for k in ("nodes", "per_node", "points", "results")
                  if k in report), None)
    if isinstance(block, dict):
        for endpoint, metrics in block.items():
            if isinstance(metrics, dict) and isinstance(metrics.get("metrics"), dict):
                metrics = metrics["metrics"]
            _add(out, endpoint, metrics)
    elif isinstance(block, list):
        for entry in block:
            if not isinstance(entry, dict):
                continue
            endpoint = entry.get("node") or entry.get("endpoint") or entry.get("at") or ""
            if not endpoint and entry.get("node_id"):
                endpoint = f"{entry['node_id']}.{entry.get('port', '')}".rstrip(".")
            _add(out, endpoint, entry.get("metrics", entry))
    return out


def load_report(path: str | Path) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Parse the report file: per-node metrics and the raw report."""
    path = Path(path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read the evaluation report: {exc}") from None
    if not isinstance(report, dict):
        raise ReportError(f"{path}: an evaluation report is a JSON object")
    metrics = node_metrics(report)
    if not metrics:
        raise ReportError(f"{path}: no per-node metrics found (expected a 'nodes' block "
                          "mapping 'node_id.port' to metric values)")
    return metrics, report


def caption(metrics: dict[str, float], limit: int = 2) -> str:
    """A short caption such as 'ndcg@10 0.652 · recall@100 0.912'."""
    preferred = sorted(metrics, key=lambda k: (not k.lower().startswith(_FIRST), k))
    return " · ".join(f"{k} {metrics[k]:.3f}" for k in preferred[:limit])
