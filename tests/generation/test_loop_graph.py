"""Whole graphs through the executor with the scripted backend: self-check loop, guard, router."""

from __future__ import annotations

from typing import Any

import pytest

from modrag_nodes import register_builtin_nodes
from modrag_studio.engine import Executor
from modrag_studio.engine.core.datatypes import Query, ScoredChunk
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry


class FixedRetriever(NodeType):
    """Test node: returns two fixed chunks (none when the question contains 'nothing')."""

    type_id = "test.fixed_retriever"
    inputs = (InputPort("query", Query),)
    outputs = (OutputPort("evidence", list[ScoredChunk]),)

    def run(self, ctx: NodeContext, params: Any, query: Query) -> dict[str, Any]:
        from tests.generation.conftest import scored

        if "nothing" in query.text:
            return {"evidence": []}
        return {"evidence": [
            scored("warranty", 0.9, text="The X200 pump has a two-year warranty."),
            scored("returns", 0.4, text="Returns are accepted within 30 days."),
        ]}


@pytest.fixture
def executor() -> Executor:
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(FixedRetriever)
    return Executor(registry=registry)


def _node(node_id: str, type_id: str, **params) -> dict:
    return {"id": node_id, "type": type_id, "params": params}


def _graph(loop_target: str = "rw.feedback", max_iterations: int = 2):
    nodes = [
        _node("q", "graph.input", name="question"),
        _node("llm", "llm.model", backend="test-fake"),
        _node("rw", "query.transform", mode="rewrite"),
        _node("ret", "test.fixed_retriever"),
        _node("guard", "guard.evidence", threshold=0.5),
        _node("pb", "prompt.build"),
        _node("gen", "llm.generate"),
        _node("parse", "parse.answer"),
        _node("check", "check.support", check_against="cited"),  # one judge call per visit
        _node("fb", "answer.fallback", message="Sorry, I cannot answer that reliably."),
        _node("sel", "answer.select"),
        _node("sel2", "answer.select"),
        _node("out", "graph.output", name="answer"),
    ]
    edges = [
        ("q.value", "rw.query"), ("llm.llm", "rw.llm"), ("rw.query", "ret.query"),
        ("ret.evidence", "guard.evidence"), ("rw.query", "guard.query"),
        ("guard.query", "pb.query"), ("guard.evidence", "pb.evidence"),
        ("pb.prompt", "gen.prompt"), ("llm.llm", "gen.llm"), ("rw.query", "gen.query"),
        ("gen.answer", "parse.answer"), ("pb.prompt", "parse.prompt"),
        ("parse.answer", "check.answer"), ("llm.llm", "check.llm"),
        ("check.unsupported", "fb.trigger"),
        ("check.supported", "sel.primary"), ("fb.answer", "sel.fallback"),
        ("sel.answer", "sel2.primary"), ("guard.fallback", "sel2.fallback"),
        ("sel2.answer", "out.value"),
    ]
    data = {"metadata": {"name": "self-check-loop"}, "nodes": nodes,
            "edges": [{"from": a, "to": b} for a, b in edges]}
    data["edges"].append({"from": "check.unsupported", "to": loop_target,
                          "loop": {"max_iterations": max_iterations}})
    return from_json_dict(data)


def _respond(verdicts: list[str], rewrites: list[str]):
    def responder(messages) -> str:
        system = messages[0].content if messages[0].role == "system" else ""
        user = messages[-1].content
        if "check answers against evidence" in system:
            return verdicts.pop(0)
        if user.startswith("Rewrite the question"):
            rewrites.append(user)
            return f"Rewritten query: X200 pump warranty (try {len(rewrites)})"
        if "only the evidence" in system:
            return "The X200 pump has a two-year warranty [warranty]."
        raise AssertionError(f"unexpected prompt: {user[:80]}")
    return responder


def _visits(result, node_id: str) -> list[str]:
    return [v.status for v in result.trace.visits_of(node_id)]


def test_self_check_says_no_every_time(executor, fake_llm) -> None:
    backend, _ = fake_llm
    rewrites: list[str] = []
    backend.respond_with(_respond(["no", "No.", "NO - unsupported"], rewrites))
    result = executor.run(_graph(max_iterations=2), {"question": "How long is the warranty?"})
    assert result.ok, result.trace.to_json()
    answer = result.outputs["answer"]
    assert answer.fallback is True and answer.text == "Sorry, I cannot answer that reliably."
    # the answer is the user's question's, whatever the third rewrite searched for
    assert answer.query == "How long is the warranty?" and len(rewrites) == 3
    for node_id in ("rw", "ret", "pb", "gen", "parse", "check"):
        assert _visits(result, node_id) == ["done"] * 3, node_id
    assert _visits(result, "fb") == ["done"] and _visits(result, "sel") == ["done"]
    checks = result.trace.visits_of("check")
    assert [v.details["attempt"] for v in checks] == [1, 2, 3]
    assert [v.details["verdict"] for v in checks] == ["unsupported"] * 3
    assert "iteration 1 of 2" in checks[0].details["loop"]
    assert "bound of 2 reached" in checks[2].details["loop"]
    # the rewrite saw the rejected answer on the second and third attempts
    assert "two-year warranty [warranty]" not in rewrites[0]
    assert all("two-year warranty [warranty]" in r for r in rewrites[1:])
    assert len(backend.calls) == 9


