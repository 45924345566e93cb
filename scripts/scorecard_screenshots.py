"""Pictures of the scorecard: Evaluation > Score this folder… in the studio after a run, and
the saved HTML page opened in headless Chromium.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/scorecard_screenshots.py
        [--out docs/screenshots] [--chromium /usr/bin/chromium] [--keep DIR]

The folder is the tests' tiny one (five documents, a BM25 graph passing one passage on,
twelve questions naming their documents and one unanswerable, ``tests/evaluation/
scorecard_helpers.py``); the packaged SmolLM2 answers. Saves ``scorecard-studio.png`` and
``scorecard-page.png``; ``--keep`` keeps the page and its folder there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def studio_picture(folder: Path, out: Path) -> Path:
    """Run the scorecard from the studio's menu and grab the dialog; the page's path."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import GraphDocument
    from modrag_studio.ui.shell.main_window import MainWindow
    from tests.evaluation.scorecard_helpers import scorecard_graph, write_two_document_set

    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(folder / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(default_registry(), settings=settings, offer_restore=False)
    window.resize(1280, 800)
    window.show()
    window.editor.reset(GraphDocument.model_validate_json(json.dumps(scorecard_graph(folder))))
    menu = window.features.evaluation_sets.menu
    next(a for a in menu.actions() if a.text() == "Score this folder…").trigger()
    dialog = window.features.scorecards.dialog
    dialog.evalset.setText(str(write_two_document_set(folder / "questions.jsonl")))
    page = folder / "scorecard.html"
    dialog.page_path.setText(str(page))
    dialog.resize(1100, 900)
    if not dialog.start():
        raise SystemExit(f"did not start: {dialog.status.text()}")
    while dialog.busy:
        app.processEvents()
        time.sleep(0.05)
    app.processEvents()
    if dialog.card is None:
        raise SystemExit(f"the scorecard failed: {dialog.status.text()}")
    dialog.view.verticalScrollBar().setValue(0)
    app.processEvents()
    dialog.grab().save(str(out / "scorecard-studio.png"))
    dialog.close()
    window.close()
    return page


def browser_picture(page: Path, out: Path, chromium: str, folder: Path) -> None:
    """The page in headless Chromium, full height."""
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={folder / 'chromium'}",
                    "--window-size=1200,2150", f"--screenshot={out / 'scorecard-page.png'}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--keep", type=Path, help="keep the page and its folder here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        page = studio_picture(folder, args.out)
        browser_picture(page, args.out, args.chromium, folder)
    print(f"wrote {args.out / 'scorecard-studio.png'} and {args.out / 'scorecard-page.png'}")


if __name__ == "__main__":
    main()
