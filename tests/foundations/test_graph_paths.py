"""Relative paths in a graph resolve against the graph file's folder, from any directory."""

from __future__ import annotations

import json
from pathlib import Path

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load, loads, save
from modrag_studio.engine.core.paths import graph_folder, resolve_path, using_graph_folder
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.trust.reach import trust
from tests.engine.helpers import edge, graph, node

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_graphs" / "basic_rag.json"


def cheap_sample(folder: Path) -> Path:
    """basic_rag.json without the models: corpus -> load -> split -> output, in a copy of
    the project layout (sample_graphs/ next to resources/)."""
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    keep = {"corpus", "load", "split"}
    data["nodes"] = [n for n in data["nodes"] if n["id"] in keep]
    for item in data["nodes"]:
        if item["id"] == "load":
            item["params"]["glob"] = "en_*.md"  # the English files only (the sample reads all)
    data["nodes"].append({"id": "chunks", "type": "graph.output", "params": {"name": "chunks"}})
    data["edges"] = [e for e in data["edges"]
                     if e["from"].split(".")[0] in keep and e["to"].split(".")[0] in keep]
    data["edges"].append({"from": "split.chunks", "to": "chunks.value"})
    (folder / "sample_graphs").mkdir(parents=True)
    (folder / "resources").symlink_to(ROOT / "resources", target_is_directory=True)
    path = folder / "sample_graphs" / "basic_cheap.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    trust(path)  # the user's own copy (its corpus, through the symlink, is outside its folder)
    return path


def test_sample_runs_from_another_working_directory(tmp_path, monkeypatch, capsys):
    path = cheap_sample(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code = main(["run", str(path), "--json", "-q", "--no-cache"])
    out = capsys.readouterr()
    assert code == 0, out.err
    chunks = json.loads(out.out)["outputs"]["chunks"]
    assert len(chunks) >= 3
    assert all(c["doc_id"].startswith("en_") for c in chunks)


def test_param_paths_resolve_against_the_graph_folder(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "note.md").write_text("# Note\n\nThe pump is serviced weekly.\n")
    doc = graph([node("load", "load.files", path="data/note.md"),
                 node("out", "graph.output", name="docs")], [edge("load.documents", "out.value")])
    save(doc, project / "g.json")
    monkeypatch.chdir(tmp_path)
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=None), work_dir=tmp_path / "work")
    result = executor.run(load(project / "g.json"))
    assert result.ok, result.trace.visits
    assert "weekly" in result.outputs["docs"][0].text
    assert result.trace.problems == []
    # the same document, never saved: the working directory, and the trace says so
    unsaved = executor.run(loads((project / "g.json").read_text()))
    assert unsaved.status == "failed"
    assert "does not exist" in unsaved.trace.last_visit("load").error.message
    assert [p["code"] for p in unsaved.trace.problems] == ["unsaved-graph"]
    assert str(tmp_path) in unsaved.trace.problems[0]["message"]
    # an explicit base folder (the studio passes the open file's folder)
    assert executor.run(loads((project / "g.json").read_text()), base_dir=project).ok


def test_resolve_path_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_path("a/b.txt") == tmp_path / "a" / "b.txt"
    with using_graph_folder(tmp_path / "g"):
        assert graph_folder() == tmp_path / "g"
        assert resolve_path("x.json") == tmp_path / "g" / "x.json"
        assert resolve_path("/abs/x.json") == Path("/abs/x.json")
        assert resolve_path("~/x") == Path.home() / "x"
    assert graph_folder() == tmp_path


def test_cli_input_paths_mean_the_working_directory(tmp_path, monkeypatch, capsys):
    project = cheap_sample(tmp_path / "project")
    corpus = tmp_path / "mine"
    corpus.mkdir()
    (corpus / "en_one.md").write_text("# One\n\nA single document about gearboxes.\n")
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(project), "-i", "corpus=mine", "--json", "-q", "--no-cache"])
    out = capsys.readouterr()
    assert code == 0, out.err
    chunks = json.loads(out.out)["outputs"]["chunks"]
    assert {c["doc_id"] for c in chunks} == {"en_one.md"}


def test_server_resolves_against_the_graph_folder(tmp_path, monkeypatch):
    import httpx

    from modrag_studio.server import ServerSettings
    from tests.server.conftest import serve

    path = cheap_sample(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with serve(load(path), ServerSettings(cache_dir=tmp_path / "cache")) as url, \
            httpx.Client(base_url=url, timeout=60) as http:
        body = http.post("/run", json={}).json()
    assert body["status"] == "ok", body["errors"]
    assert len(body["outputs"]["chunks"]) >= 3
