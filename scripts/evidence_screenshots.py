"""Screenshots of the three worked examples of docs/debugging.md (the demo corpus, basic_rag).

Run offscreen from the repository root (the corpus path is relative to it):
    QT_QPA_PLATFORM=offscreen MODRAG_RUN_MODE=thread \
        .venv/bin/python scripts/evidence_screenshots.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from modrag_studio.commands.common import apply_overrides
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load
from modrag_studio.ui.shell.main_window import MainWindow

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
EXPECT = "text:500 operating hours"
EXAMPLES = [
    # (file, question, param overrides, run to, force into the prompt)
    ("evidence-retrieval-loss.png", "What maintenance is due after a fixed number of running "
     "hours?", {"retrieve.top_k": "2"}, None, True),
    ("evidence-budget-loss.png", "Which pump needs the most frequent service?",
     {"prompt.context_budget_tokens": "300"}, "prompt", False),
    ("evidence-generation-loss.png", "How often is the lubrication pump LP-07 serviced?", {},
     None, False),
]


def wait(app: QApplication, done, seconds: float = 900) -> None:
    import time

    end = time.monotonic() + seconds
    while not done():
        app.processEvents()
        time.sleep(0.02)
        if time.monotonic() > end:
            raise TimeoutError("the run did not finish")


def shoot(app: QApplication, settings: QSettings, base, name: str, question: str,
          sets: dict[str, str], target: str | None, force: bool) -> None:
    window = MainWindow(default_registry(), settings=settings, offer_restore=False)
    doc = apply_overrides(base, sets)
    window.editor.reset(doc)
    window.resize(1600, 1000)
    window.show()
    debugger = window.features.evidence_debugger
    debugger.set_expected(EXPECT)
    controller = window.features.run.controller
    inputs = {"question": question, "corpus": "resources/sample_corpus"}  # as modrag run
    controller.run(doc, inputs, target=target)
    wait(app, lambda: not controller.busy and (controller.last_result is not None
                                               or bool(window.features.run.last_error)))
    if controller.last_result is None:
        raise RuntimeError(f"{name}: {window.features.run.last_error}")
    wait(app, lambda: debugger.attribution is not None)
    if force:
        debugger.force()
        wait(app, lambda: not debugger.busy)
    window.canvas.fit_all()
    app.processEvents()
    window.grab().save(str(OUT / name))
    print(name, "|", debugger.attribution.verdict, "|", debugger.narration())
    if debugger.counterfactual is not None:
        print("  forced:", debugger.counterfactual.summary())
    controller.shutdown()
    window.close()


def main() -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    settings = QSettings(str(OUT / ".shots.ini"), QSettings.Format.IniFormat)
    base = load(ROOT / "sample_graphs" / "basic_rag.json")
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = set(sys.argv[1:])
    for example in EXAMPLES:
        if not wanted or example[0] in wanted:
            shoot(app, settings, base, *example)
    (OUT / ".shots.ini").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
