"""``modrag compare --evalset``: answer metrics of two variants with paired statistics, null
metrics left out of their pairs, the flipped questions, and report-vs-report comparison."""

from __future__ import annotations

import json

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.evaluation.compare import compare_reports, flip_of
from tests.evaluation.test_answer_eval_cli import Scripted, graph  # noqa: F401 (fixture)

ANSWERS_B = {"When does the canteen close?": "The canteen closes at 22:00 [1].",
             "Who is the CEO?": "The CEO is Jane Doe [1]."}


class ScriptedB(Scripted):
    """Like ``Scripted`` but answers the canteen question (right) and the CEO one (wrongly:
    it is not in the corpus)."""

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        text = messages[-1].content
        for question, reply in ANSWERS_B.items():
            if question in text and "numbered statement" not in text and \
                    "How well does the answer" not in text:
                return ChatResult(text=reply, model="scripted-b", prompt_tokens=12,
                                  completion_tokens=len(reply.split()))
        return super().chat(spec, messages, on_token=on_token, cancel=cancel)


@pytest.fixture
def folder(graph):  # noqa: F811 (the imported fixture)
    register_backend("test-eval-b", ScriptedB)
    doc = json.loads((graph / "tiny.json").read_text(encoding="utf-8"))
    for node in doc["nodes"]:
        if node["id"] == "llm":
            node["params"]["backend"] = "test-eval-b"
    (graph / "tiny_b.json").write_text(json.dumps(doc), encoding="utf-8")
    yield graph
    unregister_backend("test-eval-b")


def _json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip().startswith("{") else {
        "stderr": captured.err}


def test_variant_on_an_evalset_prints_the_contract_nulls_and_flips(folder, capsys):
    code, result = _json(capsys, [
        "compare", str(folder / "tiny.json"), "--variant", "b:llm.backend=test-eval-b",
        "--evalset", str(folder / "set.jsonl"), "--json", "--report", str(folder / "cmp.json"),
        "--cache-dir", str(folder / "cache")])
    assert code == 0, result
    assert result["comparable"] and result["evalset"]["questions"] == 3
    assert (result["variants"]["a"]["name"], result["variants"]["b"]["name"]) == ("base", "b")
    assert "randomization" in result["test"]["name"] and result["test"]["seed"] == 15
    metrics = result["metrics"]
    assert set(metrics) >= {"fact_recall", "citation_precision", "citation_recall",
                            "citation_validity", "refusal_accuracy", "answer_length",
                            "latency_s", "tokens", "faithfulness", "answer_relevance"}
    for values in metrics.values():
        assert set(values) >= {"a", "b", "delta", "ci95", "p_value", "n"}
    # u1 (unanswerable) has no fact recall: two pairs, not three, and no NaN anywhere
    facts = metrics["fact_recall"]
    assert (facts["n"], facts["a"], facts["b"], facts["delta"]) == (2, 0.5, 1.0, 0.5)
    assert facts["ci95"][0] <= facts["delta"] <= facts["ci95"][1]
    assert facts["p_value"] == 1.0  # exact: one non-zero delta of two signs
    # A cited nothing on q2 and u1 (validity null there): only q1 pairs
    assert metrics["citation_validity"]["n"] == 1
    assert metrics["citation_precision"] == {**metrics["citation_precision"], "n": 1,
                                             "a": 1.0, "b": 1.0, "delta": 0.0}
    refusal = metrics["refusal_accuracy"]
    assert refusal["n"] == 3 and refusal["a"] == refusal["b"] == pytest.approx(2 / 3, abs=1e-4)
    assert "NaN" not in json.dumps(result)
    q = result["queries"]
    assert (q["wins"], q["losses"], q["ties"], q["n"]) == (1, 1, 1, 3)
    flips = {f["id"]: f for f in result["flipped"]}
    assert set(flips) == {"q2", "u1"}
    assert flips["q2"]["outcome"] == "gained" and flips["q2"]["facts_gained"] == ["22:00"]
    assert flips["q2"]["refusal_right_in"] == "b"
    assert flips["u1"]["outcome"] == "lost" and flips["u1"]["refusal_right_in"] == "a"
    assert flips["u1"]["refused"] == {"a": True, "b": False}
    # both answers and their citations per question, for a side-by-side view
    rows = {r["id"]: r for r in result["per_question"]}
    assert rows["q2"]["a"]["answer"] == "I don't know."
    assert rows["q2"]["b"]["answer"] == ANSWERS_B["When does the canteen close?"]
    assert rows["q2"]["b"]["citations"] == ["1"] and rows["q2"]["a"]["citations"] == []
    # the ranked output both variants share, scored against the expected evidence
    node = result["nodes"]["retrieve.results"]
    assert node["metrics"]["hit@1"]["delta"] == 0.0 and node["queries"]["n"] == 2
    assert json.loads((folder / "cmp.json").read_text(encoding="utf-8")) == result
    assert main(["compare", str(folder / "cmp.json"), str(folder / "cmp.json")]) == 2
    assert "cmp.json is the output of modrag compare" in capsys.readouterr().err


