"""``modrag eval --evalset``: end to end on a tiny BM25 graph with a scripted chat backend and
an ``eval.judge`` node; the ``--min`` gate's exit code and message."""

from __future__ import annotations

import json

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.cli import main
from tests.tiny_rag import tiny_rag_graph

DOCS = {
    "maint.md": "# Pumps\n\nThe lubrication pump LP-07 is serviced every 500 operating hours.\n",
    "canteen.md": "# Canteen\n\nThe canteen opens at 06:00 and closes at 22:00.\n",
    "safety.md": "# Safety\n\nVisitors wear safety glasses in the machining hall.\n",
    "press.md": "# Press\n\nThe hydraulic press PR-300 stands at the Hillcrest Plant.\n",
}
QUESTIONS = [
    {"id": "q1", "question": "How often is LP-07 serviced?", "expected_facts": ["500 hours"],
     "expected_evidence": {"phrases": ["every 500 operating hours"]}, "answerable": True},
    {"id": "q2", "question": "When does the canteen close?", "expected_facts": ["22:00"],
     "expected_evidence": {"phrases": ["closes at 22:00"]}, "answerable": True},
    {"id": "u1", "question": "Who is the CEO?", "answerable": False},
]


class Scripted:
    """Answers LP-07 with a cited fact, refuses everything else; grades as a judge would,
    with one unreadable relevance reply."""

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        text = messages[-1].content
        if "numbered statement" in text:
            reply = "Sure!\n1: yes"
        elif "How well does the answer" in text:
            reply = "Score: 5/5" if "500" in text else "hmm, hard to say"
        elif "How often is LP-07" in text:
            reply = "LP-07 is serviced every 500 hours [1]."
        else:
            reply = "I don't know."
        return ChatResult(text=reply, model="scripted", prompt_tokens=10,
                          completion_tokens=len(reply.split()))


@pytest.fixture
def graph(tmp_path):
    register_backend("test-eval", Scripted)
    doc = tiny_rag_graph(tmp_path, DOCS, backend="test-eval", judge=True)
    (tmp_path / "tiny.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "set.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    yield tmp_path
    unregister_backend("test-eval")


def _eval(folder, *extra: str) -> int:
    return main(["eval", str(folder / "tiny.json"), "--evalset", str(folder / "set.jsonl"),
                 "--cache-dir", str(folder / "cache"), *extra])


def test_summary_per_question_results_judge_and_report(graph, capsys):
    code = _eval(graph, "--json", "--report", str(graph / "report.json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "3/3 questions" in err and "u1: refused" in err  # progress on stderr
    answers = json.loads(out)["answers"]
    # q1 answered and cited right, q2 wrongly refused, u1 rightly refused
    assert answers["fact_recall"] == 0.5
    assert answers["refusal_accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert answers["citation_validity"] == 1.0 and answers["citation_precision"] == 1.0
    assert answers["citation_recall"] == 0.5
    # judge: q1 judged (faithful, relevant); the refusals are fallback-free text, so judged
    # too; their relevance replies are unreadable, listed and left out of the mean
    assert answers["faithfulness"] == 1.0 and answers["answer_relevance"] == 1.0
    report = json.loads((graph / "report.json").read_text(encoding="utf-8"))
    unparsed = report["judge_unparsed"]
    assert {u["id"] for u in unparsed} == {"q2", "u1"}
    assert all(u["reply"] == "hmm, hard to say" for u in unparsed)
    rows = {r["id"]: r for r in report["per_question"]}
    assert rows["q1"]["judge"]["raw"]["answer_relevance"] == "Score: 5/5"
    assert rows["q1"]["metrics"]["tokens"] > 0 and rows["q1"]["citations"] == ["1"]
    assert report["nodes"]["retrieve.results"]["hit@1"] == 1.0


def test_min_gate_fails_with_exit_1_naming_metric_and_both_values(graph, capsys):
    assert _eval(graph, "--min", "fact_recall=0.4", "--min", "citation_validity=1") == 0
    capsys.readouterr()
    assert _eval(graph, "--min", "fact_recall=0.8", "--min", "refusal_accuracy=0.5") == 1
    err = capsys.readouterr().err
    assert "gate failed: fact_recall = 0.5000 is below the minimum 0.8000" in err
    assert "refusal_accuracy" not in err.split("gate failed")[-1]


def test_bad_gate_and_bad_set_are_invalid_input(graph, capsys):
    assert _eval(graph, "--min", "fact_recall=high") == 2
    assert "--min fact_recall=high: the value must be a number" in capsys.readouterr().err
    (graph / "set.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    assert _eval(graph) == 2
    assert "set.jsonl line 1: field 'question'" in capsys.readouterr().err


def test_min_without_evalset_and_a_missing_mode_are_refused(graph, capsys):
    tiny = str(graph / "tiny.json")
    assert main(["eval", tiny, "--dataset", str(graph), "--output", "retrieve.results",
                 "--min", "fact_recall=0.5"]) == 2
    assert main(["eval", tiny]) == 2
    assert capsys.readouterr().err.count("give --evalset") == 2


def test_judge_flag_judges_a_graph_without_a_judge_node(graph, capsys):
    doc = json.loads((graph / "tiny.json").read_text(encoding="utf-8"))
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] != "judge"]
    doc["edges"] = [e for e in doc["edges"] if "judge" not in e["from"] + e["to"]]
    doc["edges"].append({"from": "parse.answer", "to": "answer.value"})
    (graph / "tiny.json").write_text(json.dumps(doc), encoding="utf-8")
    assert _eval(graph, "--json") == 0
    assert "faithfulness" not in json.loads(capsys.readouterr().out)["answers"]
    assert _eval(graph, "--json", "--judge", "test-eval") == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert answers["faithfulness"] == 1.0 and answers["answer_relevance"] == 1.0


def test_answer_evaluation_stops_at_a_failure_every_question_would_share(graph, monkeypatch):
    """The one evaluation loop: a corpus that is gone fails the loader, which does not
    depend on the question, so the evaluation stops after the first question, naming it."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.answer_eval import evaluate_answers
    from modrag_studio.evaluation.evalset import load_evalset
    from modrag_studio.evaluation.loop import EvalError

    runs: list[dict] = []
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=None))
    run = executor.run
    monkeypatch.setattr(executor, "run", lambda doc, inputs, **kw: runs.append(inputs)
                        or run(doc, inputs, **kw))
    with pytest.raises(EvalError, match="node 'load'.*every query would fail alike"):
        evaluate_answers(load(graph / "tiny.json"), load_evalset(graph / "set.jsonl"),
                         executor=executor,
                         extra_inputs={"corpus": str(graph / "no-such-folder")})
    assert [r["question"] for r in runs if "question" in r] == [QUESTIONS[0]["question"]]
