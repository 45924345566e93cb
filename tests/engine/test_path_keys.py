"""One folder is one cache key, however its path is spelled ('./corpus', 'corpus', absolute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.core.document import load, save
from modrag_studio.engine.core.paths import existing_path_key
from tests.engine.helpers import edge, graph, node


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "pump.md").write_text("# Pump\n\nService every 500 hours.\n")
    (folder / "other").mkdir()
    (folder / "other" / "fan.md").write_text("# Fan\n\nClean monthly.\n")
    return folder


def saved(folder, doc):
    path = folder / "graph.json"
    save(doc, path)
    return load(path)  # relative paths now resolve against the graph's folder


def input_graph():
    return graph([node("c", "graph.input", name="corpus"),
                  node("q", "graph.input", name="question"),
                  node("load", "load.files"),
                  node("docs", "graph.output", name="documents"),
                  node("echo", "graph.output", name="answer")],
                 [edge("c.value", "load.path"), edge("load.documents", "docs.value"),
                  edge("q.value", "echo.value")])


def test_three_spellings_of_a_corpus_input_hit_one_cache_entry(project, tmp_path,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the graph's folder: relative means the graph's folder
    doc = saved(project, input_graph())
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))
    spellings = ["./corpus", "corpus", str(project / "corpus"), "corpus/"]
    statuses, keys = [], set()
    for spelling in spellings:
        result = executor.run(doc, {"corpus": spelling, "question": "corpus"})
        assert result.status == "ok", result.trace.problems
        visit = result.trace.last_visit("load")
        statuses.append(visit.status)
        keys.add(visit.cache_key)
        assert result.outputs["answer"] == "corpus"  # a question is not a path: kept as typed
    assert statuses == ["done", "cached", "cached", "cached"]
    assert len(keys) == 1
    other = executor.run(doc, {"corpus": "other", "question": "q"})
    assert other.trace.last_visit("load").status == "done"
    assert other.trace.last_visit("load").cache_key not in keys


def test_three_spellings_of_a_path_param_hit_one_cache_entry(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))
    statuses, keys = [], set()
    for spelling in ["./corpus", "corpus", str(project / "corpus")]:
        doc = saved(project, graph([node("load", "load.files", path=spelling),
                                    node("docs", "graph.output", name="documents")],
                                   [edge("load.documents", "docs.value")]))
        result = executor.run(doc)
        assert result.status == "ok", result.trace.problems
        statuses.append(result.trace.last_visit("load").status)
        keys.add(result.trace.last_visit("load").cache_key)
    assert statuses == ["done", "cached", "cached"] and len(keys) == 1


def test_existing_path_key(tmp_path):
    (tmp_path / "a").mkdir()
    assert existing_path_key("./a", tmp_path) == existing_path_key("a/", tmp_path) \
        == str((tmp_path / "a").resolve())
    assert existing_path_key("missing", tmp_path) is None
    assert existing_path_key("two\nlines", tmp_path) is None
    assert existing_path_key(3, tmp_path) is None


def test_a_path_param_is_keyed_the_same_before_and_after_the_node_creates_it(tmp_path):
    from modrag_studio.engine.core.paths import using_graph_folder, with_path_param_keys

    with using_graph_folder(tmp_path):
        before = with_path_param_keys({"path": "./store", "top_k": 3, "query": "./store"},
                                      {"path"})
        (tmp_path / "store").mkdir()
        after = with_path_param_keys({"path": "store/", "top_k": 3, "query": "./store"},
                                     {"path"})
    assert before == after == {"path": str((tmp_path / "store").resolve()), "top_k": 3,
                               "query": "./store"}


def test_path_params_are_declared_in_their_params_type():
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.paths import path_params

    registry = default_registry()
    declared = {t.type_id: path_params(t.Params) for t in registry if path_params(t.Params)}
    assert declared["load.files"] == {"path": "any"}
    assert declared["store.chroma"] == {"path": "folder"}
    assert declared["prompt.build"] == {"template_file": "file"}
    schema = registry.get("store.chroma").Params.model_json_schema()
    assert schema["properties"]["path"]["x-path"] == "folder"
    assert "x-path" not in schema["properties"]["collection"]


def test_a_declared_path_param_is_keyed_one_way_and_an_undeclared_one_is_not(tmp_path):
    from modrag_studio.engine.cache.node_cache import node_signature

    def key(params, declared):
        return node_signature(type_id="t", version=1, params=params, inputs={},
                              fingerprint=None, path_params=declared)["params"]

    (tmp_path / "store").mkdir()
    from modrag_studio.engine.core.paths import using_graph_folder

    with using_graph_folder(tmp_path):
        assert key({"path": "./store"}, {"path"}) == key({"path": "store/"}, {"path"})
        assert key({"note": "./store"}, ()) != key({"note": "store/"}, ())


def test_a_template_copy_names_every_file_its_template_reads_absolutely(tmp_path):
    """An untitled copy of a sample runs from anywhere: its corpus, its store and the
    grounding check's dictionary are all found from the sample's folder."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.edit.copies import template_copy

    sample = Path(__file__).resolve().parents[2] / "sample_graphs" / "basic_rag.json"
    original = load(sample)
    assert not Path(original.node("ground").params["aliases_file"]).is_absolute()
    copy = template_copy(original, sample, default_registry())
    aliases = Path(copy.node("ground").params["aliases_file"])
    assert aliases.is_absolute() and aliases.is_file()
    assert aliases == (sample.parent / original.node("ground").params["aliases_file"]).resolve()
