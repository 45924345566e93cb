"""docs/screenshots/studio-index-ray.png: Run > Index Corpus… on Ray, mid-job.

Indexes a generated 200-document JSONL corpus (Chroma folder + BM25, the tests' graph) with
"Ray on this machine" (a head node started and stopped by the dialog) and saves the dialog once
the embedding stage has rows, and again when the job ended (``-done`` suffix).

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_index_ray.py [OUT.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from modrag_studio.composition import default_registry
    from modrag_studio.ui.shell.main_window import MainWindow
    from tests.distributed.helpers import index_graph

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/screenshots/studio-index-ray.png"
    app = QApplication.instance() or QApplication([])
    work = Path(tempfile.mkdtemp(prefix="modrag-index-shot-"))
    corpus = write_corpus(work / "corpus.jsonl", 200)
    settings = QSettings(str(work / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(default_registry(), settings=settings, offer_restore=False)
    window.editor.reset(index_graph({"path": str(work / "chroma"), "collection": "beir20"}))
    window.show()
    dialog = window.features.index.open()
    dialog.corpus.setText(str(corpus))
    dialog.place_buttons["local"].setChecked(True)
    dialog.resize(720, 500)
    if not dialog.start():
        print(dialog.status.text(), file=sys.stderr)
        return 1
    shot_taken = False
    while dialog.busy:
        app.processEvents()
        dialog._thread.join(0.05)
        if not shot_taken and "embed" in dialog._bars and dialog.stage_value("embed")[0] > 0:
            shot_taken = dialog.grab().save(str(out))
    app.processEvents()
    done = out.with_name(out.stem + "-done.png")
    dialog.grab().save(str(done if shot_taken else out))
    print(dialog.status.text())
    window.close()
    return 0 if dialog.summary else 1


def write_corpus(path: Path, documents: int) -> Path:
    import json

    from tests.distributed.helpers import TOPICS

    with path.open("w", encoding="utf-8") as fh:
        for n in range(documents):
            topic = TOPICS[n % len(TOPICS)]
            text = "\n\n".join(f"Finding {k} of study {n} about the {topic}: measurements "
                               f"over {n + k} seasons differed." for k in range(1 + n % 4))
            fh.write(json.dumps({"_id": f"d{n}", "title": f"On the {topic} ({n})",
                                 "text": text}) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