def test_two_evalset_reports_compare_without_running_and_refuse_other_sets(folder, capsys):
    for graph_file, report in (("tiny.json", "ra.json"), ("tiny_b.json", "rb.json")):
        assert main(["eval", str(folder / graph_file), "--evalset", str(folder / "set.jsonl"),
                     "--report", str(folder / report), "--cache-dir",
                     str(folder / "cache")]) == 0
    capsys.readouterr()
    code, result = _json(capsys, ["compare", str(folder / "ra.json"), str(folder / "rb.json"),
                                  "--json"])
    assert code == 0
    assert result["variants"]["a"]["graph_sha256"] != result["variants"]["b"]["graph_sha256"]
    assert result["metrics"]["fact_recall"]["delta"] == 0.5
    assert [f["id"] for f in result["flipped"]] == ["q2", "u1"]
    # text output names the flips
    assert main(["compare", str(folder / "ra.json"), str(folder / "rb.json")]) == 0
    text = capsys.readouterr().out
    assert "q2 gained: B found '22:00'; A refused wrongly, B answered" in text
    assert "u1 lost: A refused rightly, B answered" in text

    lines = (folder / "set.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "other.jsonl").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    assert main(["eval", str(folder / "tiny_b.json"), "--evalset", str(folder / "other.jsonl"),
                 "--report", str(folder / "rc.json"), "--cache-dir",
                 str(folder / "cache")]) == 0
    capsys.readouterr()
    assert main(["compare", str(folder / "ra.json"), str(folder / "rc.json"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "evaluation sets differ" in err and "set.jsonl" in err and "other.jsonl" in err


def _row(id_: str, metrics: dict, missed=(), refused=False, error="") -> dict:
    return {"id": id_, "question": id_, "answerable": True, "answer": "", "refused": refused,
            "metrics": metrics, "missed_facts": list(missed), "citations": [], "error": error}


def test_null_metrics_stay_out_of_pairs_and_flips_need_a_change():
    both = {"fact_recall": 1.0, "refusal_accuracy": 1.0, "citation_validity": None}
    a = [_row("x", both), _row("y", {"fact_recall": 0.5, "refusal_accuracy": 1.0,
                                     "citation_validity": 1.0}, missed=["f2"])]
    a[0]["ranking"] = {"fuse.results": {"hit@1": 1.0, "mrr@10": 1.0}}
    a[1]["ranking"] = {"fuse.results": {"hit@1": 0.0, "mrr@10": 0.5}}
    b_ranking = {"fuse.results": {"hit@1": 1.0, "mrr@10": 1.0}}
    b = [_row("x", {**both, "citation_validity": 0.0}),
         _row("y", {"fact_recall": 0.5, "refusal_accuracy": 1.0, "citation_validity": 0.5},
              missed=["f1"])]
    b[1]["ranking"] = b_ranking  # x: B ranked nothing there (an empty list scores 0)

    def report(rows):
        return {"evalset": {"path": "s.jsonl", "sha256": "abc"}, "answers": {},
                "answer_output": "answer", "per_question": rows}

    result = compare_reports(report(a), report(b), identity_a={"name": "a"},
                                    identity_b={"name": "b"})
    validity = result["metrics"]["citation_validity"]
    assert (validity["n"], validity["a"], validity["b"]) == (1, 1.0, 0.5)
    assert result["metrics"]["tokens"] == {"a": None, "b": None, "delta": None, "ci95": None,
                                           "p_value": None, "n": 0, "exact": True}
    node = result["nodes"]["fuse.results"]
    assert (node["metrics"]["mrr@10"]["a"], node["metrics"]["mrr@10"]["b"]) == (0.75, 0.5)
    assert node["queries"] == {"wins": 1, "losses": 1, "ties": 0, "by": "mrr@10", "n": 2}
    # same fact recall on y, but a different fact found: a mixed flip; x did not flip
    assert [(f["id"], f["outcome"], f["facts_gained"], f["facts_lost"])
            for f in result["flipped"]] == [("y", "mixed", ["f2"], ["f1"])]
    assert flip_of(_row("z", both), _row("z", both)) is None
    failed = flip_of(_row("z", {"fact_recall": 0.0}), _row("z", {"fact_recall": 0.0},
                                                           error="llm: boom"))
    assert failed is not None and failed["error_in"] == "b" and failed["outcome"] == "lost"


def test_the_variant_reruns_only_what_it_changed(folder, monkeypatch):
    from modrag_studio.commands.common import parse_value
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.edit.variants import parse_variant_args, resolve_variant
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.answer_eval import run_variants_on_evalset
    from modrag_studio.evaluation.evalset import load_evalset

    base = load(folder / "tiny.json")
    spec = parse_variant_args(["b:llm.backend=test-eval-b"], parse_value)["b"]
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=folder / "cache2"))
    ran: list[tuple[str, set[str]]] = []
    run = executor.run

    def recording_run(doc, inputs, **kwargs):
        result = run(doc, inputs, **kwargs)
        ran.append((doc.metadata.name, set(result.trace.ran())))
        return result

    monkeypatch.setattr(executor, "run", recording_run)
    reports = run_variants_on_evalset(
        [("base", base), ("b", resolve_variant(base, spec, default_registry()))],
        load_evalset(folder / "set.jsonl"),
        executor=executor)
    assert [len(r.results) for r in reports] == [3, 3]
    variant_runs = [nodes - {"corpus", "question"} for nodes in (r for _, r in ran[3:])]
    per_question = {"generate", "parse", "judge", "answer"}
    # the variant's model node once, then only what depends on its answers; the retrieval
    # side (load, split, index, retrieve) comes from the base's runs
    assert variant_runs == [per_question | {"llm"}, per_question, per_question]
    assert {"load", "split", "index", "retrieve", "llm"} <= ran[0][1]
