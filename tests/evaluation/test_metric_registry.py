"""The metric registry: a metric declared once flows into the scorers, the report, the
comparison and the CLI tables; direction decides better and worse; the tables it derives
are the ones the commands printed before it."""

from __future__ import annotations

import json

import pytest

from modrag_studio.cli import main
from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk
from modrag_studio.engine.core.document import save
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.evaluation.compare import compare_rows, compared_metrics
from modrag_studio.evaluation.metric_registry import METRICS, PRIMARY, Metric
from modrag_studio.evaluation.metrics import evidence_ranking, score_ranking
from modrag_studio.evaluation.report import EvalReport, EvalsetSource, QuestionResult
from modrag_studio.evaluation.tuning.tuner import TuneError, tune, verdict
from tests.evaluation.compare_helpers import two_bm25_graph, write_dataset


@pytest.fixture
def precision():
    """A throwaway ranking metric: the share of the top k that is relevant."""
    metric = METRICS.register(Metric(
        "precision", "P", "ranking", "higher",
        lambda ranked, k: sum(g > 0 for g in ranked.grades[:k]) / k,
        cutoffs=(3,), evidence_cutoffs=(2,)))
    yield metric
    METRICS.unregister("precision")


def test_a_registered_ranking_metric_is_scored_reported_and_compared(precision, tmp_path,
                                                                      capsys):
    assert score_ranking("q", ["x", "d1", "d2"], {"d1": 1, "d2": 2}).values["precision@3"] \
        == pytest.approx(2 / 3)
    chunks = [ScoredChunk(chunk=Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text="t"), score=1.0)
              for i in (1, 2)]
    assert evidence_ranking(chunks, ExpectedEvidence.parse(["doc:d2"]))["precision@2"] == 0.5

    data = write_dataset(tmp_path / "data")
    save(two_bm25_graph(), tmp_path / "g.json")
    argv = ["eval", str(tmp_path / "g.json"), "--dataset", str(data), "--output",
            "fusion.results", "--cache-dir", str(tmp_path / "cache")]
    assert main([*argv, "--report", str(tmp_path / "a.json")]) == 0
    header = capsys.readouterr().out.splitlines()[1].split()
    assert header == ["output", *METRICS.table(10)] and "precision@3" in header
    report = json.loads((tmp_path / "a.json").read_text())
    assert 0 < report["nodes"]["fusion.results"]["precision@3"] <= 1
    assert all("precision@3" in row for row in report["per_query"]["fusion.results"])

    assert main([*argv, "--set", "fusion.top_k=1", "--report", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["metrics"]["precision@3"]["delta"] < 0  # one document kept of three
    assert "precision@3" in compared["nodes"]["fusion.results"]["metrics"]
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert any(line.startswith("precision@3") for line in capsys.readouterr().out.splitlines())


def test_a_lower_is_better_metric_wins_when_it_falls():
    pairs = [({"latency_s": 2.0}, {"latency_s": 1.0}), ({"latency_s": 1.0}, {"latency_s": 1.5}),
             ({"latency_s": 3.0}, {"latency_s": 0.5})]
    queries = compare_rows(pairs, ["latency_s"], "latency_s")["queries"]
    assert (queries["wins"], queries["losses"]) == (2, 1)
    assert verdict({"delta": -0.2, "p_value": 0.001}, METRICS.direction("latency_s")) == "better"
    assert verdict({"delta": 0.2, "p_value": 0.001}, METRICS.direction("mean_tokens")) == "worse"
    assert verdict({"delta": 0.2, "p_value": 0.001}, METRICS.direction(PRIMARY)) == "better"
    with pytest.raises(TuneError, match="lower is better"):  # the search keeps the highest
        tune(two_bm25_graph(), None, "fusion.results", None, executor=None, metric="tokens")


def test_the_derived_tables_are_the_ones_printed_before_the_registry():
    fixed = ["ndcg@10", "recall@5", "recall@10", "recall@20", "recall@100"]
    assert METRICS.table(7) == [*fixed, "mrr@10", "hit@7"]  # modrag eval
    assert compared_metrics(7) == [*fixed, "hit@7", "mrr@10"]  # modrag compare, tune
    assert METRICS.headline() == ["ndcg@10", "recall@10", "recall@100", "mrr@10"]  # grid
    assert METRICS.headline(10)[-1] == "hit@10"  # the tune dialog
    row = QuestionResult("q", metrics={"fact_recall": 1.0, "fact_recall_with_quotes": 1.0})
    report = EvalReport("g", "s", EvalsetSource("set.jsonl", "x"), judge_configured=True,
                        results=[row])
    assert list(report.answers_summary()) == [
        "fact_recall", "fact_recall_with_quotes", "citation_precision", "citation_recall",
        "citation_validity", "refusal_accuracy", "faithfulness", "answer_relevance",
        "mean_answer_length", "mean_latency_s", "mean_tokens"]
