"""Bypassed nodes, pinned outputs and reroute points, headless (executor, validation, CLI)."""

from __future__ import annotations

import json

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, GraphInvalid, NodeCache
from modrag_studio.engine.core.datatypes import Query
from modrag_studio.engine.core.document import dumps, json_schema, loads, save
from modrag_studio.engine.core.passthrough import bypass_routes
from modrag_studio.engine.core.validation import validate
from modrag_studio.engine.run.pins import PinStore, graph_key
from tests.engine.helpers import chain_graph, edge, graph, node


@pytest.fixture
def executor(tmp_path):
    return Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))


def bypassed(doc, node_id):
    return doc.model_copy(update={"nodes": [
        n.model_copy(update={"bypass": True}) if n.id == node_id else n for n in doc.nodes]})


# bypass ---------------------------------------------------------------------------------

def test_bypass_flag_is_saved_only_when_set_and_in_the_schema():
    doc = bypassed(chain_graph(), "up")
    data = json.loads(dumps(doc))
    flags = {n["id"]: n.get("bypass") for n in data["nodes"]}
    assert flags == {"q": None, "up": True, "suffix": None, "join": None, "out": None}
    assert loads(dumps(doc)).node("up").bypass is True
    assert "bypass" in json_schema()["$defs"]["NodeSpec"]["properties"]


def test_bypassed_node_passes_its_input_on_and_the_trace_says_so(executor):
    result = executor.run(bypassed(chain_graph(), "up"), {"question": "hello"})
    assert result.ok
    assert result.outputs == {"answer": "hello!"}  # not upper-cased
    visit = result.trace.last_visit("up")
    assert visit.status == "bypassed"
    assert visit.details["bypassed"] == {"text": "from input 'text'"}
    assert "up" not in result.trace.ran()
    assert result.trace.with_status("bypassed") == ["up"]


def test_enabling_again_runs_the_node_and_downstream_is_not_served_stale(executor):
    executor.run(bypassed(chain_graph(), "up"), {"question": "hello"})
    result = executor.run(chain_graph(), {"question": "hello"})
    assert result.outputs == {"answer": "HELLO!"}
    assert "join" in result.trace.ran()


def test_bypass_routes_pick_the_closest_type_per_output():
    registry = default_registry()
    assert bypass_routes(registry.get("text.upper")) == {"text": "text"}
    # query.transform: query (Query) -> query; the optional llm / embedder / feedback never
    assert bypass_routes(registry.get("query.transform")) == {"query": "query"}
    # a source has nothing to pass on
    assert bypass_routes(registry.get("debug.constant")) == {"value": None}
    # a list of texts does not fit one text
    assert bypass_routes(registry.get("text.concat")) == {"text": None}


def test_bypass_of_a_node_with_no_compatible_input_is_refused_by_name(executor):
    doc = bypassed(chain_graph(), "join")
    problems = [p for p in validate(doc, executor.registry) if p.code == "bypass-impossible"]
    assert len(problems) == 1
    assert problems[0].node_id == "join" and problems[0].field == "text"
    assert "cannot bypass 'join': output 'text' (str)" in problems[0].message
    with pytest.raises(GraphInvalid, match="cannot bypass 'join'"):
        executor.run(doc, {"question": "x"})


def test_bypass_coerces_between_compatible_types(executor):
    doc = graph(
        [node("q", "graph.input", name="question"),
         node("t", "query.transform", mode="synonyms"),
         node("out", "graph.output", name="answer")],
        [edge("q.value", "t.query"), edge("t.query", "out.value")])
    result = executor.run(bypassed(doc, "t"), {"question": "pump"})
    assert result.trace.last_visit("t").status == "bypassed"
    answer = result.outputs["answer"]
    assert isinstance(answer, Query) and answer.text == "pump"


# pins -----------------------------------------------------------------------------------

def pinned_setup(tmp_path, executor):
    path = tmp_path / "chain.json"
    save(chain_graph(), path)
    from modrag_studio.engine.core.document import load

    doc = load(path)
    first = executor.run(doc, {"question": "hello"})
    store = PinStore(tmp_path / "pins")
    key = graph_key(doc)
    store.pin(key, "up", "text.upper", {"text": "PINNED"},
              source_key=first.trace.last_visit("up").cache_key)
    return doc, store, key


