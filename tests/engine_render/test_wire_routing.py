"""Wires around nodes: the orthogonal route and the layout metrics of routed wires."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load
from modrag_studio.engine.layout.auto_layout import auto_layout
from modrag_studio.engine.layout.metrics import estimated_wires, measure
from modrag_studio.engine.layout.wire_routing import (
    crosses_a_node,
    densify,
    route,
    routed_or_curve,
)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def test_a_route_goes_around_a_node_in_the_way_and_keeps_its_margin():
    start, end = (100.0, 50.0), (500.0, 50.0)
    source, target = (0.0, 0.0, 100.0, 100.0), (500.0, 0.0, 600.0, 100.0)
    blocker = (250.0, 20.0, 350.0, 200.0)
    points = route(start, end, [source, target, blocker])
    assert points is not None
    assert points[0] == start and points[-1] == end
    for (ax, ay), (bx, by) in zip(points, points[1:], strict=False):
        assert ax == bx or ay == by  # horizontal and vertical runs only
    assert not crosses_a_node(points, [blocker], inset=-9.9)  # 10 px of margin kept
    above = min(y for _, y in points)
    assert above <= 20.0 - 10.0  # it went over the blocker, the shorter way round
    assert len(points) == 6  # out, up, across, down, in: four bends


def test_a_clear_curve_is_kept_and_a_boxed_in_port_gives_no_route():
    curve, routed = routed_or_curve((100.0, 50.0), (500.0, 50.0), [], [(250, 300, 350, 400)],
                                    tangent=100.0)
    assert not routed and len(curve) > 2
    boxed = route((100.0, 50.0), (500.0, 50.0), [(90.0, 0.0, 400.0, 100.0)])
    assert boxed is None


def test_a_wire_back_to_an_earlier_column_passes_around_both_its_nodes():
    source, target = (400.0, 0.0, 500.0, 100.0), (0.0, 0.0, 100.0, 100.0)
    points = route((500.0, 50.0), (0.0, 50.0), [source, target])
    assert points is not None
    assert not crosses_a_node(points[1:-1], [source, target], inset=-9.9)


def test_densify_keeps_the_ends_and_fills_long_runs():
    dense = densify([(0.0, 0.0), (100.0, 0.0), (100.0, 40.0)], step=10.0)
    assert dense[0] == (0.0, 0.0) and dense[-1] == (100.0, 40.0)
    assert len(dense) == 1 + 10 + 4


def test_routed_sample_layouts_draw_no_wire_through_a_node():
    registry = default_registry()
    for name in ("modular_rag", "corrective_rag"):
        doc = load(SAMPLES / f"{name}.json")
        positions = auto_layout(doc, registry)
        curves = measure(*estimated_wires(doc, positions, registry))
        routed = measure(*estimated_wires(doc, positions, registry, routed=True))
        assert curves.through_nodes > 0, name  # the curves alone do cross nodes
        assert routed.through_nodes == 0, name
