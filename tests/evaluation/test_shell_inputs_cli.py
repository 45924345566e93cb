"""``--input name=PATH`` means a path relative to the shell's working directory in every
sub-command (as in ``modrag run``), not one relative to the graph's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.cli import build_parser, main
from modrag_studio.commands.common import shell_inputs
from modrag_studio.engine.core.document import load

GRAPH = Path(__file__).resolve().parents[2] / "sample_graphs" / "scifact_bm25.json"
DOCS = {"d1": "Aspirin lowers the risk of heart attack.",
        "d2": "Vitamin D deficiency is common in the north.",
        "d3": "Oxygen therapy helps patients with lung disease."}


def write_corpus(path: Path, docs: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                            for k, v in docs.items()), encoding="utf-8")
    return path


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A working directory away from the graph's folder, with ``data/`` (a BEIR dataset whose
    own corpus has the texts swapped, so only the ``--input`` corpus ranks every query's
    document first) and ``mine/corpus.jsonl`` (the right texts)."""
    work = tmp_path / "work"
    data = work / "data"
    write_corpus(data / "corpus.jsonl", dict(zip(DOCS, reversed(DOCS.values()), strict=True)))
    (data / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t}) + "\n" for q, t in
        (("1", "aspirin heart attack"), ("2", "vitamin D deficiency"),
         ("3", "lung oxygen therapy"))), encoding="utf-8")
    (data / "qrels").mkdir()
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n3\td3\t1\n", encoding="utf-8")
    write_corpus(work / "mine" / "corpus.jsonl", DOCS)
    monkeypatch.chdir(work)
    return work


def test_eval_reads_an_input_path_relative_to_the_working_directory(workdir, tmp_path, capsys):
    report = tmp_path / "report.json"
    code = main(["eval", str(GRAPH), "--dataset", "data", "--split", "test", "--output",
                 "bm25.results", "--input", "corpus=mine/corpus.jsonl", "--report",
                 str(report), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    data = json.loads(report.read_text())
    assert not data["failures"]
    assert data["nodes"]["bm25.results"]["ndcg@10"] == 1.0  # the --input corpus, not data's


def test_compare_runs_one_question_on_an_input_path_relative_to_the_working_directory(
        workdir, tmp_path, capsys):
    code = main(["compare", str(GRAPH), "--variant", "few:bm25.top_k=1", "--input",
                 "corpus=./mine//corpus.jsonl", "--input", "query=aspirin heart attack",
                 "--json", "--cache-dir", str(tmp_path / "cache")])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == {"a": "ok", "b": "ok"}
    assert result["inputs"]["corpus"] == str(workdir / "mine" / "corpus.jsonl")


def test_inputs_are_spelled_as_modrag_run_spells_them(workdir):
    doc = load(GRAPH)
    inputs = shell_inputs(doc, ["corpus=./mine//corpus.jsonl", "query=a//b",
                                "other=gone/./x/"])
    # an existing path made absolute; a path-like input tidied (one cache key); text kept
    assert inputs == {"corpus": str(workdir / "mine" / "corpus.jsonl"), "query": "a//b",
                      "other": "gone/./x/"}
    assert shell_inputs(doc, ["corpus=gone/./x/"]) == {"corpus": "gone/x"}
    with pytest.raises(ValueError, match="--input 'corpus' is not of the form name=value"):
        shell_inputs(doc, ["corpus"])


def test_serve_fixes_an_input_path_relative_to_the_working_directory(workdir):
    from modrag_studio.commands.serve_command import settings_from_args

    args = build_parser().parse_args(["serve", str(GRAPH), "--input",
                                      "corpus=mine/corpus.jsonl"])
    settings = settings_from_args(args, [load(GRAPH)])
    assert settings.fixed_inputs == {"corpus": str(workdir / "mine" / "corpus.jsonl")}
