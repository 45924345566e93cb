"""The run history: runs recorded beside the node cache, bounded, listed and pruned by
``modrag cache``, reopened as they ran after the graph changed, compared run against run."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.core.document import from_json_dict, load
from modrag_studio.engine.core.ports import chat_history
from modrag_studio.engine.history.changes import deltas, graph_changes
from modrag_studio.engine.history.store import HistoryError, RunHistory, graph_hash
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.pins import graph_key
from modrag_studio.evaluation.run_diff import diff_runs
from tests.server.mcp_helpers import BACKEND, DOCS, install
from tests.tiny_rag import tiny_rag_graph


@pytest.fixture
def faq(tmp_path: Path) -> Path:
    install()
    path = tmp_path / "faq.json"
    path.write_text(json.dumps(tiny_rag_graph(tmp_path, DOCS, backend=BACKEND, history=True)),
                    encoding="utf-8")
    return path


def run(doc, inputs, cache_dir: Path):
    return Executor(default_registry(), cache=NodeCache(disk_dir=cache_dir)).run(doc, inputs)


def test_a_recorded_run_comes_back_with_its_graph_trace_and_answer(faq, tmp_path):
    doc = load(faq)
    history = RunHistory(tmp_path / "history")
    result = run(doc, {"question": "When is LP-07 serviced?"}, tmp_path / "cache")
    record = history.record(graph_key(doc), doc, {"question": "When is LP-07 serviced?"},
                            result, variant="tuned")
    assert record.status == "ok" and record.variant == "tuned"
    assert record.answer.startswith("LP-07 is serviced every 500 hours")
    assert record.graph_hash == graph_hash(doc)
    listed = RunHistory(tmp_path / "history").runs(graph_key(doc))
    assert [r.run_id for r in listed] == [record.run_id]
    stored = history.load(record.run_id, default_registry())
    assert stored.result.trace.run_id == result.trace.run_id
    assert [v.node_id for v in stored.result.trace.visits] == \
        [v.node_id for v in result.trace.visits]
    answer = stored.result.outputs["answer"]
    assert answer.citations and answer.evidence  # the evidence the inspector opens
    retrieved = stored.result.output_of("retrieve", "results")
    assert retrieved[0].doc_id == "maint.md"
    assert stored.result.output_of("index", "index").n_chunks == 3  # a small index is kept
    assert stored.doc.node_ids() == doc.node_ids()


def test_a_run_reopens_as_it_ran_after_the_graph_changed(faq, tmp_path):
    doc = load(faq)
    history = RunHistory(tmp_path / "history")
    inputs = {"question": "When is LP-07 serviced?"}
    record = history.record(graph_key(doc), doc, inputs, run(doc, inputs, tmp_path / "c"))
    data = json.loads(faq.read_text(encoding="utf-8"))
    data["nodes"] = [n for n in data["nodes"] if n["id"] != "history"]
    data["edges"] = [e for e in data["edges"] if not e["from"].startswith("history.")]
    for node in data["nodes"]:
        if node["id"] == "retrieve":
            node["params"]["top_k"] = 3
    data["nodes"].append({"id": "note_out", "type": "graph.output", "params": {"name": "x"}})
    data["edges"].append({"from": "retrieve.results", "to": "note_out.value"})
    changed = from_json_dict(data)
    stored = history.load(record.run_id)
    assert graph_hash(changed) != record.graph_hash
    assert stored.doc.node("retrieve").params["top_k"] == 1  # the graph as it ran
    changes = graph_changes(stored.doc, changed)
    assert changes.added == ["note_out"] and changes.removed == ["history"]
    assert changes.params == {"retrieve": ["top_k"]}
    assert "nodes added: note_out" in changes.describe()
    assert "params changed: retrieve (top_k)" in changes.describe()
    assert graph_changes(stored.doc, stored.doc).none


def test_two_recorded_runs_compare_node_by_node(faq, tmp_path):
    doc = load(faq)
    history = RunHistory(tmp_path / "history")
    key = graph_key(doc)
    first = history.record(key, doc, {"question": "When is LP-07 serviced?"},
                           run(doc, {"question": "When is LP-07 serviced?"}, tmp_path / "c"))
    second = history.record(key, doc, {"question": "When does the canteen open?"},
                            run(doc, {"question": "When does the canteen open?"},
                                tmp_path / "c"))
    a, b = history.load(first.run_id), history.load(second.run_id)
    nodes = diff_runs(a.doc, a.result, b.doc, b.result)
    assert nodes["load"]["status"] == "same"
    assert nodes["retrieve"]["status"] == "changed"
    assert nodes["parse"]["badge"] == "answer differs"
    delta = deltas(first, second)
    assert delta["answer_changed"] and not delta["outcome_changed"]
    assert "answer changed" in delta["label"]
    assert deltas(first, first)["label"].endswith("same answer")


def test_history_is_bounded_by_runs_per_graph_and_bytes_keeping_the_baseline(faq, tmp_path):
    doc = load(faq)
    inputs = {"question": "When is LP-07 serviced?"}
    result = run(doc, inputs, tmp_path / "c")
    history = RunHistory(tmp_path / "history", max_runs=3)
    records = [history.record("g", doc, inputs, result) for _ in range(3)]
    history.set_baseline("g", records[0].run_id)
    for _ in range(2):
        records.append(history.record("g", doc, inputs, result))
    kept = {r.run_id for r in history.runs("g")}
    assert len(kept) == 3
    assert records[0].run_id in kept  # the baseline outlives newer runs
    assert records[1].run_id not in kept and records[2].run_id not in kept
    assert not (history.root / "runs" / f"{records[1].run_id}.run").exists()
    with pytest.raises(HistoryError, match="not in the history"):
        history.load(records[1].run_id)
    size = records[-1].size
    index = history.usage()[0] - sum(r.size for r in history.runs("g"))
    removed, freed = history.prune(max_bytes=size + index)  # room for the index and one run
    assert removed == 2 and freed >= size
    assert [r.run_id for r in history.runs("g")] == [records[0].run_id]
    assert history.baseline("g").run_id == records[0].run_id
    assert history.clear() == (1, records[0].size)
    assert history.runs() == [] and history.baseline("g") is None


def _record_many(root: str, graph: str, count: int) -> None:
    from tests.engine.test_run_history import _fake_result

    history = RunHistory(root)
    doc = from_json_dict({"schema_version": 1, "nodes": [], "edges": []})
    for i in range(count):
        history.record(graph, doc, {"question": f"{graph} {i}"}, _fake_result(i))


def _fake_result(i: int):
    from modrag_studio.engine.run.executor import RunResult
    from modrag_studio.engine.run.trace import Trace

    result = RunResult(trace=Trace(run_id=f"r{i}", graph_name="g", started_at=time.time(),
                                   duration_s=0.01 * i))
    result.outputs = {"answer": f"answer {i}"}
    return result


def test_two_processes_record_into_one_history(tmp_path):
    root = str(tmp_path / "history")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_record_many, args=(root, name, 15))
               for name in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    history = RunHistory(root)
    assert sorted(g for g, _ in history.graphs()) == ["a", "b"]
    assert len(history.runs("a")) == 15 and len(history.runs("b")) == 15
    assert len(list((Path(root) / "runs").glob("*.run"))) == 30
    assert not list((Path(root) / "runs").glob("*.tmp"))


def test_values_too_large_or_not_picklable_are_named_not_kept():
    from modrag_studio.engine.history.store import _kept

    kept = _kept({"small": [1, 2], "big": "x" * (2 * 1024 * 1024), "lock": __import__(
        "threading").Lock()})
    assert kept["small"] == [1, 2]
    assert kept["big"].startswith("<not kept in the run history: too large")
    assert kept["lock"].startswith("<not kept in the run history:")


def test_filters_match_question_text_outcome_and_variant(tmp_path):
    history = RunHistory(tmp_path / "history")
    doc = from_json_dict({"schema_version": 1, "nodes": [], "edges": []})
    history.record("g", doc, {"question": "pump 100%_done"}, _fake_result(1), variant="v")
    history.record("g", doc, {"question": "canteen hours"}, _fake_result(2))
    assert [r.question for r in history.runs("g", text="PUMP")] == ["pump 100%_done"]
    assert [r.question for r in history.runs("g", text="%_")] == ["pump 100%_done"]
    assert history.runs("g", text="0%x") == []
    assert [r.question for r in history.runs("g", variant="")] == ["canteen hours"]
    assert [r.question for r in history.runs("g", variant="v")] == ["pump 100%_done"]
    assert history.runs("g", status="failed") == []


def test_modrag_run_record_then_modrag_cache_lists_prunes_and_clears(faq, tmp_path, capsys):
    from modrag_studio.cli import main

    cache = tmp_path / "cli-cache"
    for question in ("When is LP-07 serviced?", "When does the canteen open?"):
        code = main(["run", str(faq), "-i", f"question={question}", "--record", "-q",
                     "--cache-dir", str(cache)])
        assert code == 0
    assert "recorded run" not in capsys.readouterr().err  # -q: quiet
    assert main(["run", str(faq), "-i", "question=unrecorded", "-q",
                 "--cache-dir", str(cache)]) == 0
    capsys.readouterr()
    assert main(["cache", "history", "--cache-dir", str(cache), "--graph", str(faq)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert "canteen" in lines[0] and "LP-07" in lines[1]  # newest first
    assert all(" ok " in line and " cli " in line for line in lines)
    assert main(["cache", "info", "--cache-dir", str(cache)]) == 0
    assert "run history: 2 run(s)" in capsys.readouterr().out
    assert main(["cache", "prune", "--cache-dir", str(cache), "--max-runs", "1"]) == 0
    assert "removed 1 recorded run(s)" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(cache)]) == 0
    assert "removed 1 recorded run(s)" in capsys.readouterr().out
    assert main(["cache", "history", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out.strip() == "no recorded runs"


def test_a_follow_up_question_brings_the_earlier_turns_into_the_prompt(faq, tmp_path):
    doc = load(faq)
    earlier = json.dumps([{"role": "user", "content": "When is LP-07 serviced?"},
                          {"role": "assistant", "content": "Every 500 hours [1]."}])
    result = run(doc, {"question": "And who services it?", "history": earlier},
                 tmp_path / "c")
    assert result.ok, result.trace.failure_summary()
    messages = result.output_of("prompt", "prompt").messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1].content == "When is LP-07 serviced?"
    assert messages[2].content == "Every 500 hours [1]."
    assert "And who services it?" in messages[3].content
    first = run(doc, {"question": "When is LP-07 serviced?"}, tmp_path / "c")
    assert [m.role for m in first.output_of("prompt", "prompt").messages] == ["system", "user"]


def test_chat_history_text_is_json_or_role_lines_and_bad_text_is_named():
    assert chat_history("") == []
    assert chat_history("user: hi\nassistant: hello\nthere") == [
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content="hello\nthere")]
    with pytest.raises(ValueError, match="names no role"):
        chat_history("hello")
    with pytest.raises(ValueError, match="role, content"):
        chat_history('[{"content": "x"}]')
