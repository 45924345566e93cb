"""Subgraphs at the edges: nested deeper than an id can name is a problem naming the node
and the limit (not a pydantic traceback); inlining is one linear pass that gives what
inlining one subgraph at a time gives."""

from __future__ import annotations

import random

from modrag_studio.composition import default_registry
from modrag_studio.engine.compose.check import validate_graph
from modrag_studio.engine.compose.expand import expand, inlined_one_at_a_time
from modrag_studio.engine.compose.flatten import flatten
from modrag_studio.engine.compose.inline import SubgraphError, collapse
from modrag_studio.engine.core.document import GraphDocument, from_json_dict


def leaf() -> dict:
    return {"schema_version": 1, "metadata": {"name": "leaf"},
            "nodes": [{"id": "up", "type": "text.upper"}], "edges": [],
            "boundary": {"inputs": [{"name": "text", "to": ["up.text"]}],
                         "outputs": [{"name": "text", "from": "up.text"}]}}


def around(graph: dict) -> dict:
    return {"schema_version": 1, "metadata": {"name": "level"},
            "nodes": [{"id": "s", "type": "graph.subgraph", "subgraph": {"graph": graph}}],
            "edges": [], "boundary": {"inputs": [{"name": "text", "to": ["s.text"]}],
                                      "outputs": [{"name": "text", "from": "s.text"}]}}


def chain(graphs: list[dict]) -> GraphDocument:
    """question -> each subgraph in turn -> output."""
    nodes = [{"id": "q", "type": "graph.input", "params": {"name": "q", "default": "hi"}}]
    edges, previous = [], "q.value"
    for index, graph in enumerate(graphs):
        nodes.append({"id": f"s{index}", "type": "graph.subgraph",
                      "subgraph": {"graph": graph}})
        edges.append({"from": previous, "to": f"s{index}.text"})
        previous = f"s{index}.text"
    nodes.append({"id": "out", "type": "graph.output", "params": {"name": "out"}})
    edges.append({"from": previous, "to": "out.value"})
    return from_json_dict({"schema_version": 1, "nodes": nodes, "edges": edges})


def nested(depth: int) -> GraphDocument:
    graph = leaf()
    for _ in range(depth - 1):
        graph = around(graph)
    return chain([graph])


def test_subgraphs_nested_too_deep_are_a_problem_naming_the_limit():
    assert not validate_graph(nested(7), default_registry())  # 7 deep runs
    problems = validate_graph(nested(8), default_registry())
    deep = [p for p in problems if p.code == "subgraph-depth"]
    assert len(deep) == 1 and deep[0].node_id == "s0"
    assert "nested 8 deep" in deep[0].message and "at most 7" in deep[0].message


def _without_origins(doc: GraphDocument) -> GraphDocument:
    nodes = []
    for spec in doc.nodes:
        if spec.subgraph is not None:
            inner = _without_origins(spec.subgraph.graph)
            spec = spec.model_copy(update={"subgraph": spec.subgraph.model_copy(
                update={"graph": inner, "origin": None})})
        nodes.append(spec)
    return doc.model_copy(update={"nodes": nodes})


def _random_document(rng: random.Random) -> GraphDocument:
    nodes = [{"id": "q", "type": "graph.input", "params": {"name": "q"}}]
    edges = []
    for i in range(rng.randint(3, 12)):
        nodes.append({"id": f"n{i}", "type": "text.concat"})
        for _ in range(rng.randint(1, 2)):
            source = rng.choice(["q.value", *(f"n{j}.text" for j in range(i))])
            edges.append({"from": source, "to": f"n{i}.texts"})
    rng.shuffle(edges)
    doc = from_json_dict({"schema_version": 1, "nodes": nodes, "edges": edges})
    for k in range(rng.randint(1, 5)):  # collapses of collapses: nested subgraphs
        ids = [n.id for n in doc.nodes if n.id != "q"]
        chosen = rng.sample(ids, rng.randint(1, min(4, len(ids))))
        try:
            doc = collapse(doc, chosen, f"sub{k}")
        except SubgraphError:
            continue
    return _without_origins(doc)


def test_one_pass_inlining_equals_inlining_one_subgraph_at_a_time():
    compared = 0
    long_chain = chain([leaf() for _ in range(80)])  # each block lands inside the last one
    for seed in range(-1, 150):
        doc = long_chain if seed < 0 else _random_document(random.Random(seed))
        if not any(n.subgraph is not None for n in doc.nodes):
            continue
        slow_problems: list = []
        slow = inlined_one_at_a_time(doc, slow_problems)
        nodes, edges, problems = flatten(doc)
        assert [n.id for n in nodes] == slow.node_ids(), seed
        assert [(e.source, e.target, e.loop) for e in edges] == \
            [(e.source, e.target, e.loop) for e in slow.edges], seed
        assert [p.message for p in problems] == [p.message for p in slow_problems], seed
        compared += 1
    assert compared > 100


def test_a_wire_to_a_missing_port_is_named_in_one_pass_as_one_at_a_time():
    doc = chain([leaf(), leaf()])
    doc.edges[1] = doc.edges[1].model_copy(update={"target": "s1.nope"})
    expanded = expand(doc)
    assert [p.message for p in expanded.problems] == \
        ["subgraph 's1' has no input 'nope' (inputs: text)"]
    assert "s1/up" not in expanded.doc.node_ids() and "s0/up" in expanded.doc.node_ids()
    assert [(e.source, e.target) for e in expanded.doc.edges] == [("q.value", "s0/up.text")]



def test_order_labels_stay_strictly_increasing_when_blocks_nest_deep():
    from modrag_studio.engine.compose.flatten import _Wires
    from modrag_studio.engine.core.document import EdgeSpec

    def wire(i: int) -> EdgeSpec:
        return EdgeSpec(source=f"a{i}.x", target=f"b{i}.y")

    wires = _Wires([wire(0), wire(1)])
    first = wires.next[-1]
    for i in range(2, 200):  # always right after the first wire: the gap halves each time
        wires.insert_after(first, [wire(i)])
    labels, key = [], wires.next[-1]
    while key is not None:
        labels.append(wires.label[key])
        key = wires.next[key]
    assert len(labels) == 200 and labels == sorted(set(labels))
