"""The sample graphs on Qwen2.5-Coder-1.5B's real answers, replayed from tests/cassettes/.

CI never runs Qwen; these tests run the real prompts, parsers, grounding checks and citations
against the replies Qwen gave when the cassettes were recorded (tests/cassettes/README.md says
how to record them again). Every replay forbids building a chat backend, so no model is loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modrag_nodes.calls.cassette import CallNotRecorded, Cassette, using
from modrag_nodes.generation.prompt import SMALL_SYSTEM
from modrag_nodes.llm import client
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache, load

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_graphs"
CORPUS = ROOT / "resources" / "sample_corpus"
CASSETTES = ROOT / "tests" / "cassettes"
QWEN = "embedded:qwen2.5-coder-1.5b-instruct-q4_k_m"
LP07 = "How often is the lubrication pump LP-07 serviced?"


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building any chat backend (and so loading a model) fails the test."""
    def refuse(name: str):
        raise AssertionError(f"chat backend '{name}' was built during a replay")

    monkeypatch.setattr(client, "get_backend", refuse)


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    home = tmp_path_factory.mktemp("cassette-home")
    return Executor(default_registry(), cache=NodeCache(memory_items=2048), work_dir=home)


def replay(executor: Executor, graph: str, question: str, cassette: str, **params):
    doc = load(SAMPLES / graph)
    doc.node("corpus").params["default"] = str(CORPUS)
    for key, value in params.items():
        node, _, param = key.partition("__")
        doc.node(node).params[param] = value
    with using(Cassette.replay(CASSETTES / cassette)) as tape:
        result = executor.run(doc, {"question": question})
    return result, tape


def recorded(cassette: str) -> list[dict]:
    return json.loads((CASSETTES / cassette).read_text(encoding="utf-8"))["calls"]


def test_basic_rag_lp07_replays_qwens_cited_grounded_answer(executor) -> None:
    result, tape = replay(executor, "basic_rag.json", LP07, "basic_rag_lp07.json")
    assert result.ok, result.trace.to_json()[-2000:]
    answer = result.outputs["answer"]
    assert answer.text == "The lubrication pump LP-07 is serviced every 500 operating hours. [2]"
    assert [(c.ref, c.chunk_id, c.valid) for c in answer.citations] == [
        ("2", "en_maintenance_schedule.md#1", True)]
    assert not answer.fallback
    assert result.trace.last_visit("ground").details["route"] == "grounded"
    generate = result.trace.last_visit("generate").details
    assert generate["model"] == QWEN and generate["model_load_s"] is None
    # Qwen wrapped its sentence in the answer pattern's brackets; the parser took them off
    assert recorded("basic_rag_lp07.json")[0]["response"]["text"].startswith("<The lubrication")
    assert tape.summary().startswith("replayed 1 model calls")


def test_basic_rag_chinese_ac05_replays_a_chinese_answer_citing_the_chinese_schedule(
        executor) -> None:
    result, _ = replay(executor, "basic_rag.json", "空压机 AC-05 多久保养一次？",
                       "basic_rag_ac05.json")
    assert result.ok, result.trace.to_json()[-2000:]
    answer = result.outputs["answer"]
    assert answer.text == "空压机 AC-05 每1个月保养一次。[2]"
    assert [(c.doc_id, c.valid) for c in answer.citations] == [("zh_maintenance.md", True)]
    assert result.trace.last_visit("ground").details["route"] == "grounded"
    prompt = recorded("basic_rag_ac05.json")[0]["request"]["messages"][-1]["content"]
    assert prompt.endswith("请用中文回答。")


def test_self_check_rag_replays_qwens_rewrite_answer_and_two_verdicts(executor) -> None:
    """Four real calls: the rewrite, the answer, and the judge's 'No' on the cited block then
    'Yes' on the whole evidence (Qwen cited the wrong block; the check says so)."""
    result, tape = replay(executor, "self_check_rag.json", "How often is pump LP-07 serviced?",
                          "self_check_rag_lp07.json")
    assert result.ok, result.trace.to_json()[-2000:]
    rewrite = result.trace.last_visit("rewrite").details
    assert rewrite["rewrite_reply"] == "pump lp-07 service frequency"
    assert rewrite["drift_rejected"] == []
    answer = result.outputs["answer"]
    assert answer.text == "Pump LP-07 is serviced every 500 operating hours. [2]"
    assert [c.chunk_id for c in answer.citations] == ["en_cnc_machines.md#2"]
    check = result.trace.last_visit("check").details
    assert (check["judge_replies"], check["route"]) == (["No", "Yes"], "supported")
    assert "cited block(s) [2] do not support the answer, the whole evidence does" in \
        check["reason"]
    assert result.trace.last_visit("fallback").status == "skipped"
    assert tape.replayed == 4


