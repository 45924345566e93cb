"""``modrag run --expect`` and ``modrag eval --attribute``: the table, JSON and report contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.cli import main

ROOT = Path(__file__).resolve().parents[2]
BM25 = str(ROOT / "sample_graphs" / "scifact_bm25.json")
DOCS = {"d1": "Aspirin lowers the risk of heart attack in adults.",
        "d2": "Vitamin D deficiency is common in the north in winter.",
        "d3": "Oxygen therapy helps patients with chronic lung disease.",
        "d4": "Statins reduce cholesterol and the risk of stroke.",
        "d5": "Regular exercise improves sleep quality in older adults.",
        "d6": "Smoking damages the lungs and raises the risk of cancer."}
QUERIES = {"1": "aspirin heart attack", "2": "vitamin D deficiency",
           "3": "breathing problems treatment", "4": "cholesterol stroke statins"}
QRELS = {"1": ["d1"], "2": ["d2"], "3": ["d3"], "4": ["d4", "d1"]}


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in DOCS.items()))
    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, docs in QRELS.items() for d in docs))
    return tmp_path


def test_run_expect_prints_the_table_and_json(beir: Path, tmp_path: Path, capsys) -> None:
    args = ["run", BM25, "-i", f"corpus={beir / 'corpus.jsonl'}", "-i", "query=aspirin heart",
            "--cache-dir", str(tmp_path / "c"), "-q", "--set", "bm25.top_k=3"]
    assert main([*args, "--expect", "doc:d1", "--expect", "text:risk of heart attack"]) == 0
    out = capsys.readouterr().out
    assert "== evidence ==" in out
    table = out.split("== evidence ==")[1]
    assert "bm25" in table and "#1 of" in table
    assert "text:risk of heart attack: in d1" in table
    assert "reaches out" in table
    assert main([*args, "--expect", "doc:d3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    evidence = data["evidence"]
    assert evidence["expected"] == ["doc:d3"]
    assert evidence["first_loss"] == "bm25"
    nodes = {n["node"]: n for n in evidence["nodes"]}
    assert nodes["split"]["status"] == "reached" and nodes["bm25"]["status"] == "lost"
    assert nodes["out"]["status"] == "never_reached"
    assert evidence["verdict"].startswith("Lost at bm25: ")


def test_run_bad_expect_spec_is_refused(beir: Path, capsys) -> None:
    assert main(["run", BM25, "--expect", "page:3", "-q", "--no-cache"]) == 2
    assert "page:3" in capsys.readouterr().err


def test_eval_attribute_funnel_matches_hits(beir: Path, tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.json"
    code = main(["eval", BM25, "--dataset", str(beir), "--output", "bm25.results",
                 "--set", "bm25.top_k=2", "--k", "50", "--attribute", "--json",
                 "--report", str(report), "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    funnel = summary["attribution"]
    assert "first_loss" not in summary and "out" not in funnel  # only what feeds bm25.results
    assert list(funnel) == ["load", "split", "bm25_index", "bm25"]
    data = json.loads(report.read_text())
    hits = sum(1 for q in data["per_query"]["bm25.results"] if q["hit@50"] > 0)
    assert 0 < hits < len(QUERIES)  # the test needs both outcomes
    assert funnel["bm25"]["reached"] == hits
    assert funnel["bm25"]["lost_here"] == len(QUERIES) - hits
    assert funnel["load"] == {"reached": 4, "lost_here": 0, "never_reached": 0}
    lost = {q for q, node in data["first_loss"].items() if node == "bm25"}
    missed = {q["query_id"] for q in data["per_query"]["bm25.results"] if q["hit@50"] == 0}
    assert lost == missed and data["attribution"] == funnel
