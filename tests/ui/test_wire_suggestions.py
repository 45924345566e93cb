"""A wire dropped on empty canvas offers first what the samples wire there, not A to Z."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from modrag_studio.composition import default_registry
from modrag_studio.ui.canvas.wire_ranks import SAMPLES, SampleWiring
from modrag_studio.ui.panels.palette import TYPE_ROLE
from tests.ui.test_editor_canvas import drag, view_pos

pytestmark = pytest.mark.ui


def _offered(popup) -> list[str]:
    return [popup.results.item(i).data(TYPE_ROLE) for i in range(popup.results.count())]


def test_dropping_a_retrievers_results_offers_a_fusion_and_the_prompt_builder_first(
        main_window, qtbot):
    vector = main_window.editor.add_node("retrieve.vector", (0, 0))
    main_window.canvas.center_on([vector])
    start = view_pos(main_window, vector, "results", "out")
    drag(main_window, start, start + QPoint(260, 160))  # released on empty canvas
    popup = main_window.search_popup
    qtbot.waitUntil(popup.isVisible)
    offered = _offered(popup)
    assert offered[0] == "fuse.rrf"  # the samples wire vector results into a fusion 7 times
    assert offered.index("prompt.build") < 6  # a ranking of passages often feeds a prompt
    assert offered.index("kg.centrality_rerank") > 3  # was first, alphabetically
    qtbot.keyClicks(popup.line, "prompt")  # typing still filters, in the same order
    assert _offered(popup)[0] == "prompt.build"
    qtbot.keyClick(popup.line, Qt.Key.Key_Return)
    doc = main_window.editor.document()
    added = next(n for n in doc.nodes if n.id != vector)
    assert added.type == "prompt.build"
    assert [(e.source_node, e.target_node) for e in doc.edges] == [(vector, added.id)]


def test_the_counts_come_from_the_samples_wiring():
    wiring = SampleWiring(SAMPLES, default_registry())
    assert wiring.by_port["out", "retrieve.vector", "results", "fuse.rrf"] >= 5
    assert wiring.by_port["in", "fuse.rrf", "rankings", "retrieve.vector"] >= 5
    choices = [("kg.centrality_rerank", "results"), ("fuse.rrf", "rankings"),
               ("prompt.build", "evidence")]
    ranked = wiring.rank(choices, "retrieve.vector", "results", "out", "list[ScoredChunk]")
    assert ranked[0] == ("fuse.rrf", "rankings")