def test_pinned_node_does_not_run_and_downstream_runs_on_the_pin(tmp_path, executor):
    doc, store, key = pinned_setup(tmp_path, executor)
    assert store.pinned_ids(key) == ["up"]
    result = executor.run(doc, {"question": "other"}, pins=store.load(key))
    assert result.outputs == {"answer": "PINNED!"}
    assert result.trace.last_visit("up").status == "pinned"
    assert "pinned output from" in result.trace.last_visit("up").details["pinned"]
    # the question only fed the pinned node: it is not visited at all
    assert result.trace.visits_of("q") == []
    assert "join" in result.trace.ran()


def test_unpinned_runs_the_node_again(tmp_path, executor):
    doc, store, key = pinned_setup(tmp_path, executor)
    assert store.unpin(key, "up") is True
    assert store.unpin(key, "up") is False
    result = executor.run(doc, {"question": "other"}, pins=store.load(key))
    assert result.outputs == {"answer": "OTHER!"}
    assert result.trace.last_visit("up").status in ("done", "cached")


def test_pins_are_not_in_the_graph_file_and_a_plain_run_ignores_them(tmp_path, executor):
    doc, store, key = pinned_setup(tmp_path, executor)
    assert "PINNED" not in (tmp_path / "chain.json").read_text()
    assert executor.run(doc, {"question": "other"}).outputs == {"answer": "OTHER!"}


def test_a_pin_of_another_node_type_is_ignored_with_a_warning(tmp_path, executor):
    doc, store, key = pinned_setup(tmp_path, executor)
    store.pin(key, "join", "some.other_type", {"text": "X"})
    result = executor.run(doc, {"question": "other"}, pins=store.load(key))
    assert result.outputs == {"answer": "PINNED!"}
    stale = [p for p in result.trace.problems if p["code"] == "stale-pin"]
    assert len(stale) == 1 and stale[0]["node_id"] == "join"


def test_a_planted_pin_file_is_refused(tmp_path, executor):
    doc, store, key = pinned_setup(tmp_path, executor)
    (store.folder(key) / "suffix.pin").write_bytes(b"not signed")
    assert set(store.load(key)) == {"up"}


