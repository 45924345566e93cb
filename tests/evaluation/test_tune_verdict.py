"""The tuner's verdict pinned: p >= 0.05 is never "better", a significant loss is "worse" and
is never saved, the search never sees a question its choice is tested on (held out or out
of fold), and cross-validation on a small set names its method and finds a real gain."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from modrag_studio.cli import main
from modrag_studio.commands.common import parse_value
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load, save
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import load_beir
from modrag_studio.evaluation.statistics import (
    corrected_resampled_t,
    student_t_quantile,
    student_t_two_sided,
)
from modrag_studio.evaluation.tuning import parse_space, tune
from modrag_studio.evaluation.tuning.crossval import kfold
from modrag_studio.evaluation.tuning.power import plan, questions_needed
from modrag_studio.evaluation.tuning.scoring import GraphScorer
from modrag_studio.evaluation.tuning.tuner import verdict
from tests.evaluation.tune_helpers import (
    OVERFITS,
    TIES,
    bm25_graph,
    write_stemming_dataset,
)


def executor(tmp_path: Path) -> Executor:
    return Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))


# the threshold and the direction ---------------------------------------------------------
def test_p_at_or_above_the_threshold_is_never_better_and_a_significant_loss_is_worse():
    assert verdict({"delta": 0.2, "p_value": 0.049}) == "better"
    for p in (0.05, 0.051, 0.2, 0.49, 1.0):
        assert verdict({"delta": 0.2, "p_value": p}) == "no significant difference", p
        assert verdict({"delta": -0.2, "p_value": p}) == "no significant difference", p
    assert verdict({"delta": -0.2, "p_value": 0.001}) == "worse"
    assert verdict({"delta": 0.0, "p_value": 0.001}) == "no significant difference"


@pytest.mark.parametrize("method", ["held-out", "cross-validation"])
def test_a_significantly_worse_winner_is_worse_and_never_saved(tmp_path, capsys,
                                                               monkeypatch, method):
    data = write_stemming_dataset(tmp_path / "data")
    graph = tmp_path / "g.json"
    save(bm25_graph(), graph)
    text = graph.read_text()
    args = ["tune", str(graph), "--dataset", str(data), "--output", "rerank.results",
            "--space", "index.stemmer=none,english", "--held-out", "0.4", "--method", method,
            "--cache-dir", str(tmp_path / "c"), "--report", str(tmp_path / "r.json")]
    for scorer, word in ((OVERFITS, "worse"), (TIES, "no significant difference")):
        monkeypatch.setattr("modrag_studio.evaluation.tuning.tune",
                            functools.partial(tune, scorer=scorer))
        assert main(args) == 0
        out = capsys.readouterr().out
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["method"] == method and report["verdict"] == word
        stats = report["test"]["metrics"]["ndcg@10"]
        assert (stats["delta"] < 0 and stats["p_value"] < 0.05) if word == "worse" else (
            stats["p_value"] >= 0.05)
        assert report["best"]["settings"] == {"index.stemmer": "english"}
        assert report["saved_variant"] is None and "not saved" in out
        assert f"method: {method}" in out
        assert graph.read_text() == text  # no variant written


# the search never sees a question its choice is tested on ---------------------------------
class RecordingScorer:
    """The real scorer, with a log of which questions each stage was asked to score."""

    def __init__(self, inner: GraphScorer) -> None:
        self.inner, self.calls = inner, []

    def __call__(self, graph, query_ids, *, stage, split):
        self.calls.append((stage, split, list(query_ids)))
        return self.inner(graph, query_ids, stage=stage, split=split)

    def asked(self, stage: str, split: int) -> set[str]:
        return {q for s, k, ids in self.calls if s == stage and k == split for q in ids}


def _recorded_tune(tmp_path: Path, method: str, count: int = 40):
    data = load_beir(write_stemming_dataset(tmp_path / "data", count=count))
    doc, registry = bm25_graph(), default_registry()
    space = parse_space(["index.stemmer=none,english", "bm25.top_k=3,10"], doc, registry,
                        parse_value)
    run = executor(tmp_path)
    scorer = RecordingScorer(GraphScorer(data, "rerank.results", executor=run))
    result = tune(doc, data, "rerank.results", space, executor=run, seed=3, held_out=0.5,
                  method=method, scorer=scorer)
    return data, result, scorer


def test_the_search_never_scores_a_held_out_question(tmp_path):
    data, result, scorer = _recorded_tune(tmp_path, "held-out")
    held, tuning = set(result.split.held_out), set(result.split.tuning)
    searched = scorer.asked("search", -1)
    assert searched == tuning and not searched & held
    assert scorer.asked("test", -1) == held
    assert {k for _s, k, _ids in scorer.calls} == {-1}
    assert result.method == "held-out" and result.verdict == "better"


def test_each_fold_is_searched_without_the_questions_it_is_tested_on(tmp_path):
    data, result, scorer = _recorded_tune(tmp_path, "cross-validation")
    every = set(data.evaluated_query_ids())
    splits = sorted({k for _s, k, _ids in scorer.calls if k >= 0})
    assert splits == list(range(15))  # 5 folds x 3 repeats
    for split in splits:
        searched, tested = scorer.asked("search", split), scorer.asked("test", split)
        assert tested and not searched & tested, split
        assert searched | tested == every
    for repeat in range(3):
        parts = [scorer.asked("test", repeat * 5 + f) for f in range(5)]
        assert set().union(*parts) == every and sum(map(len, parts)) == len(every)
    assert scorer.asked("search", -1) == every and not scorer.asked("test", -1)
    assert result.method == "cross-validation" and result.test["folds"] == 5


# cross-validation on a small set ---------------------------------------------------------
def test_cross_validation_finds_a_real_gain_on_40_questions_and_none_in_the_same_graph(
        tmp_path):
    data = load_beir(write_stemming_dataset(tmp_path / "data", count=40))
    doc, registry, run = bm25_graph(), default_registry(), executor(tmp_path)
    space = parse_space(["index.stemmer=none,english"], doc, registry, parse_value)
    result = tune(doc, data, "rerank.results", space, executor=run, method="auto")
    assert result.method == "cross-validation" and result.split is None
    stats = result.test["metrics"]["ndcg@10"]
    assert stats["n"] == 120 and stats["splits"] == 15 and stats["p_value"] < 0.05
    assert stats["delta"] > 0.3 and result.verdict == "better"
    assert "corrected resampled t-test" in result.test["test"]
    assert result.to_dict()["method"] == "cross-validation"
    # the same graph under another label: no gain anywhere, nothing chosen, p = 1
    same = parse_space(["rerank.label=fused"], doc, registry, parse_value)
    equal = tune(doc, data, "rerank.results", same, executor=run, method="auto")
    assert equal.best is None and equal.verdict == "base is best"
    assert equal.test["metrics"]["ndcg@10"]["p_value"] == 1.0
    assert equal.test["base_chosen"] == 15


def test_kfold_is_seeded_and_covers_every_question_once_per_repeat():
    ids = [f"q{i}" for i in range(23)]
    one = kfold(ids, 5, 2, seed=1)
    assert one == kfold(ids, 5, 2, seed=1) and one != kfold(ids, 5, 2, seed=2)
    for repeat in range(2):
        tests = [q for f in one if f.repeat == repeat for q in f.test]
        assert sorted(tests) == sorted(ids)
    assert all(not set(f.train) & set(f.test) for f in one)


def test_corrected_resampled_t_widens_the_variance_by_the_test_train_ratio():
    folds = [([0.5, 0.5], [0.6, 0.7]), ([0.5, 0.5], [0.5, 0.6]), ([0.4, 0.4], [0.5, 0.4])]
    result = corrected_resampled_t(folds, [8, 8, 8])
    means = [0.15, 0.05, 0.05]
    mean = sum(means) / 3
    var = sum((m - mean) ** 2 for m in means) / 2
    t = mean / ((1 / 3 + 2 / 8) * var) ** 0.5
    assert result.delta == pytest.approx(mean)
    assert result.p_value == pytest.approx(student_t_two_sided(t, 2))
    half = student_t_quantile(0.975, 2) * ((1 / 3 + 2 / 8) * var) ** 0.5
    assert result.ci95 == pytest.approx((mean - half, mean + half))
    assert result.n == 6 and result.splits == 3


def test_student_t_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for t, df in ((0.5, 3), (2.1, 14), (3.5, 5), (1.0, 100)):
        assert student_t_two_sided(t, df) == pytest.approx(2 * stats.t.sf(t, df), rel=1e-9)
    for df in (2, 14, 49):
        assert student_t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df))


# the power estimate ----------------------------------------------------------------------
def test_power_estimate_says_the_method_and_the_questions_a_gain_needs():
    assert questions_needed(0.05, 0.15) == 73  # (1.96 + 0.84)^2 * 9 + 1.96^2 / 2
    assert questions_needed(0.1, 0.15) == 20
    small = plan(40)
    assert small.method == "cross-validation"
    assert 0.08 < small.detectable < 0.1
    assert small.needed_held_out == 244  # 73 held out at 30%
    assert "cross-validation (5 folds x 3 repeats)" in small.text()
    assert f"Generate or write {small.needed_cv - 40} more" in small.text()
    large = plan(300)
    assert large.method == "held-out" and large.tested == 90
    assert "more" not in large.text()  # 300 questions find +0.05 with either method
    assert plan(300, method="cross-validation").detectable < large.detectable


def test_tune_plan_speaks_before_anything_runs(tmp_path, capsys):
    graph = tmp_path / "g.json"
    save(bm25_graph(), graph)
    assert main(["tune", str(graph), "--output", "rerank.results", "--plan",
                 "--effect", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "A gain of +0.100 ndcg@10 (spread 0.15) needs" in out
    data = write_stemming_dataset(tmp_path / "data", count=40)
    assert main(["tune", str(graph), "--dataset", str(data), "--output", "rerank.results",
                 "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("40 question(s): cross-validation")
    assert not load(graph).variants


# what a trial runs -----------------------------------------------------------------------
class NodesRun:
    """An executor hook noting every node that starts."""

    def __init__(self) -> None:
        self.started: set[str] = set()

    def on_node_start(self, *, node_id: str, **kwargs) -> None:
        self.started.add(node_id)


def test_a_trial_runs_only_the_graph_up_to_the_tuned_output(tmp_path):
    """Tuning bm25.results never runs what comes after it (a graph's answer model)."""
    data = load_beir(write_stemming_dataset(tmp_path / "data", count=20))
    doc, registry = bm25_graph(), default_registry()
    space = parse_space(["bm25.top_k=3,10"], doc, registry, parse_value)
    hook = NodesRun()
    run = Executor(registry, cache=NodeCache(disk_dir=tmp_path / "cache"), hooks=[hook])
    result = tune(doc, data, "bm25.results", space, executor=run, held_out=0.5,
                  method="held-out", min_held_out=5)
    assert result.base is not None
    assert {"bm25", "index"} <= hook.started and not hook.started & {"rerank", "out"}