def test_self_check_says_no_then_yes(executor, fake_llm) -> None:
    backend, _ = fake_llm
    rewrites: list[str] = []
    backend.respond_with(_respond(["No, not supported.", "Yes, it is supported."], rewrites))
    result = executor.run(_graph(max_iterations=3), {"question": "How long is the warranty?"})
    assert result.ok, result.trace.to_json()
    answer = result.outputs["answer"]
    assert answer.fallback is False
    assert answer.text == "The X200 pump has a two-year warranty [warranty]."
    assert [(c.ref, c.valid) for c in answer.citations] == [("warranty", True)]
    assert answer.invalid_citations == []
    assert _visits(result, "check") == ["done", "done"]
    assert _visits(result, "rw") == ["done", "done"]
    assert _visits(result, "fb") == ["skipped"]
    assert result.trace.last_visit("sel").details["selected"] == "primary"
    assert [v.details["verdict"] for v in result.trace.visits_of("check")] == [
        "unsupported", "supported"]


def test_loop_back_to_prompt_builder(executor, fake_llm) -> None:
    backend, _ = fake_llm
    rewrites: list[str] = []
    backend.respond_with(_respond(["no", "yes"], rewrites))
    result = executor.run(_graph(loop_target="pb.feedback"), {"question": "Warranty?"})
    assert result.ok, result.trace.to_json()
    assert _visits(result, "rw") == ["done"] and len(rewrites) == 1
    assert _visits(result, "pb") == ["done", "done"]
    second_prompt = result.output_of("pb", "prompt", iteration=1)
    assert "judged not supported by the evidence" in second_prompt.user
    assert result.outputs["answer"].fallback is False


def test_guard_stops_the_pipeline(executor, fake_llm) -> None:
    backend, _ = fake_llm
    rewrites: list[str] = []
    backend.respond_with(lambda messages: "nothing at all")
    result = executor.run(_graph(), {"question": "nothing"})
    assert result.ok, result.trace.to_json()
    assert result.outputs["answer"].fallback is True
    assert result.outputs["answer"].text.startswith("I could not find reliable evidence")
    assert result.trace.last_visit("guard").details["reason"] == "no chunks"
    for node_id in ("pb", "gen", "parse", "check", "fb", "sel"):
        assert _visits(result, node_id) == ["skipped"], node_id
    assert len(backend.calls) == 1 and not rewrites  # only the rewrite ran


def test_router_activates_one_branch(executor, fake_llm) -> None:
    backend, _ = fake_llm
    backend.script("orders")
    data = {
        "metadata": {"name": "router"},
        "nodes": [
            _node("q", "graph.input", name="question"),
            _node("llm", "llm.model", backend="test-fake"),
            _node("route", "route.intent", routes=[
                {"name": "warranty", "keywords": ["warranty"]},
                {"name": "orders", "description": "deliveries"}]),
            _node("a", "debug.passthrough"), _node("b", "debug.passthrough"),
            _node("c", "debug.passthrough"),
            _node("oa", "graph.output", name="a"), _node("ob", "graph.output", name="b"),
            _node("oc", "graph.output", name="c"),
        ],
        "edges": [{"from": f, "to": t} for f, t in [
            ("q.value", "route.query"), ("llm.llm", "route.llm"), ("route.route_1", "a.value"),
            ("route.route_2", "b.value"), ("route.default", "c.value"), ("a.value", "oa.value"),
            ("b.value", "ob.value"), ("c.value", "oc.value")]],
    }
    doc = from_json_dict(data)
    result = executor.run(doc, {"question": "Where is my parcel?"})
    assert list(result.outputs) == ["b"] and result.outputs["b"].route == "orders"
    assert result.trace.last_visit("route").details["route"] == "orders"
    assert _visits(result, "a") == ["skipped"] and _visits(result, "c") == ["skipped"]
    result = executor.run(doc, {"question": "What is the warranty?"})
    assert list(result.outputs) == ["a"]
    assert len(backend.calls) == 1  # the rules decided the second question


def test_second_run_replays_from_cache(executor, fake_llm) -> None:
    backend, _ = fake_llm
    rewrites: list[str] = []
    backend.respond_with(_respond(["no", "yes"], rewrites))
    doc = _graph(max_iterations=3)
    first = executor.run(doc, {"question": "How long is the warranty?"})
    calls = len(backend.calls)
    second = executor.run(doc, {"question": "How long is the warranty?"})
    assert second.ok and len(backend.calls) == calls  # no model call the second time
    assert second.outputs["answer"] == first.outputs["answer"]
    assert [v.status for v in second.trace.visits_of("check")] == ["cached", "cached"]
