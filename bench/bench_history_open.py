"""The History panel over 1,000 recorded runs opens in well under a second.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_history_open.py [--runs 1000]

Records ``--runs`` runs of the tiny BM25 graph (a real run's trace, document and node values
in every run file) into a fresh history, then times, side by side in this process: listing
the graph's runs from the index (the panel's model), building the History panel and filling
it (what opening the dock costs), a filtered re-list (typing in the filter box), and loading
one run in full (what "Show on canvas" reads). The target is the panel under 1 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import from_json_dict
    from modrag_studio.engine.history.store import RunHistory
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.ui.history.panel import HistoryPanel
    from tests.server.mcp_helpers import BACKEND, DOCS, install
    from tests.tiny_rag import tiny_rag_graph

    app = QApplication.instance() or QApplication([])
    install()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        doc = from_json_dict(tiny_rag_graph(base, DOCS, backend=BACKEND, history=True))
        executor = Executor(default_registry(), cache=NodeCache(disk_dir=base / "cache"))
        questions = ["When is LP-07 serviced?", "When does the canteen open?",
                     "Where is PR-300?", "What does the press weigh?"]
        results = [executor.run(doc, {"question": q}) for q in questions]
        history = RunHistory(base / "history", max_runs=args.runs + 10)
        start = time.perf_counter()
        for i in range(args.runs):
            history.record("bench", doc, {"question": f"{questions[i % 4]} ({i})"},
                           results[i % 4], variant="tuned" if i % 3 == 0 else None)
        recording = (time.perf_counter() - start) / args.runs
        size, count = history.usage()
        fresh = RunHistory(base / "history")
        model = best_of(5, lambda: fresh.runs("bench"))

        def open_panel() -> HistoryPanel:
            panel = HistoryPanel(RunHistory(base / "history"))
            panel.set_graph("bench")
            panel.resize(1000, 400)
            panel.show()
            app.processEvents()
            return panel

        panels: list[HistoryPanel] = []
        opened = best_of(3, lambda: panels.append(open_panel()))
        panel = panels[-1]
        rows = panel.table.rowCount()
        def refilter() -> None:
            panel.text.setText("")  # unfiltered (not timed separately: the opening was)
            panel.text.setText("canteen")

        filtered = best_of(5, refilter)
        shown = panel.table.rowCount()
        run_id = fresh.runs("bench", limit=1)[0].run_id
        load = best_of(5, lambda: fresh.load(run_id))
        for each in panels:
            each.close()
    print(f"runs stored: {count} ({size / 1e6:.1f} MB on disk, {recording * 1000:.1f} ms to "
          f"record one)")
    print(f"list from the index (model): {model * 1000:8.1f} ms")
    print(f"History panel opened, {rows} rows: {opened * 1000:8.1f} ms  "
          f"(target < 1000 ms: {'ok' if opened < 1.0 else 'TOO SLOW'}; "
          f"{1.0 / opened:.0f}x under)")
    print(f"clear + filter 'canteen', {shown} rows: {filtered * 1000:8.1f} ms")
    print(f"load one run in full:          {load * 1000:8.1f} ms")
    return 0 if opened < 1.0 and rows == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