def test_a_changed_prompt_fails_naming_the_node_with_a_readable_diff(executor) -> None:
    changed = SMALL_SYSTEM.replace("Write a short answer", "Write a brief answer")
    result, tape = replay(executor, "basic_rag.json", LP07, "basic_rag_lp07.json",
                          prompt__system=changed)
    assert not result.ok and tape.summary().endswith("(no model loaded); 1 not in the file")
    error = result.trace.last_visit("generate").error
    assert error.type == CallNotRecorded.__name__
    assert "chat call of node generate is not in the recorded calls" in error.message
    assert "closest recorded request (call 1 of 1, node generate) differs" in error.message
    # one sentence a line: the diff marks the sentence that changed, not the whole message
    assert "\n-Write a short answer that states the facts the evidence gives" in error.message
    assert "\n+Write a brief answer that states the facts the evidence gives" in error.message
    assert "\n Answer the question from the numbered evidence.\n" in error.message


def test_evalset_scores_qwens_recorded_answers(tmp_path, capsys) -> None:
    """``modrag eval --evalset`` on three questions of the sample set, Qwen's answers replayed:
    the real parsers, citation checks and metrics on the model's real replies."""
    report = tmp_path / "report.json"
    code = main(["eval", str(SAMPLES / "basic_rag.json"), "--limit", "3", "--json",
                 "--evalset", str(CORPUS / "eval_questions.jsonl"), "--report", str(report),
                 "--replay-calls", str(CASSETTES / "evalset_basic_rag.json")])
    assert code == 0, capsys.readouterr().err[-3000:]
    assert "replayed 3 model calls" in capsys.readouterr().err
    data = json.loads(report.read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in data["per_question"]}
    assert rows["q01"]["answer"] == ("Planning Service, Shipping Service, Order Service, "
                                     "Reporting Service [2][4]")
    assert rows["q02"]["answer"] == ("The Order Service depends on Payment Gateway, Inventory "
                                     "Service, and Warehouse DB. [2][3]")
    assert rows["q03"]["answer"].startswith("If the Warehouse DB goes down, the following "
                                            "services will be affected downstream: [2]\n- ")
    assert [rows[q]["citations"] for q in ("q01", "q02", "q03")] == [
        ["2", "4"], ["2", "3"], ["2", "4"]]
    assert not any(row["refused"] or row["error"] for row in rows.values())
    answers = data["answers"]
    assert (answers["fact_recall"], answers["citation_validity"]) == (1.0, 1.0)
    assert answers["citation_precision"] == pytest.approx(0.8333, abs=1e-4)
    assert answers["citation_recall"] == pytest.approx(0.7778, abs=1e-4)


BLOCKER = """
import importlib.abc, sys
BLOCKED = ("xllamacpp", "llama_cpp", "transformers", "torch", "modrag_nodes.llm.embedded",
           "modrag_nodes.llm.qwen_model", "modrag_nodes.llm.xllamacpp_runtime")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith(BLOCKED):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from modrag_studio.cli import main
code = main(sys.argv[1:])
print("loaded:", sorted(m for m in sys.modules if m.startswith(BLOCKED)), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.slow
def test_cli_replay_runs_with_the_models_modules_unimportable(tmp_path) -> None:
    """``modrag run --replay-calls`` with every chat-model module blocked and an empty model
    folder gives Qwen's answer and the same trace as the recorded run."""
    env = {**os.environ, "MODRAG_MODEL_DIR": str(tmp_path / "no-models")}
    trace = tmp_path / "trace.json"
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, "run", str(SAMPLES / "basic_rag.json"),
         "-i", f"question={LP07}", "-i", f"corpus={CORPUS}", "--json", "--quiet",
         "--replay-calls", str(CASSETTES / "basic_rag_lp07.json"), "--trace-out", str(trace)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loaded: []" in done.stderr and "replayed 1 model calls" in done.stderr
    answer = json.loads(done.stdout)["outputs"]["answer"]
    assert answer["text"] == "The lubrication pump LP-07 is serviced every 500 operating hours. [2]"
    visits = {v["node_id"]: v for v in json.loads(trace.read_text(encoding="utf-8"))["visits"]}
    assert visits["generate"]["status"] == "done"
    assert visits["ground"]["details"]["route"] == "grounded"
