"""Pictures of the grounding check: basic_rag run on a question whose answer the small model
invents, the grounding check's card opened (ungrounded claims in red) and the presentation
step that narrates it.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/grounding_screenshots.py
        [--out docs/screenshots] [--model SmolLM2-135M-Instruct] [--question TEXT]
        [--graph sample_graphs/basic_rag.json] [--node ground] [--name grounding]

Saves ``grounding-card.png`` and ``grounding-presentation.png`` (``--name``: another prefix;
``--node``: another node's card, e.g. the supporting quotes of
``bench/graphs/cmrc_zh_answer.json``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from screenshots import FAST_MODEL, _wait, use_model  # noqa: E402

QUESTION = "What is the rated pressure of the hydraulic press PR-300?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--model", default=FAST_MODEL)
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--graph", default=str(ROOT / "sample_graphs" / "basic_rag.json"))
    parser.add_argument("--node", default="ground")
    parser.add_argument("--name", default="grounding")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from modrag_studio.ui.shell.main_window import MainWindow

    os.chdir(ROOT)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    ini = Path(tempfile.mkdtemp(prefix="modrag-shots-")) / "studio.ini"
    window = MainWindow(settings=QSettings(str(ini), QSettings.Format.IniFormat),
                        offer_restore=False)
    window.resize(1400, 860)
    window.show()
    graph = Path(args.graph).resolve()
    window.open_path(graph, offer_restore=False)
    window.features.trust_prompt.saved(graph)  # trusted as if saved here (no dialog)
    use_model(window, args.model)
    features = window.features.run
    features.run_bar.set_values({"question": args.question})
    features.run()
    finished = _wait(app, features, args.timeout)
    result = features.controller.last_result
    print(f"run {'finished' if finished else 'timed out'}: "
          f"{result.status if result else features.last_error}")
    card = features.overlays.card(args.node)
    if card is not None:
        card.set_collapsed(False)
        card.set_expanded(True)
        card.setZValue(1000.0)
    window.canvas.select_nodes([args.node])
    window.canvas.view.resetTransform()
    app.processEvents()
    if card is not None:
        window.canvas.view.centerOn(card.sceneBoundingRect().center())
    app.processEvents()
    window.grab().save(str(out / f"{args.name}-card.png"))
    shown = features.present(full_screen=False) if result else None
    if shown is not None:
        shown.resize(1400, 860)
        steps = [n for n, (visit, _) in enumerate(shown.steps) if visit.node_id == args.node]
        shown.go(steps[-1] if steps else 0)
        app.processEvents()
        shown.grab().save(str(out / f"{args.name}-presentation.png"))
        shown.close()
    window.editor.mark_saved()
    window.close()


if __name__ == "__main__":
    main()
