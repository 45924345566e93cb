"""A graph built from the palette (load -> split -> index -> retrieve -> prompt -> model ->
parse -> output) shows its model's answer unchecked: ``unchecked_answers`` warns on the
parser, ``make_safe`` inserts the grounding check, the refusal and the selector (with one
retry of the prompt), and the safe graph refuses an answer the evidence does not state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.composition import SAFE_ANSWERS, default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.compose.check import validate_graph
from modrag_studio.engine.core.document import GraphDocument, load
from modrag_studio.engine.core.validation import errors_only
from modrag_studio.engine.evidence.safety import UNCHECKED, make_safe, unchecked_answers
from tests.tiny_rag import tiny_rag_graph

BACKEND = "test-safety"
PUMPS = {"pumps.md": "The lubrication pump LP-07 is serviced every 500 operating hours.\n",
         "canteen.md": "The canteen opens at noon and closes at three.\n",
         "press.md": "The hydraulic press PR-300 is rated at 300 tonnes.\n"}


class Replies:
    def __init__(self) -> None:
        self.replies: list[str] = []

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        return ChatResult(text=self.replies.pop(0), model="scripted")


@pytest.fixture
def replies():
    backend = Replies()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


@pytest.fixture
def palette_graph(tmp_path: Path, replies) -> GraphDocument:
    data = tiny_rag_graph(tmp_path, PUMPS, backend=BACKEND)
    return GraphDocument.model_validate(data)


def test_an_unchecked_answer_is_a_warning_on_the_parser(palette_graph) -> None:
    registry = default_registry()
    [problem] = unchecked_answers(palette_graph, registry)
    assert (problem.code, problem.node_id, problem.severity) == (UNCHECKED, "parse", "warning")
    assert "no grounding check" in problem.message and "'answer'" in problem.message
    assert not errors_only(validate_graph(palette_graph, registry))  # it still runs


def test_make_safe_inserts_check_refusal_and_selector(palette_graph) -> None:
    registry = default_registry()
    safe = make_safe(palette_graph, registry, SAFE_ANSWERS)
    assert unchecked_answers(safe, registry) == []
    assert not errors_only(validate_graph(safe, registry))
    types = {n.id: n.type for n in safe.nodes}
    assert (types["ground"], types["refuse"], types["select"]) == (
        "check.grounding", "answer.refuse", "answer.select")
    wires = {(e.source, e.target): e.loop for e in safe.edges}
    assert ("parse.answer", "ground.answer") in wires
    assert ("select.answer", "answer.value") in wires
    assert ("parse.answer", "answer.value") not in wires
    assert ("question.value", "ground.query") in wires
    assert wires[("ground.ungrounded", "prompt.feedback")].max_iterations == 1
    assert make_safe(safe, registry, SAFE_ANSWERS) is safe  # nothing left to do


def test_the_safe_graph_refuses_what_the_evidence_does_not_state(
        palette_graph, replies, tmp_path) -> None:
    safe = make_safe(palette_graph, default_registry(), SAFE_ANSWERS)

    def ask(doc: GraphDocument, *said: str):
        replies.replies = list(said)
        executor = Executor(default_registry(), cache=NodeCache(), work_dir=tmp_path / "data")
        return executor.run(doc, {"question": "How often is LP-07 serviced?"}).outputs["answer"]

    invented = "The lubrication pump LP-07 is serviced every 300 operating hours [1]."
    answer = ask(safe, invented, invented)
    assert answer.fallback and answer.text == "The documents do not mention 300."
    right = ask(safe, "The lubrication pump LP-07 is serviced every 500 operating hours [1].")
    assert not right.fallback and "500 operating hours" in right.text
    assert ask(palette_graph, invented).text == invented  # the palette graph shows it as it is


def test_the_samples_check_their_answers() -> None:
    """(modular_rag's chit-chat branch answers unchecked, and is warned about.)"""
    registry = default_registry()
    root = Path(__file__).resolve().parents[2] / "sample_graphs"
    for name in ("basic_rag.json", "corrective_rag.json", "self_check_rag.json"):
        assert unchecked_answers(load(root / name), registry) == [], name


def test_validate_prints_the_warning(palette_graph, tmp_path: Path, capsys) -> None:
    from modrag_studio.cli import main

    data = palette_graph.model_dump(by_alias=True, exclude_none=True)
    next(n for n in data["nodes"] if n["id"] == "llm")["params"]["backend"] = "embedded"
    path = tmp_path / "palette.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    assert "warning: parse: the answer reaches the output 'answer' with no grounding check" \
        in capsys.readouterr().out
