"""One definition of a graph's inputs and outputs, used by executor, validation, CLI, server."""

from __future__ import annotations

import json

import httpx

from modrag_nodes.graph_io import GraphInput, GraphOutput
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import save
from modrag_studio.engine.core.graph_io import graph_input_names, graph_interface
from modrag_studio.engine.core.validation import validate
from modrag_studio.engine.run.executor import Executor
from modrag_studio.server import ServerSettings
from modrag_studio.server.schemas import request_model
from tests.engine.helpers import edge, graph, node
from tests.foundations.palette import palette_graph
from tests.server.conftest import serve


def _defaults() -> tuple[str, str]:
    return (GraphInput.Params.model_fields["name"].default,
            GraphOutput.Params.model_fields["name"].default)


def test_palette_graph_has_the_params_default_names():
    doc = palette_graph()
    assert all(n.params == {} for n in doc.nodes)  # nothing written by the palette
    interface = graph_interface(doc, default_registry())
    in_name, out_name = _defaults()
    assert [p.name for p in interface.inputs] == [in_name]
    assert interface.input_names == graph_input_names(doc, default_registry()) == [in_name]
    assert interface.output_names == [out_name]
    assert interface.inputs[0].required and interface.inputs[0].type is str
    assert interface.outputs[0].type is str  # what text.upper puts into it


def test_explicit_params_win_over_defaults():
    doc = graph([node("a", "graph.input", name="topic", default="x", description="d"),
                 node("o", "graph.output", name="result")], [edge("a.value", "o.value")])
    interface = graph_interface(doc, default_registry())
    port = interface.inputs[0]
    assert (port.name, port.default, port.description, port.required) == ("topic", "x", "d",
                                                                          False)
    assert interface.output_names == ["result"]


def test_executor_runs_a_palette_graph_by_default_names(tmp_path):
    in_name, out_name = _defaults()
    result = Executor(default_registry(), cache=NodeCache(disk_dir=None), work_dir=tmp_path).run(
        palette_graph(), {in_name: "hello"})
    assert result.ok, result.trace.visits
    assert result.outputs == {out_name: "HELLO"}


def test_duplicate_effective_names_name_both_nodes():
    doc = graph([node("a", "graph.input"), node("b", "graph.input", name=_defaults()[0]),
                 node("o", "graph.output", name="x"), node("p", "graph.output", name="x")],
                [edge("a.value", "o.value"), edge("b.value", "p.value")])
    problems = [p for p in validate(doc, default_registry()) if p.code == "duplicate-io-name"]
    assert {p.node_id for p in problems} == {"a", "b", "o", "p"}
    by_node = {p.node_id: p.message for p in problems}
    assert "'a' and 'b'" in by_node["a"] and "'a' and 'b'" in by_node["b"]
    assert "'o' and 'p'" in by_node["p"]


def test_cli_runs_a_palette_graph(tmp_path, capsys):
    in_name, out_name = _defaults()
    path = tmp_path / "palette.json"
    save(palette_graph(), path)
    assert main(["validate", str(path)]) == 0
    assert f"inputs: {in_name}; outputs: {out_name}" in capsys.readouterr().out
    code = main(["run", str(path), "-i", f"{in_name}=hi there", "--json", "-q", "--no-cache"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {out_name: "HI THERE"}


def test_server_schema_and_run_use_the_default_names(tmp_path):
    in_name, out_name = _defaults()
    doc = palette_graph()
    doc.metadata.name = "palette"
    assert list(request_model(doc, registry=default_registry()).model_fields) == [in_name]
    with serve(doc, ServerSettings(cache_dir=tmp_path)) as url, httpx.Client(base_url=url) as http:
        schema = http.get("/openapi.json").json()["components"]["schemas"]
        assert schema["PaletteInputs"]["required"] == [in_name]
        assert list(schema["PaletteOutputs"]["properties"]) == [out_name]
        body = http.post("/run", json={in_name: "abc"}).json()
    assert body["status"] == "ok"
    assert body["outputs"] == {out_name: "ABC"}


def test_evaluation_serving_and_trust_read_the_default_names():
    """Modules that look for a graph's inputs and outputs agree with the engine's defaults."""
    from modrag_studio.engine.trust.reach import path_like_inputs
    from modrag_studio.evaluation.answer_eval import answer_output_name
    from modrag_studio.evaluation.query_batch import query_side_nodes
    from modrag_studio.server.exposure import input_defaults

    doc = palette_graph()
    in_name, out_name = _defaults()
    assert answer_output_name(doc) == out_name
    upper = next(n.id for n in doc.nodes if n.type == "text.upper")
    assert upper in query_side_nodes(doc, in_name)
    assert input_defaults(doc) == {in_name: None}
    assert path_like_inputs(doc, default_registry()) == set()
