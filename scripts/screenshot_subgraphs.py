"""Render modular_rag's hybrid retrieval subgraph after a run: collapsed on the canvas, and
opened (its inner nodes with their run overlays).

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_subgraphs.py
        [--out docs/screenshots]

The chat model is a canned backend (no model download) and the run goes to a worker thread;
the embedder is the packaged e5. Saves subgraph-collapsed.png and subgraph-opened.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BACKEND = "screenshot-canned"


class Canned:
    def chat(self, spec, messages, *, on_token, cancel):
        from modrag_nodes.llm.client import ChatResult

        user = messages[-1].content
        text = ("product" if user.startswith("Classify the question")
                else "yes" if "check answers against evidence" in messages[0].content
                else "How often is the LP-07 lubrication pump serviced?"
                if user.startswith("Split the question")
                else "The lubrication pump LP-07 is serviced every 500 operating hours [1].")
        if on_token is not None:
            on_token(text)
        return ChatResult(text=text, model="canned", prompt_tokens=1, completion_tokens=1,
                          duration_s=0.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="modrag-subgraphs-"))
    for name in ("CACHE", "DATA", "CONFIG"):  # never the user's pins or cache
        os.environ[f"MODRAG_{name}_DIR"] = str(work / name.lower())
    os.environ["MODRAG_RUN_MODE"] = "thread"  # the canned backend lives in this process
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtWidgets import QApplication, QDockWidget

    from modrag_nodes.llm.client import register_backend
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import load, save
    from modrag_studio.engine.edit.copies import template_copy
    from modrag_studio.engine.trust.reach import trust
    from modrag_studio.ui.shell.main_window import MainWindow

    register_backend(BACKEND, Canned)
    app = QApplication.instance() or QApplication([])
    registry = default_registry()
    sample = ROOT / "sample_graphs" / "modular_rag.json"
    doc = template_copy(load(sample), sample, registry)
    for node in doc.nodes:
        if node.type == "llm.model":
            node.params["backend"] = BACKEND
        if "aliases_file" in node.params:
            node.params["aliases_file"] = str(ROOT / "resources" / "sample_corpus"
                                              / "kg_dictionary.json")
    path = work / "modular_rag.json"
    save(doc, path)
    trust(path)  # what it reads lies outside its folder: no trust prompt for this copy
    settings = QSettings(str(work / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(registry, settings=settings, offer_restore=False)
    window.open_path(path, offer_restore=False)
    window.resize(1500, 900)
    window.show()
    features = window.features.run
    features.run()
    end = time.monotonic() + 300
    while features.controller.busy and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()
    result = features.controller.last_result
    assert result is not None and result.ok, result.trace.failure_summary() if result else ""
    for dock in window.findChildren(QDockWidget):  # the canvas alone, large
        dock.hide()
    canvas = window.canvas
    around = ["hybrid", "synonyms", "store", "bm25_index", "rerank", "guard"]
    canvas.select_nodes(["hybrid"])
    for _ in range(5):
        app.processEvents()
    canvas.fit_all()
    rect = None
    for node_id in around:
        r = canvas.node_scene_rect(node_id)
        rect = r if rect is None else rect.united(r)
    canvas.view.fitInView(rect.adjusted(-80, -80, 80, 200), Qt.AspectRatioMode.KeepAspectRatio)
    for _ in range(10):
        app.processEvents()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    canvas.view.grab().save(str(out / "subgraph-collapsed.png"))
    view = window.features.subgraphs.open("hybrid")
    view.resize(1300, 820)
    for _ in range(10):
        app.processEvents()
    view.canvas.fit_all()
    for _ in range(10):
        app.processEvents()
    view.grab().save(str(out / "subgraph-opened.png"))
    print({v.node_id: v.status for v in result.trace.visits if v.node_id.startswith("hybrid")})
    print(f"saved {out / 'subgraph-collapsed.png'} and {out / 'subgraph-opened.png'}")
    view.close()
    features.controller.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
