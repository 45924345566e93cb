"""A file the workers cannot read stops ``modrag index --ray`` with the file named and the
reason, and the collection it was writing keeps what it held."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from modrag_studio.cli import main  # noqa: E402
from modrag_studio.commands.exit_codes import EXIT_RUN_FAILED  # noqa: E402
from tests.distributed.helpers import (  # noqa: E402
    corpus_subset,
    store_graph_file,
    stored_collection,
)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]


def test_an_unreadable_file_stops_a_ray_index_naming_the_file(ray_cluster, corpus, tmp_path,
                                                             capsys):
    store = tmp_path / "chroma"
    graph = store_graph_file(tmp_path, store)
    folder = corpus_subset(corpus, tmp_path / "docs", 6).parent
    assert main(["index", graph, "--input", f"corpus={folder}", "--quiet", "--ray"]) == 0
    before = stored_collection(store).get(include=[])["ids"]
    assert before
    capsys.readouterr()
    (folder / "notes-latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    code = main(["index", graph, "--input", f"corpus={folder}", "--quiet", "--ray"])
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED, err
    assert "notes-latin1.txt" in err and "utf-8" in err, err
    after = stored_collection(store).get(include=[])["ids"]
    assert sorted(after) == sorted(before)
