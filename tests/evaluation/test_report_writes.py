"""``--report`` files: never the graph the command reads, written atomically."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from modrag_studio.cli import main
from modrag_studio.engine.core.document import save
from tests.evaluation.compare_helpers import two_bm25_graph, write_dataset
from tests.evaluation.tune_helpers import bm25_graph, write_stemming_corpus, write_stemming_evalset

ROOT = Path(__file__).resolve().parents[2]


def test_tune_refuses_a_report_that_would_overwrite_the_graph(tmp_path, capsys, monkeypatch):
    corpus = write_stemming_corpus(tmp_path / "docs", )
    evalset = write_stemming_evalset(tmp_path / "set.jsonl", )
    graph = tmp_path / "g.json"
    save(bm25_graph(), graph)
    text = graph.read_text()
    monkeypatch.chdir(tmp_path)
    code = main(["tune", str(graph), "--evalset", str(evalset), "--input",
                 f"corpus={corpus}", "--output", "rerank.results", "--space",
                 "index.stemmer=none,english", "--held-out", "0.4", "--cache-dir",
                 str(tmp_path / "c"), "--report", "./g.json"])  # the graph, spelt otherwise
    assert code == 2
    err = capsys.readouterr().err
    assert "--report" in err and "g.json" in err
    assert graph.read_text() == text  # no variant saved, no report written over it


def test_compare_refuses_a_report_over_one_of_its_graphs(tmp_path, capsys):
    data = write_dataset(tmp_path / "data")
    graph_a, graph_b = tmp_path / "a.json", tmp_path / "b.json"
    save(two_bm25_graph(), graph_a)
    save(two_bm25_graph("other", "fuse.convex"), graph_b)
    text = graph_b.read_text()
    assert main(["compare", str(graph_a), str(graph_b), "--dataset", str(data), "--output",
                 "fusion.results", "--report", str(graph_b), "--cache-dir",
                 str(tmp_path / "c")]) == 2
    assert "--report" in capsys.readouterr().err
    assert graph_b.read_text() == text


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (400, 400))
sys.path.insert(0, {root!r})
from modrag_studio.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_compare_report_that_cannot_be_written_leaves_the_old_one(tmp_path, capsys):
    data = write_dataset(tmp_path / "data")
    for name, graph in (("ra", two_bm25_graph()), ("rb", two_bm25_graph("b", "fuse.convex"))):
        save(graph, tmp_path / f"{name}.json")
        assert main(["eval", str(tmp_path / f"{name}.json"), "--dataset", str(data),
                     "--output", "fusion.results", "--report", str(tmp_path / f"{name}.r.json"),
                     "--cache-dir", str(tmp_path / "c")]) == 0
    report = tmp_path / "comparison.json"
    report.write_text('{"earlier": "comparison"}')
    done = subprocess.run([sys.executable, "-c", FULL_DISK.format(root=str(ROOT)), "compare",
                           str(tmp_path / "ra.r.json"), str(tmp_path / "rb.r.json"),
                           "--report", str(report)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert json.loads(report.read_text()) == {"earlier": "comparison"}  # whole, not cut
    assert done.returncode == 2, done.stderr
    assert "comparison.json" in done.stderr and "Traceback" not in done.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
