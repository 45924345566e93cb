"""Launch time of the studio: process start to a shown, painted window (target below 3 s).

Runs the studio in fresh processes side by side: an empty window, and a 100-node graph saved
without a layout block (so the automatic layout runs too). Prints each phase and the ratio to
the 3 s target, and the process CPU time (a figure the load of a shared machine does not
inflate). Usage:
``.venv/bin/python bench/bench_ui_launch.py [--repeat 3] [--bytecode cached|none]``.

A graph without positions is painted with a quick layout and laid out by the full search
right after the first paint: ``laid out`` is when that search has placed the nodes.

``--bytecode cached`` (the default) measures what a user sees from the second launch on:
Python's compiled modules are kept (in a temporary ``PYTHONPYCACHEPREFIX``, written by the
warm-up launch), even where ``PYTHONDONTWRITEBYTECODE`` is set, as on the shared build
machines. ``none`` compiles every module at every launch, as such a machine does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 3.0
ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time
t0 = float(os.environ["LAUNCH_T0"])
marks = {"python_started": time.time() - t0}
from PySide6.QtWidgets import QApplication
from modrag_studio.composition import default_registry
app = QApplication(sys.argv[:1])
registry = default_registry()
marks["imports_and_registry"] = time.time() - t0
from modrag_studio.ui.shell.main_window import MainWindow
path = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
window = MainWindow(registry, path, offer_restore=False)
marks["window_built"] = time.time() - t0
window.show()
def shown():
    window.grab()  # force a full paint of the window and the canvas
    marks["shown"] = time.time() - t0
    marks["cpu"] = time.process_time()
    marks["nodes_on_canvas"] = len(window.canvas.node_ids())
    QTimer.singleShot(0, laid_out)
def laid_out():
    if getattr(window.editor, "layout_due", False):  # the search runs on a later turn
        QTimer.singleShot(5, laid_out)
        return
    marks["laid_out"] = time.time() - t0
    print(json.dumps(marks), flush=True)
    app.quit()
from PySide6.QtCore import QTimer
QTimer.singleShot(0, shown)
app.exec()
"""


def hundred_node_graph() -> dict:
    """20 branches of question -> upper -> upper -> concat(+ constant), joined, one output."""
    nodes = [{"id": "q", "type": "graph.input", "params": {"name": "question"}}]
    edges = []
    for b in range(20):
        nodes += [
            {"id": f"u{b}a", "type": "text.upper"},
            {"id": f"u{b}b", "type": "text.upper"},
            {"id": f"c{b}", "type": "debug.constant", "params": {"value": f"#{b}"}},
            {"id": f"j{b}", "type": "text.concat", "params": {"separator": " "}},
        ]
        edges += [
            {"from": "q.value", "to": f"u{b}a.text"},
            {"from": f"u{b}a.text", "to": f"u{b}b.text"},
            {"from": f"u{b}b.text", "to": f"j{b}.texts"},
            {"from": f"c{b}.value", "to": f"j{b}.texts"},
            {"from": f"j{b}.text", "to": "all.texts"},
        ]
    nodes += [{"id": "all", "type": "text.concat"}, {"id": "p", "type": "debug.passthrough"}]
    nodes += [{"id": "out", "type": "graph.output", "params": {"name": "answer"}}]
    edges += [{"from": "all.text", "to": "p.value"}, {"from": "p.value", "to": "out.value"}]
    # pad to exactly 100 nodes with a chain of pass-throughs after the output's source
    last = "p"
    while len(nodes) < 100:
        node_id = f"t{len(nodes)}"
        nodes.append({"id": node_id, "type": "debug.passthrough"})
        edges.append({"from": f"{last}.value", "to": f"{node_id}.value"})
        last = node_id
    return {"metadata": {"name": "bench-100"}, "nodes": nodes, "edges": edges}


def launch(graph: Path | None, cache: Path, pycache: Path | None = None,
           tree: tuple[Path, Path | None] = (ROOT, None)) -> dict:
    """One launch of the studio of ``tree`` (checkout, folder importing it or None)."""
    checkout, imports = tree
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
               MODRAG_CACHE_DIR=str(cache), LAUNCH_T0=repr(time.time()))
    if imports is not None:
        env["PYTHONPATH"] = str(imports)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(graph or "")], env=env, cwd=checkout,
                          capture_output=True, text=True, timeout=120, check=True)
    line = [x for x in proc.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached")
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout (an older commit) launched in turn with this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "bench-100.json"
        graph.write_text(json.dumps(hundred_node_graph()))
        pycache = Path(tmp) / "pycache" if args.bytecode == "cached" else None
        trees = {"": (ROOT, None)}
        if args.before is not None:
            imports = Path(tmp) / "before-imports"  # its packages under their import names
            imports.mkdir()
            (imports / "modrag_studio").symlink_to(args.before.resolve() / "modrag_studio")
            (imports / "modrag_nodes").symlink_to(args.before.resolve() / "nodes")
            trees["before: "] = (args.before.resolve(), imports)
        rows: dict[str, list[dict]] = {}
        for tree in trees.values():  # warm the OS file cache (and the bytecode)
            launch(graph, Path(tmp) / "cache", pycache, tree)
        for _ in range(args.repeat):  # the trees in turn: the machine's load hits both alike
            for label, tree in trees.items():
                rows.setdefault(f"{label}empty", []).append(
                    launch(None, Path(tmp) / "cache", pycache, tree))
                rows.setdefault(f"{label}100 nodes", []).append(
                    launch(graph, Path(tmp) / "cache", pycache, tree))
    print(f"launch to shown window, {args.repeat} runs each, best and median (target "
          f"{TARGET_S:.1f} s; bytecode {args.bytecode})")
    for name, runs in rows.items():
        shown = sorted(r["shown"] for r in runs)
        median = shown[len(shown) // 2]
        phases = min(runs, key=lambda r: r["shown"])
        print(f"  {name:17s}: best {shown[0]:.2f} s, median {median:.2f} s, "
              f"ratio to target {median / TARGET_S:.2f}  (python {phases['python_started']:.2f}"
              f", imports+registry {phases['imports_and_registry']:.2f}, window "
              f"{phases['window_built']:.2f}, shown {phases['shown']:.2f}, laid out "
              f"{phases.get('laid_out', phases['shown']):.2f}; "
              f"{phases['nodes_on_canvas']} nodes); CPU time of the process "
              f"{min(r['cpu'] for r in runs):.2f} s")
    def median(name: str) -> float:
        return sorted(r["shown"] for r in rows[name])[args.repeat // 2]

    print(f"  100-node graph / empty window: {median('100 nodes') / median('empty'):.2f}x")
    if args.before is not None:
        for name in ("empty", "100 nodes"):
            print(f"  {name}, this tree / before (median): "
                  f"{median(name) / median('before: ' + name):.2f}x")
    print(f"  load average while measuring: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores (wall times grow with the load; CPU time does not)")


if __name__ == "__main__":
    main()
