"""``modrag eval --grid``: every combination on one cache, table, grid.json, plots."""

from __future__ import annotations

import json

from modrag_studio.cli import main
from modrag_studio.commands.common import parse_value
from modrag_studio.engine.core.document import save
from modrag_studio.evaluation.grid import parse_grid
from tests.evaluation.compare_helpers import two_bm25_graph, write_dataset


def test_grid_runs_every_cell_and_writes_plots(tmp_path, capsys):
    data = write_dataset(tmp_path / "data")
    graph = tmp_path / "g.json"
    save(two_bm25_graph(), graph)
    out = tmp_path / "grid"
    code = main(["eval", str(graph), "--dataset", str(data), "--output", "fusion.results",
                 "--grid", "fusion=fuse.rrf,fuse.convex", "--grid", "split.chunk_size=60,200",
                 "--grid-dir", str(out), "--grid-scratch", "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    text = capsys.readouterr().out
    grid = json.loads((out / "grid.json").read_text())
    # the upstream axis (split) varies slowest whatever the order on the command line
    assert list(grid["axes"]) == ["split.chunk_size", "fusion"]
    assert [tuple(c["settings"].values()) for c in grid["cells"]] == [
        (60, "fuse.rrf"), (60, "fuse.convex"), (200, "fuse.rrf"), (200, "fuse.convex")]
    ndcg = [c["metrics"]["fusion.results"]["ndcg@10"] for c in grid["cells"]]
    assert all(0 < v <= 1 for v in ndcg)
    assert all(c["scratch_seconds"] > 0 for c in grid["cells"])
    assert "from scratch" in text and text.count("\n") >= 6
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["mrr_at_10.png", "ndcg_at_10.png", "recall_at_10.png", "recall_at_100.png"]
    assert (out / "ndcg_at_10.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_grid_specs_name_the_problem(tmp_path, capsys):
    doc = two_bm25_graph()
    for spec, message in (("fusion.k", "expected node.param=v1,v2"),
                          ("fusion.=a", "expected node.param=v1,v2"),
                          ("nope.k=1,2", "no node 'nope'")):
        try:
            parse_grid([spec], doc, parse_value)
        except ValueError as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"{spec} was accepted")
    data = write_dataset(tmp_path / "data")
    graph = tmp_path / "g.json"
    save(doc, graph)
    assert main(["eval", str(graph), "--dataset", str(data), "--output", "fusion.results",
                 "--grid", "fusion.kk=1,2"]) == 2
    assert "no param 'kk'" in capsys.readouterr().err
