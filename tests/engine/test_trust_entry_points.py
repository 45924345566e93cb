"""Every command line entry point takes the studio's decision before running a graph file
from elsewhere: ``modrag run``, ``eval``, ``index`` and ``compare`` refuse one that reaches
outside its folder, listing what it reaches, unless ``--trust`` is given or it was trusted
before; the user's own graphs and the samples never ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load, save
from modrag_studio.engine.trust.gate import SAMPLES, disclosure, exempt
from modrag_studio.engine.trust.reach import approved_hosts, is_trusted, trust
from tests.distributed.helpers import index_graph, write_corpus
from tests.engine.helpers import edge, graph, node
from tests.engine.test_trust import evil_graph


@pytest.fixture
def received(tmp_path, monkeypatch):
    """A graph in downloads/ that loads ../outside (a folder beside it, not inside it)."""
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text("# Notes\n\nThe private notes.\n")
    path = tmp_path / "downloads" / "g.json"
    save(graph([node("load", "load.files", path="../outside", glob="*.md"),
                node("out", "graph.output", name="documents")],
               [edge("load.documents", "out.value")], name="reads-outside"), path)
    return path, outside


def test_modrag_run_refuses_a_received_graph_until_trusted(received, capsys):
    path, outside = received
    assert main(["run", str(path), "--json", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "was not made or run here" in err and str(outside.resolve()) in err
    assert "(load.path)" in err and "--trust" in err
    assert not is_trusted(path)
    assert main(["run", str(path), "--json", "--no-cache", "--trust"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outputs"]["documents"][0]["doc_id"] == "notes.md"
    assert is_trusted(path)  # approved once: trusted from then on
    assert main(["run", str(path), "--json", "--no-cache"]) == 0
    capsys.readouterr()
    save(load(path), path)  # a changed file
    path.write_text(path.read_text().replace("reads-outside", "changed"))
    assert main(["run", str(path), "--json", "--no-cache"]) == 2
    assert "--trust" in capsys.readouterr().err


def test_modrag_run_names_the_host_and_approves_it_with_trust(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    path = tmp_path / "downloads" / "evil.json"
    save(evil_graph(str(tmp_path / "secret.txt")), path)
    assert main(["run", str(path), "--input", "question=hi"]) == 2
    err = capsys.readouterr().err
    assert "contacts attacker.example" in err and str(tmp_path / "secret.txt") in err
    assert "attacker.example" not in approved_hosts()


def test_eval_index_and_compare_refuse_it_too(received, tmp_path, capsys):
    path, outside = received
    data = write_corpus(tmp_path / "beir")
    assert main(["eval", str(path), "--dataset", str(data), "--output", "out.value"]) == 2
    assert "was not made or run here" in capsys.readouterr().err
    assert main(["compare", str(path), "--variant", "few:load.glob=*.txt",
                 "--input", f"corpus={data}"]) == 2
    assert "was not made or run here" in capsys.readouterr().err
    ingest = index_graph(None)
    ingest.node("load").params["path"] = str(outside)
    index_path = tmp_path / "downloads" / "index.json"
    save(ingest, index_path)
    corpus = str(data / "corpus.jsonl")
    assert main(["index", str(index_path), "--input", f"corpus={corpus}", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "was not made or run here" in err and str(outside) in err
    assert main(["index", str(index_path), "--input", f"corpus={corpus}", "--quiet",
                 "--trust", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "20 documents" in capsys.readouterr().out


def test_own_graphs_samples_and_graphs_reaching_nothing_never_ask(received, tmp_path,
                                                                  capsys):
    path, _ = received
    trust(path)  # saved in the studio: the user's own
    assert main(["run", str(path), "--json", "--no-cache"]) == 0
    capsys.readouterr()
    inside = tmp_path / "downloads" / "inside.json"
    (inside.parent / "docs").mkdir()
    (inside.parent / "docs" / "a.md").write_text("# A\n\nInside.\n")
    save(graph([node("load", "load.files", path="docs"),
                node("out", "graph.output", name="documents")],
               [edge("load.documents", "out.value")], name="inside"), inside)
    assert main(["run", str(inside), "--json", "--no-cache"]) == 0
    samples = sorted(SAMPLES.glob("*.json"))
    assert samples and all(exempt(sample) for sample in samples)
    assert disclosure(load(samples[0]), default_registry(), samples[0]) is None
    assert exempt(None)  # a graph not saved to a file yet


def test_the_decision_is_the_one_the_studio_takes(received):
    path, outside = received
    found = disclosure(load(path), default_registry(), path)
    assert found is not None
    assert [file for _, file in found.files] == [str(Path(outside).resolve())]


def test_a_graph_writing_the_shared_store_is_disclosed_and_refused(tmp_path, monkeypatch,
                                                                  capsys):
    """A graph from elsewhere whose store has no folder of its own writes the user's shared
    default Chroma folder, and may delete all of a collection there: both are listed."""
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    ingest = index_graph({"path": "", "collection": "modrag", "max_delete_share": 1.0},
                         bm25=False)
    path = tmp_path / "downloads" / "wipe.json"
    save(ingest, path)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "writes collection 'modrag' in the shared Chroma folder" in out
    assert "may delete up to 100% of collection 'modrag' without asking  " \
           "(store.max_delete_share)" in out
    corpus = write_corpus(tmp_path / "beir") / "corpus.jsonl"
    assert main(["index", str(path), "--input", f"corpus={corpus}", "--quiet"]) == 2
    assert "shared Chroma folder" in capsys.readouterr().err
    for store, listed in (("../elsewhere/chroma", True), ("chroma", False)):
        save(index_graph({"path": store, "collection": "c20", "max_delete_share": 1.0},
                         bm25=False), path)
        found = disclosure(load(path), default_registry(), path)
        assert found is not None
        shown = found.lines()
        assert any("may delete up to 100% of collection 'c20'" in line for line in shown) \
            is listed, shown
        assert found.empty is not listed  # its own folder's store may delete what it likes
