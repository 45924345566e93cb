"""Readability of the automatic layout: crossings, wire length, wires over nodes, fit scale.

    .venv/bin/python bench/bench_layout.py [GRAPH.json ...]

For each sample graph (default: modular_rag and corrective_rag) prints the barycentre
layout used before graphviz (``layers``), the band layout alone (``bands``) and the current
one (``auto``: band layouts, graphviz ``dot`` candidates and the barycentre layout, the most
readable by ``layout_cost``), then ``routed``: the auto layout with the wires that would cross
a node routed around nodes, as the canvas draws them. Wires are the
curves the canvas draws between estimated port positions (``engine/layout/metrics.py``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.core.document import load  # noqa: E402
from modrag_studio.engine.layout.auto_layout import auto_layout  # noqa: E402
from modrag_studio.engine.layout.metrics import (  # noqa: E402
    estimated_wires,
    layout_metrics,
    measure,
)

DEFAULT = ["modular_rag", "corrective_rag"]


def main(argv: list[str]) -> int:
    registry = default_registry()
    paths = [Path(a) for a in argv] or [ROOT / "sample_graphs" / f"{n}.json" for n in DEFAULT]
    for path in paths:
        doc = load(path)
        for engine in ("layers", "bands", "auto"):
            started = time.perf_counter()
            positions = auto_layout(doc, registry, engine=engine)
            took = time.perf_counter() - started
            found = layout_metrics(doc, positions, registry)
            xs = [x for x, _ in positions.values()]
            ys = [y for _, y in positions.values()]
            print(f"{path.stem:16s} {engine:6s} {found.line()}   "
                  f"extent {max(xs) - min(xs):5.0f} x {max(ys) - min(ys):5.0f}   "
                  f"{took * 1000:4.0f} ms")
            if engine == "auto":  # as the canvas draws it: wires over nodes routed around
                started = time.perf_counter()
                routed = measure(*estimated_wires(doc, positions, registry, routed=True))
                took = time.perf_counter() - started
                print(f"{path.stem:16s} {'routed':6s} {routed.line()}   "
                      f"{'':22s}{took * 1000:4.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
