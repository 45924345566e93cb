"""Run > Index Corpus…: the indexing job off the GUI thread with a bar per stage, Cancel, and
the Ray choices disabled with the install command when Ray cannot be imported."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QSettings, Qt

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.run.executor import Executor
from modrag_studio.ui.run import index_dialog
from modrag_studio.ui.shell.main_window import MainWindow
from tests.distributed.helpers import index_graph, write_corpus

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(default_registry(), settings=settings, offer_restore=False)
    win.editor.reset(index_graph(None))  # corpus -> load -> split -> bm25.index (+ a query)
    qtbot.addWidget(win)
    win.show()
    yield win
    if win.features.index.dialog is not None:
        win.features.index.dialog.cancel()
        win.features.index.dialog.wait(30)
    win.features.run.controller.shutdown()


def _open(win) -> index_dialog.IndexDialog:
    action = next(a for a in win.menus["Run"].actions() if a.objectName() == "indexCorpusAction")
    action.trigger()
    assert win.features.index.dialog is not None and win.features.index.dialog.isVisible()
    return win.features.index.dialog


def test_local_indexing_shows_each_node_and_fills_the_run_cache(qtbot, window, tmp_path):
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    dialog = _open(window)
    assert dialog.plan_label.text() == "load -> split -> bm25_index"
    assert dialog.place() == "none" and not dialog.address.isEnabled()
    dialog.corpus.setText(str(corpus))
    assert dialog.start()
    assert dialog.busy and not dialog.start_button.isEnabled()  # the GUI thread is free
    qtbot.waitUntil(lambda: not dialog.busy and dialog.summary is not None, timeout=60_000)
    assert dialog.error == "" and dialog.summary["documents"] == 20
    chunks = dialog.summary["chunks"]
    assert dialog.stage_text("load") == "1 / 1 blocks 20 rows"
    assert dialog.stage_text("split") == f"1 / 1 blocks {chunks} rows"
    assert dialog.stage_text("bm25_index") == f"1 / 1 blocks {chunks} rows"
    assert dialog.stage_value("bm25_index") == (1000, 1000)
    assert f"{chunks} chunks" in dialog.status.text()
    captions = window.features.run.mirror.captions.run  # the nodes on the canvas say it too
    assert captions["split"] == f"indexed: {chunks:,} rows"
    assert captions["bm25_index"] == f"indexed: {chunks:,} rows"
    assert window.canvas.node_state("split") == "done"  # the state line shows the caption
    # The studio's runs share the node cache the job wrote: the index is not built again.
    run = Executor(default_registry(), cache=NodeCache(disk_dir=_cache_home())).run(
        window.editor.document(), {"corpus": str(corpus), "query": "coral"})
    assert run.ok and run.trace.last_visit("bm25_index").status == "cached"


def test_cancel_stops_the_job_and_says_so(qtbot, window, tmp_path):
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    dialog = _open(window)
    dialog.corpus.setText(str(corpus))
    seen = []

    def cancel_on_first_event(_run, channel, args):  # in the job's thread: Cancel's token
        if channel == "progress":
            seen.append(args[0].line())
            dialog.job.cancel()

    dialog.job.bridge.event.connect(cancel_on_first_event, Qt.ConnectionType.DirectConnection)
    assert dialog.start()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=60_000)
    assert seen and dialog.cancelled and dialog.summary is None and dialog.error == ""
    assert dialog.status.text().startswith("Cancelled.")
    assert dialog.stage_text("bm25_index") == "0 / 1 blocks 0 rows"  # never reached
    assert dialog.start_button.isEnabled() and not dialog.cancel_button.isEnabled()


def test_without_ray_the_ray_choices_are_disabled_with_the_install_hint(qtbot, window,
                                                                          monkeypatch):
    monkeypatch.setattr(index_dialog, "ray_available", lambda: False)
    dialog = _open(window)
    assert not dialog.place_buttons["local"].isEnabled()
    assert not dialog.place_buttons["address"].isEnabled()
    assert dialog.ray_hint.isVisible() and "modrag-studio[distributed]" in dialog.ray_hint.text()
    assert dialog.place_buttons["none"].isEnabled() and dialog.ray_address() is None


def test_ray_choices_name_the_address_and_show_the_ray_stages(qtbot, window, monkeypatch):
    monkeypatch.setattr(index_dialog, "ray_available", lambda: True)
    dialog = _open(window)
    assert not dialog.ray_hint.isVisible()
    dialog.place_buttons["address"].setChecked(True)
    assert dialog.address.isEnabled()
    dialog.address.setText("127.0.0.1:6379")
    assert dialog.ray_address() == "127.0.0.1:6379"
    assert list(dialog._bars) == ["read", "split"]  # no store in this graph: no embed/write
    dialog.address.setText("")
    dialog.corpus.setText("x.jsonl")
    assert not dialog.start() and "HOST:PORT" in dialog.status.text()


def _cache_home():
    from modrag_studio.engine.core.paths import cache_home

    return cache_home()


def test_close_hides_a_running_job_which_goes_on_in_the_status_bar(qtbot, window, tmp_path):
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    dialog = _open(window)
    dialog.corpus.setText(str(corpus))
    gate = threading.Event()
    dialog.job.bridge.event.connect(lambda *_: gate.wait(30), Qt.ConnectionType.DirectConnection)
    assert dialog.start()
    qtbot.mouseClick(dialog.close_button, Qt.MouseButton.LeftButton)  # the Close button
    assert not dialog.isVisible() and dialog.busy and not dialog.job.cancel_token.cancelled
    assert "goes on in the background" in window.statusBar().currentMessage()
    gate.set()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=60_000)
    assert not dialog.cancelled and dialog.summary is not None  # finished, not stopped
    assert window.statusBar().currentMessage().startswith("Indexing done:")
