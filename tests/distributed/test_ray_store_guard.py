"""``modrag index --ray`` writes a Chroma folder through the store's guarded write path, like
``modrag index`` without Ray: a corpus slip that would delete most of the collection is
refused (``--allow-delete`` lets it through), and a writer holding the collection's lock
makes the job wait, then fail naming it."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time

import pytest

pytest.importorskip("ray")

from modrag_nodes.vectorstore import chroma_store as cs  # noqa: E402
from modrag_nodes.vectorstore import write_lock  # noqa: E402
from modrag_studio.cli import main  # noqa: E402
from modrag_studio.commands.exit_codes import EXIT_RUN_FAILED  # noqa: E402
from tests.distributed.helpers import (  # noqa: E402
    corpus_subset,
    store_graph_file,
    stored_collection,
)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]


def test_a_corpus_slip_on_ray_is_refused_like_without_ray(ray_cluster, corpus, tmp_path,
                                                          capsys):
    store = tmp_path / "chroma"
    graph = store_graph_file(tmp_path, store)
    full = corpus_subset(corpus, tmp_path / "full", 8)
    slip = corpus_subset(corpus, tmp_path / "slip", 1)  # the same file name, one document of 8
    assert main(["index", graph, "--input", f"corpus={full}", "--quiet"]) == 0
    stored = stored_collection(store).count()
    metadata = stored_collection(store).metadata
    capsys.readouterr()
    refused = []
    for ray in ([], ["--ray"]):
        code = main(["index", graph, "--input", f"corpus={slip}", "--quiet", *ray])
        err = capsys.readouterr().err
        assert code == EXIT_RUN_FAILED, err
        found = re.search(rf"would delete (\d+) of the {stored} chunks", err)
        assert found, err
        refused.append(int(found[1]))
        assert "--allow-delete" in err
        assert stored_collection(store).count() == stored
        assert stored_collection(store).metadata == metadata  # still in sync with the full corpus
    code = main(["index", graph, "--input", f"corpus={slip}", "--quiet", "--ray",
                 "--allow-delete"])
    assert code == 0, capsys.readouterr().err
    assert refused[0] == refused[1] > stored // 2  # the same refusal with and without Ray
    assert stored_collection(store).count() == stored - refused[0]


def test_a_ray_index_waits_for_the_writer_holding_the_lock_then_names_it(
        ray_cluster, corpus, tmp_path, capsys, monkeypatch):
    store = tmp_path / "chroma"
    store.mkdir()
    graph = store_graph_file(tmp_path, store)
    corpus_file = corpus_subset(corpus, tmp_path / "corpus", 8)
    monkeypatch.setenv("MODRAG_STORE_LOCK_WAIT", "0.5")
    with write_lock.lock_path(store, "c20").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(str(os.getpid()))
        fh.flush()
        code = main(["index", graph, "--input", f"corpus={corpus_file}", "--quiet", "--ray"])
        err = capsys.readouterr().err
        assert code == EXIT_RUN_FAILED, err
        assert f"locked by PID {os.getpid()}" in err
        database = store / cs.SQLITE_FILE
        assert not database.exists()  # the store was not even opened while another wrote
        monkeypatch.setenv("MODRAG_STORE_LOCK_WAIT", "120")
        opened_before_release: list[bool] = []

        def release() -> None:
            time.sleep(1.5)
            opened_before_release.append(database.exists())
            fcntl.flock(fh, fcntl.LOCK_UN)

        threading.Thread(target=release, daemon=True).start()
        code = main(["index", graph, "--input", f"corpus={corpus_file}", "--quiet", "--ray"])
    assert code == 0, capsys.readouterr().err
    assert opened_before_release == [False]  # it waited for the other writer
    assert stored_collection(store).count() >= 8
