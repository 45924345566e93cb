from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine import validate
from modrag_studio.engine.core.datatypes import Chunk, Query, ScoredChunk
from modrag_studio.engine.core.ports import check_types, type_name
from modrag_studio.engine.core.validation import connection_problem
from tests.engine.helpers import chain_graph, edge, graph, node


class SpecialChunk(Chunk):
    pass


def test_compatibility_rules():
    assert check_types(str, str).ok
    assert check_types(SpecialChunk, Chunk).ok
    assert not check_types(Chunk, SpecialChunk).ok
    assert check_types(list[SpecialChunk], list[Chunk]).ok
    assert check_types(Chunk, list[Chunk]).ok
    assert check_types(Any, list[Chunk]).ok
    assert check_types(list[Chunk], Any).ok
    assert check_types(int, int | None).ok
    assert not check_types(list[Chunk], list[ScoredChunk]).ok
    assert not check_types(str, int).ok


def test_coercions_convert_values():
    to_query = check_types(str, Query)
    assert to_query.ok and to_query.coercion("hi") == Query(text="hi", original="hi")
    wrapped = check_types(str, list[Query])
    assert wrapped.coercion("x")[0].text == "x"
    listed = check_types(list[str], list[Query])
    assert [q.text for q in listed.coercion(["a", "b"])] == ["a", "b"]


def test_type_names():
    assert type_name(list[ScoredChunk]) == "list[ScoredChunk]"
    assert type_name(Any) == "Any"
    assert type_name(int | None) == "int | NoneType"


def test_refused_connection_names_types_and_fitting_ports():
    registry = default_registry()
    counter, upper = registry.get("debug.counter"), registry.get("text.upper")
    message = connection_problem(counter, "count", upper, "text")
    assert message is not None
    assert "int" in message and "str" in message and "'count'" in message and "'text'" in message
    missing = connection_problem(upper, "nope", upper, "text")
    assert "no output port 'nope'" in missing and "outputs: text" in missing
    missing_in = connection_problem(upper, "text", upper, "body")
    assert "no input port 'body'" in missing_in and "inputs: text" in missing_in
    assert connection_problem(upper, "text", upper, "text") is None


def test_valid_graph_has_no_problems():
    assert validate(chain_graph(), default_registry()) == []


def test_every_problem_at_once():
    doc = graph(
        [
            node("a", "debug.constant", value=3),
            node("a", "text.upper"),
            node("u", "text.upper"),
            node("c", "debug.counter"),
            node("x", "no.such_type"),
            node("s", "debug.sleep", seconds=-1),
            node("o1", "graph.output", name="answer"),
            node("o2", "graph.output", name="answer"),
        ],
        [
            edge("c.count", "u.text"),
            edge("u.bogus", "o1.value"),
            edge("ghost.value", "o2.value"),
        ],
    )
    problems = validate(doc, default_registry())
    codes = {(p.code, p.node_id, p.field) for p in problems}
    assert ("duplicate-id", "a", None) in codes
    assert ("unknown-type", "x", "type") in codes
    assert ("invalid-param", "a", "params.value") in codes
    assert ("invalid-param", "s", "params.seconds") in codes
    assert ("bad-connection", "u", "text") in codes
    assert ("bad-connection", "o1", "value") in codes
    assert ("missing-node", "ghost", None) in codes
    assert ("duplicate-io-name", "o2", "params.name") in codes
    assert all(str(p).startswith(p.node_id or "graph") for p in problems)


def test_unconnected_required_input_and_too_many_connections():
    doc = graph(
        [node("u", "text.upper"), node("k1", "debug.constant"), node("k2", "debug.constant"),
         node("t", "text.upper")],
        [edge("k1.value", "t.text"), edge("k2.value", "t.text")],
    )
    codes = {(p.code, p.node_id, p.field) for p in validate(doc, default_registry())}
    assert ("unconnected-input", "u", "text") in codes
    assert ("too-many-connections", "t", "text") in codes


def test_cycles_must_be_declared_loops():
    nodes = [node("c", "debug.counter"), node("t", "debug.threshold")]
    undeclared = graph(nodes, [edge("c.count", "t.count"), edge("t.retry", "c.count")])
    codes = {p.code for p in validate(undeclared, default_registry())}
    assert codes == {"cycle"}
    declared = graph(nodes, [edge("c.count", "t.count"), edge("t.retry", "c.count", loop=2)])
    assert validate(declared, default_registry()) == []
    forward_loop = graph(
        [node("k", "debug.constant"), node("u", "text.upper")],
        [edge("k.value", "u.text", loop=1)],
    )
    codes = {p.code for p in validate(forward_loop, default_registry())}
    assert "loop-not-back" in codes