def test_cli_honours_pins_only_with_use_pins(tmp_path, capsys, monkeypatch):
    from modrag_studio.cli import main
    from modrag_studio.engine.core.document import load

    path = tmp_path / "chain.json"
    save(chain_graph(), path)
    PinStore().pin(graph_key(load(path)), "up", "text.upper", {"text": "PINNED"})
    base = ["run", str(path), "--input", "question=hi", "--json", "--no-cache", "-q"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"answer": "HI!"}
    assert main([*base, "--use-pins"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["outputs"] == {"answer": "PINNED!"}
    assert "pinned outputs used for: up" in captured.err


# reroute points -------------------------------------------------------------------------

def test_reroute_passes_the_value_and_carries_the_upstream_type(executor):
    doc = graph(
        [node("q", "graph.input", name="question"),
         node("r1", "flow.reroute"), node("r2", "flow.reroute"),
         node("t", "query.transform", mode="passthrough"),
         node("out", "graph.output", name="answer")],
        [edge("q.value", "r1.value"), edge("r1.value", "r2.value"),
         edge("r2.value", "t.query"), edge("t.query", "out.value")])
    assert [p for p in validate(doc, executor.registry) if p.severity == "error"] == []
    result = executor.run(doc, {"question": "pump"})
    assert result.ok
    # str became a Query on the edge out of the reroute chain, as on a direct wire
    assert result.outputs["answer"].text == "pump"
    assert result.trace.last_visit("r2").status == "done"


def test_reroute_refuses_what_the_direct_wire_would_refuse(executor):
    doc = graph(
        [node("c", "debug.counter"), node("r", "flow.reroute"),
         node("up", "text.upper"), node("out", "graph.output")],
        [edge("c.count", "r.value"), edge("r.value", "up.text"), edge("up.text", "out.value")])
    problems = [p for p in validate(doc, executor.registry) if p.code == "bad-connection"]
    assert len(problems) == 1
    assert "through reroute point 'r': it carries int" in problems[0].message
    assert problems[0].node_id == "up" and problems[0].field == "text"


# editing ----------------------------------------------------------------------------------

def editor_with(doc):
    from modrag_studio.engine.edit.editor import GraphEditor

    editor = GraphEditor(default_registry())
    editor.reset(doc)
    return editor


def wires(doc):
    return sorted((e.source, e.target) for e in doc.edges)


def test_bypass_is_one_undoable_edit():
    editor = editor_with(chain_graph())
    editor.set_bypass(["up"], True)
    assert editor.document().node("up").bypass and editor.dirty
    editor.undo()
    assert not editor.document().node("up").bypass and not editor.dirty


def test_insert_reroute_then_delete_it_restores_the_wire():
    editor = editor_with(chain_graph())
    before = wires(editor.document())
    r1 = editor.insert_reroute("up", "text", "join", "texts", (10, 20))
    r2 = editor.insert_reroute(r1, "value", "join", "texts", (30, 20))
    doc = editor.document()
    assert ("up.text", f"{r1}.value") in wires(doc)
    assert (f"{r1}.value", f"{r2}.value") in wires(doc)
    assert (f"{r2}.value", "join.texts") in wires(doc)
    assert ("up.text", "join.texts") not in wires(doc)
    assert Executor(default_registry()).run(doc, {"question": "hi"}).outputs == {"answer": "HI!"}
    editor.remove_nodes([r1, r2])  # a whole chain at once
    assert wires(editor.document()) == before
    editor.undo()
    assert wires(editor.document()) == wires(doc)
    editor.remove_nodes([r2])
    assert ("up.text", f"{r1}.value") in wires(editor.document())
    assert (f"{r1}.value", "join.texts") in wires(editor.document())


def test_an_action_outside_the_document_undoes_without_dirtying_it():
    editor = editor_with(chain_graph())
    pinned: list[str] = []
    editor.push_action("pin up", lambda: pinned.append("up"), lambda: pinned.remove("up"))
    assert pinned == ["up"] and not editor.dirty and editor.undo_label() == "pin up"
    editor.undo()
    assert pinned == [] and not editor.dirty
    editor.redo()
    assert pinned == ["up"]


# every entry point honours the flag ---------------------------------------------------------

def test_cli_runs_a_bypassed_node_as_a_pass_through(tmp_path, capsys):
    from modrag_studio.cli import main

    path = tmp_path / "bypassed.json"
    save(bypassed(chain_graph(), "up"), path)
    assert main(["run", str(path), "--input", "question=hi", "--json", "--no-cache", "-q",
                 "--trace-out", str(tmp_path / "trace.json")]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"answer": "hi!"}
    visits = json.loads((tmp_path / "trace.json").read_text())["visits"]
    assert {v["node_id"]: v["status"] for v in visits}["up"] == "bypassed"


def test_server_runs_a_bypassed_node_as_a_pass_through(tmp_path):
    import httpx

    from modrag_studio.server import ServerSettings
    from tests.server.conftest import echo_graph, serve

    settings = ServerSettings(cache_dir=tmp_path / "cache")
    with serve(bypassed(echo_graph(), "up"), settings) as url:
        body = httpx.post(f"{url}/run", json={"question": "hello world"}, timeout=30).json()
    assert body["outputs"] == {"answer": "hello world / calm"}  # not upper-cased


def test_a_pinned_node_on_a_branch_not_taken_stays_skipped(tmp_path, executor):
    from modrag_studio.engine.core.document import load

    doc = graph(
        [node("q", "graph.input", name="question"),
         node("route", "debug.match_route", pattern="pump"),
         node("up", "text.upper"),
         node("out", "graph.output", name="answer"),
         node("other", "graph.output", name="other")],
        [edge("q.value", "route.text"), edge("route.match", "up.text"),
         edge("up.text", "out.value"), edge("route.other", "other.value")])
    path = tmp_path / "routed.json"
    save(doc, path)
    doc = load(path)
    store = PinStore(tmp_path / "pins")
    store.pin(graph_key(doc), "up", "text.upper", {"text": "PINNED"})
    taken = executor.run(doc, {"question": "pump"}, pins=store.load(graph_key(doc)))
    assert taken.outputs == {"answer": "PINNED"}  # the router runs: it feeds 'other' too
    assert taken.trace.last_visit("up").status == "pinned"
    other = executor.run(doc, {"question": "hello"}, pins=store.load(graph_key(doc)))
    assert other.trace.last_visit("up").status == "skipped"
    assert other.outputs == {"other": "hello"}


def test_the_editor_refuses_a_wire_out_of_a_reroute_that_its_type_does_not_fit():
    from modrag_studio.engine.core.errors import ConnectionRefused

    editor = editor_with(graph([node("c", "debug.counter"), node("r", "flow.reroute"),
                                node("up", "text.upper"), node("q", "graph.input")],
                               [edge("c.count", "r.value")]))
    with pytest.raises(ConnectionRefused, match="carries int, input 'text' takes str"):
        editor.connect("r", "value", "up", "text")
    editor.disconnect("c", "count", "r", "value")
    editor.connect("q", "value", "r", "value")
    editor.connect("r", "value", "up", "text")  # str fits
    assert ("r.value", "up.text") in wires(editor.document())
