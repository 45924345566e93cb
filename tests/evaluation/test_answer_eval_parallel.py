"""Answer evaluation with several questions at once (``parallel``): the chat model is asked
concurrently, the resources are told how many runs share them, rows arrive in question
order with the same scores as one at a time, a failing question loses no other's row, and a
cancel starts no further question."""

from __future__ import annotations

import json
import threading
import time

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.resources import Resources
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.answer_eval import evaluate_answers
from modrag_studio.evaluation.evalset import load_evalset
from tests.tiny_rag import tiny_rag_graph

DOCS = {f"doc{n}.md": f"# Part {n}\n\nThe part P-{n:02d} weighs {n * 10} kilograms.\n"
        for n in range(1, 9)}
QUESTIONS = [{"id": f"q{n}", "question": f"How much does P-{n:02d} weigh?",
              "expected_facts": [f"{n * 10} kilograms"], "answerable": True}
             for n in range(1, 9)]


class Concurrent:
    """Answers from its evidence after a pause; counts the calls running at once and the
    concurrency the run's resources report; fails for P-05."""

    lock = threading.Lock()
    running = 0
    most = 0
    told: list[int] = []

    holds_models = True  # given the run's resources, as a backend keeping models is

    def chat(self, spec, messages, *, on_token, cancel, resources) -> ChatResult:
        cls = type(self)
        with cls.lock:
            cls.running += 1
            cls.most = max(cls.most, cls.running)
            cls.told.append(resources.concurrent_runs)
        try:
            time.sleep(0.15)
            text = messages[-1].content
            if "P-05" in text.split("Question:")[-1]:
                raise RuntimeError("the model server dropped the request")
            weight = text.split("weighs ")[1].split(" kilograms")[0]
            reply = f"It weighs {weight} kilograms [1]."
            return ChatResult(text=reply, model="concurrent", prompt_tokens=10,
                              completion_tokens=len(reply.split()))
        finally:
            with cls.lock:
                cls.running -= 1


@pytest.fixture
def graph(tmp_path):
    register_backend("test-parallel", Concurrent)
    Concurrent.running = Concurrent.most = 0
    Concurrent.told = []
    doc = tiny_rag_graph(tmp_path, DOCS, backend="test-parallel")
    (tmp_path / "tiny.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "set.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    yield tmp_path
    unregister_backend("test-parallel")


def _evaluate(folder, parallel: int, **kwargs):
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=None),
                        resources=Resources())
    report = evaluate_answers(load(folder / "tiny.json"), load_evalset(folder / "set.jsonl"),
                              executor=executor, parallel=parallel, **kwargs)
    return report, executor


def test_questions_run_concurrently_and_rows_keep_their_order_and_scores(graph):
    one, _ = _evaluate(graph, 1)
    assert Concurrent.most == 1 and set(Concurrent.told) == {1}
    Concurrent.most, Concurrent.told = 0, []
    seen: list[int] = []
    three, executor = _evaluate(graph, 3, on_progress=lambda done, total, row: seen.append(done))
    assert Concurrent.most == 3  # three chat calls were in flight together
    assert set(Concurrent.told) == {3}  # and the run's resources said so
    assert executor.resources.concurrent_runs == 1  # only while the evaluation ran
    assert seen == list(range(1, 9))
    assert [r.id for r in three.results] == [q["id"] for q in QUESTIONS]
    for a, b in zip(one.results, three.results, strict=True):
        assert (a.answer, a.error, a.metrics["fact_recall"]) == (
            b.answer, b.error, b.metrics["fact_recall"])
    # the failing question is named, every other question is answered and scored
    failed = [r for r in three.results if r.error]
    assert [r.id for r in failed] == ["q5"] and "dropped the request" in failed[0].error
    assert all(r.metrics["fact_recall"] == 1.0 for r in three.results if not r.error)


def test_a_cancel_starts_no_further_question(graph):
    cancel = CancelToken()
    scored: list[str] = []

    def progress(done, total, row):
        scored.append(row.id)
        if done == 2:
            cancel.cancel()

    report, _ = _evaluate(graph, 2, cancel=cancel, on_progress=progress)
    # rows 1-2 scored; only the questions already in flight (two workers) finish after it
    assert 2 <= len(report.results) <= 5 < len(QUESTIONS)
    assert [r.id for r in report.results] == [q["id"] for q in QUESTIONS][: len(report.results)]
    assert len(Concurrent.told) <= 5


def test_cli_parallel_flag(graph, capsys):
    assert main(["eval", str(graph / "tiny.json"), "--evalset", str(graph / "set.jsonl"),
                 "--cache-dir", str(graph / "cache"), "--parallel", "2", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert Concurrent.most == 2
    assert out["answers"]["fact_recall"] == pytest.approx(7 / 8)
