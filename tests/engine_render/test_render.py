"""Mermaid, DOT and SVG renderings of a graph, and the port colour map."""

from __future__ import annotations

import shutil

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.layout.render import (
    RenderError,
    hex_color,
    to_dot,
    to_mermaid,
    to_svg,
    type_color,
)


def sample() -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "demo"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "up", "type": "text.upper", "title": 'Shout "it"'},
            {"id": "c-1", "type": "debug.counter"},
            {"id": "t", "type": "debug.threshold"},
            {"id": "ghost", "type": "no.such_type"},
            {"id": "out", "type": "graph.output"},
        ],
        "edges": [
            {"from": "q.value", "to": "up.text"},
            {"from": "up.text", "to": "out.value"},
            {"from": "c-1.count", "to": "t.count"},
            {"from": "t.retry", "to": "c-1.count", "loop": {"max_iterations": 3}},
        ],
    })


def test_mermaid_has_every_node_and_edge():
    text = to_mermaid(sample(), default_registry())
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert sum(1 for line in lines if '["' in line) == 6
    assert 'n0 -->|"value → text"| n1' in text
    assert "-.->" in text and "loop ≤3" in text
    assert "&quot;it&quot;" in text  # quotes in titles are escaped
    assert "class n4 unknown" in text


def test_dot_connects_ports_and_colours_by_type():
    source = to_dot(sample(), default_registry())
    assert "rankdir=LR" in source
    assert "q:out_value:e -> up:in_text:w" in source
    assert 'PORT="in_text"' in source
    assert hex_color(type_color("str")) in source
    assert "style=dashed" in source
    assert "ghost" in source


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' not installed")
def test_svg_is_rendered_by_graphviz():
    svg = to_svg(sample(), default_registry())
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg[:500]
    assert "Shout" in svg and "</svg>" in svg


def test_svg_without_dot_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RenderError, match="graphviz 'dot' program was not found"):
        to_svg(sample(), default_registry())


def test_type_colours_are_stable_and_distinct():
    assert type_color("list[ScoredChunk]") == type_color("list[ScoredChunk]")
    assert type_color("SomethingNew") == type_color("SomethingNew")
    assert type_color("str") != type_color("Query")
    assert all(90 <= c < 240 for c in type_color("SomethingNew"))
