"""Open each sample graph in the studio, run it, and save PNGs of the window.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshots.py [GRAPH.json ...]
        [--out docs/screenshots] [--input name=value ...] [--timeout SECONDS]
        [--model SmolLM2-135M-Instruct]

Graph inputs without a default get demo values (the bundled sample corpus and a question).
Every embedded ``llm.model`` node runs ``--model`` (default: the small, fast
SmolLM2-135M-Instruct, not the samples' slower default).
For each graph: ``<name>.png`` (window after the run, output node inspected),
``<name>-inspector.png`` (a ranked or chunk output in the inspector) and
``<name>-presentation.png`` (presentation mode on the last step).

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshots.py --studio

saves the studio's own pictures instead, in a 1280x800 window: ``studio-start.png`` (start
page), ``modular_rag-fit.png`` (modular_rag at fit), ``studio-progress.png`` (basic_rag
while a node runs, with its bar and elapsed time), ``studio-chunk-map.png`` (the splitter's
chunk map) and ``studio-presentation.png`` (presentation mode with the graph's description),
and ``studio-chunk-map-zh.png`` (the chunk map of a Chinese document).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

FAST_MODEL = "SmolLM2-135M-Instruct"
STUDIO_WINDOW = (1280, 800)
STUDIO_TIMEOUT_S = 1800.0

DEMO_INPUTS = {
    "corpus": str(ROOT / "resources" / "sample_corpus"),
    "corpus_path": str(ROOT / "resources" / "sample_corpus"),
    "path": str(ROOT / "resources" / "sample_corpus"),
    "query": "How often are the CNC machines serviced?",
    "question": "How often are the CNC machines serviced?",
}


def _wait(app, features, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while features.controller.busy and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    if features.controller.busy:
        features.cancel()
        while features.controller.busy:
            app.processEvents()
            time.sleep(0.02)
        return False
    app.processEvents()
    return True


def use_model(window, model: str) -> list[str]:
    """Point every embedded ``llm.model`` node of the open graph at ``model``; their ids."""
    doc = window.editor.document()
    changed = []
    for node in doc.nodes:
        if node.type == "llm.model" and node.params.get("backend", "embedded") == "embedded":
            window.editor.set_param(node.id, "model", model)
            changed.append(node.id)
    return changed


def _pick_inspected(result) -> str | None:
    """A node with a ranked list (else chunks, else anything) to show in the inspector."""
    from modrag_studio.ui.inspection.views import table_kind

    best: tuple[int, str] | None = None
    rank = {"scores": 0, "chunks": 1, "documents": 2}
    for (node_id, _), outputs in result.node_outputs.items():
        for value in outputs.values():
            kind = table_kind(value)
            if kind in rank and (best is None or rank[kind] < best[0]):
                best = (rank[kind], node_id)
    return best[1] if best else None


def shoot(app, window, path: Path, out: Path, extra: dict[str, str],
          timeout: float, model: str = FAST_MODEL) -> list[Path]:
    from modrag_studio.engine.core.graph_io import graph_input_names

    window.editor.mark_saved()
    window.open_path(path, offer_restore=False)
    use_model(window, model)
    app.processEvents()
    features = window.features.run
    doc = window.editor.document()
    values = {}
    for name in graph_input_names(doc, default_registry()):
        if name in extra:
            values[name] = extra[name]
        elif name in DEMO_INPUTS and not doc.node(_input_node(doc, name)).params.get("default"):
            values[name] = DEMO_INPUTS[name]
    features.run_bar.set_values(values)
    started = time.monotonic()
    features.run()
    finished = _wait(app, features, timeout)
    result = features.controller.last_result
    status = result.status if result else f"error: {features.last_error}"
    print(f"{path.name}: {status} in {time.monotonic() - started:.1f} s"
          + ("" if finished else " (cancelled: timeout)"))
    window.canvas.fit_all()
    outputs = [n.id for n in doc.nodes if n.type == "graph.output"]
    shots = []
    if outputs:
        window.canvas.select_nodes(outputs[:1])
    app.processEvents()
    stem = doc.metadata.name or path.stem
    shots.append(out / f"{stem}.png")
    window.grab().save(str(shots[-1]))
    inspected = _pick_inspected(result) if result else None
    if inspected:
        window.canvas.select_nodes([inspected])
        features.timeline.raise_()
        app.processEvents()
        shots.append(out / f"{stem}-inspector.png")
        window.grab().save(str(shots[-1]))
    shown = features.present(full_screen=False) if result else None
    if shown is not None:
        shown.resize(1400, 860)
        shown.go(_telling_step(shown.steps))
        app.processEvents()
        shots.append(out / f"{stem}-presentation.png")
        shown.grab().save(str(shots[-1]))
        shown.close()
    return shots


def _telling_step(steps) -> int:
    """The last step that produced an answer, else ranked passages, else the last step."""
    for wanted in ("Answer", "ScoredChunk"):
        for index in range(len(steps) - 1, -1, -1):
            visit = steps[index][0]
            if visit.status in ("done", "cached") and visit.type_id != "graph.output" and any(
                    wanted in summary.type for summary in visit.outputs.values()):
                return index
    return max(0, len(steps) - 1)


def _report(what: str, features, finished: bool) -> None:
    result = features.controller.last_result
    status = result.status if result else f"error: {features.last_error}"
    print(f"{what}: {status}" + ("" if finished else " (cancelled: timeout)"), flush=True)


def _settle(app, seconds: float = 0.3) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def studio_shots(app, window, out: Path, timeout: float,
                 model: str = FAST_MODEL) -> list[Path]:
    """The pictures of the studio itself (see the module docstring)."""
    shots = []
    ux, features = window.features.studio_ux, window.features.run
    window._autosave_timer.stop()  # the edits below are for the pictures only
    window.new_document()
    ux.show_start_page()
    _settle(app, 1.0)
    shots.append(out / "studio-start.png")
    window.grab().save(str(shots[-1]))
    window.open_path(ROOT / "sample_graphs" / "modular_rag.json", offer_restore=False)
    _settle(app, 0.5)
    window.canvas.fit_all()
    _settle(app, 0.5)
    window.grab()  # the first paint switches the level of detail
    _settle(app, 0.5)
    shots.append(out / "modular_rag-fit.png")
    window.grab().save(str(shots[-1]))
    window.editor.mark_saved()
    window.open_path(ROOT / "sample_graphs" / "basic_rag.json", offer_restore=False)
    use_model(window, model)
    window.editor.set_param("llm", "max_tokens", 64)  # enough to show it writing
    window.editor.set_param("split", "chunk_size", 1400)  # long enough to pass 256 tokens
    _settle(app, 0.5)
    window.canvas.fit_all()
    features.run()
    _report("basic_rag", features, _wait(app, features, timeout))
    features.run(rerun=["generate"])  # again, to catch the model writing: bar and time
    end = time.monotonic() + timeout
    deco = window.canvas.decor.states["generate"]
    while time.monotonic() < end and features.controller.busy:
        app.processEvents()
        if window.canvas.node_state("generate") == "running" and (deco.elapsed or 0) > 2.5:
            break
        time.sleep(0.02)
    del deco  # a canvas item: holding it past the graph reload below crashed at exit
    window.canvas.select_nodes(["generate"])
    _settle(app, 0.3)
    shots.append(out / "studio-progress.png")
    window.grab().save(str(shots[-1]))
    _report("basic_rag, generate again", features, _wait(app, features, timeout))
    shots.append(_chunk_map_shot(app, window, out / "studio-chunk-map.png"))
    # the presentation tells the sample as shipped (the edits above serve the pictures only:
    # with 1400-character chunks the answer cited the wrong document)
    window.editor.mark_saved()
    window.open_path(ROOT / "sample_graphs" / "basic_rag.json", offer_restore=False)
    use_model(window, model)
    _settle(app, 0.5)
    features.run()
    _report("basic_rag as shipped", features, _wait(app, features, timeout))
    shown = features.present(full_screen=False)
    if shown is not None:
        shown.resize(1400, 860)
        shown.go(_telling_step(shown.steps))
        _settle(app, 0.5)
        shots.append(out / "studio-presentation.png")
        shown.grab().save(str(shots[-1]))
        shown.close()
    # Chinese text (needs a CJK font, see scripts/setup.sh): load and split one document
    window.editor.set_param("load", "glob", "zh_maintenance.md")
    window.editor.set_param("split", "chunk_size", 300)
    features.run(target="split")
    _report("basic_rag on zh_maintenance.md, to split", features, _wait(app, features, timeout))
    shots.append(_chunk_map_shot(app, window, out / "studio-chunk-map-zh.png"))
    window.editor.mark_saved()
    return shots


def _chunk_map_shot(app, window, path: Path) -> Path:
    """The splitter's chunk map (a document with a chunk over the window when there is one),
    the inspector made tall and wide enough to read it (the docks are put back after)."""
    from PySide6.QtCore import Qt

    features = window.features.run
    inspector = features.inspector
    window.canvas.select_nodes(["split"])
    tabs = inspector.outputs_tabs
    for index in range(tabs.count()):
        if tabs.tabText(index) == "Chunk map":
            tabs.setCurrentIndex(index)
    view = getattr(inspector, "chunk_map", None)
    if view is not None:
        over = {s.chunk.doc_id for s in view.sizes if s.over}
        chosen = next((d for d in view.by_doc if d in over), next(iter(view.by_doc), None))
        if chosen is not None and view.picker.findText(chosen) >= 0:
            view.picker.setCurrentText(chosen)
    inspector.raise_()
    state = window.saveState()
    window.resizeDocks([inspector], [560], Qt.Orientation.Horizontal)
    window.resizeDocks([features.timeline], [110], Qt.Orientation.Vertical)  # bottom docks
    for name in ("properties", "graph"):  # the inspector gets the whole right column
        window.docks[name].hide()
    _settle(app, 0.5)
    window.grab().save(str(path))
    window.restoreState(state)
    return path


def _input_node(doc, name: str) -> str:
    return next(n.id for n in doc.nodes
                if n.type == "graph.input" and n.params.get("name") == name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per run before it is cancelled (default: 600 per graph, "
                             "1800 per run with --studio: a busy machine needs that long to "
                             "embed the corpus and generate in a fresh cache)")
    parser.add_argument("--model", default=FAST_MODEL,
                        help="model of every embedded llm.model node (default: %(default)s)")
    parser.add_argument("--studio", action="store_true",
                        help="the studio's own pictures (start page, fit, progress, chunk map, "
                             "presentation) instead of one set per graph")
    args = parser.parse_args(argv)
    if args.timeout is None:
        args.timeout = STUDIO_TIMEOUT_S if args.studio else 600.0
    if args.studio:  # a fresh cache and store: the run really embeds (progress to show)
        fresh = Path(tempfile.mkdtemp(prefix="modrag-studio-shots-"))
        os.environ["MODRAG_CACHE_DIR"] = str(fresh / "cache")
        os.environ["MODRAG_DATA_DIR"] = str(fresh / "data")
    os.chdir(ROOT)  # sample graphs give corpus paths relative to the project
    extra = dict(item.split("=", 1) for item in args.input)
    graphs = args.graphs or sorted((ROOT / "sample_graphs").glob("*.json"))
    args.out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from modrag_studio.ui.shell.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    ini = Path(tempfile.mkdtemp(prefix="modrag-shots-")) / "studio.ini"
    settings = QSettings(str(ini), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings, offer_restore=False)  # one window: one run process
    window.resize(*(STUDIO_WINDOW if args.studio else (1600, 960)))
    window.show()
    try:
        if args.studio:
            graphs = []
            for shot in studio_shots(app, window, args.out, args.timeout, args.model):
                print(f"  saved {shot}")
        for path in graphs:
            for shot in shoot(app, window, path.resolve(), args.out, extra, args.timeout,
                              args.model):
                print(f"  saved {shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}")
    finally:
        window.features.run.controller.shutdown()
        window.editor.mark_saved()
        window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
