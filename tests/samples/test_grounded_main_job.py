"""The main job (basic_rag) answers, retries once with the ungrounded claims named, or
refuses saying what no document states; Chinese questions get a Chinese prompt line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache, load

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "resources" / "sample_corpus"
BACKEND = "test-grounded"


class Canned:
    """Replies to answer prompts from a queue; records every user message."""

    def __init__(self) -> None:
        self.replies: list[str] = []
        self.prompts: list[str] = []

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        self.prompts.append(messages[-1].content)
        text = self.replies.pop(0)
        text = text(messages[-1].content) if callable(text) else text
        return ChatResult(text=text, model="canned", prompt_tokens=1, completion_tokens=1,
                          duration_s=time.perf_counter() * 0)


@pytest.fixture
def canned():
    backend = Canned()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    home = tmp_path_factory.mktemp("grounded-home")
    return Executor(default_registry(), cache=NodeCache(memory_items=2048), work_dir=home / "data")


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))


_seed = iter(range(1, 1000))


def _run(executor: Executor, question: str):
    doc = load(ROOT / "sample_graphs" / "basic_rag.json")
    doc.node("corpus").params["default"] = str(CORPUS)
    doc.node("llm").params.update(backend=BACKEND, seed=next(_seed))
    result = executor.run(doc, {"question": question})
    assert result.ok, result.trace.to_json()[-3000:]
    return result, result.outputs["answer"]


def test_grounded_answer_on_the_first_try(executor, canned) -> None:
    canned.replies = ["The lubrication pump LP-07 is serviced every 500 operating hours [1]."]
    result, answer = _run(executor, "How often is the lubrication pump LP-07 serviced?")
    assert not answer.fallback and "500 operating hours" in answer.text
    assert result.trace.last_visit("ground").details["route"] == "grounded"
    assert [c.verdict for c in answer.claims] == ["cited", "cited"]
    assert canned.prompts[0].endswith("Answer in English.")
    assert len(canned.prompts) == 1


def test_retry_names_the_claim_then_refuses(executor, canned) -> None:
    invented = "The rated pressure of PR-300 is 15,000 psi [1]."
    canned.replies = [invented, invented]
    result, answer = _run(executor, "What is the rated pressure of the press PR-300?")
    assert len(canned.prompts) == 2
    assert ("It was sent back because the answer says 15,000 psi; no document says that."
            in canned.prompts[1])
    assert invented in canned.prompts[1]
    routes = [v.details["route"] for v in result.trace.visits_of("ground")]
    assert routes == ["ungrounded", "ungrounded"]
    assert answer.fallback is True
    assert answer.text == "The documents do not mention 15,000 psi."


def test_retry_that_is_grounded_is_answered(executor, canned) -> None:
    canned.replies = ["LP-07 is serviced every 250 hours [1].",
                      "The lubrication pump LP-07 is serviced every 500 operating hours [1]."]
    result, answer = _run(executor, "How often is the lubrication pump LP-07 serviced?")
    assert not answer.fallback and "500 operating hours" in answer.text
    assert [v.details["route"] for v in result.trace.visits_of("ground")] == [
        "ungrounded", "grounded"]


def test_absent_identifier_is_refused_without_a_retry(executor, canned) -> None:
    canned.replies = ["The vacuum pump VP-02 is serviced every 6 months [1]."]
    result, answer = _run(executor, "How often is the vacuum pump VP-02 serviced?")
    assert len(canned.prompts) == 1
    assert result.trace.last_visit("ground").details["route"] == "absent"
    assert answer.fallback is True and answer.text == "The documents do not mention VP-02."


def test_chinese_question_answered_in_english_is_translated(executor, canned) -> None:
    canned.replies = ["AC-05 is serviced every month [1].", "空压机 AC-05 每个月保养一次 [1]。"]
    result, answer = _run(executor, "空压机 AC-05 多久保养一次？")
    assert canned.prompts[0].endswith("请用中文回答。")
    # the second call is a short translation request, not the whole prompt again
    assert "翻译成中文" in canned.prompts[1]
    assert canned.prompts[1].endswith("AC-05 is serviced every month [1].")
    assert result.trace.last_visit("translate").details["translated"] is True
    assert [v.details["route"] for v in result.trace.visits_of("ground")] == ["grounded"]
    # block [1] holds the knowledge graph's facts (in Chinese); the citation moves to the
    # Chinese maintenance document that states them
    assert answer.evidence[0].doc_id == "knowledge-graph"
    assert "空压机 AC-05" in answer.evidence[0].chunk.text
    assert answer.text == "空压机 AC-05 每个月保养一次 [2]。" and not answer.fallback
    assert [c.doc_id for c in answer.citations] == ["zh_maintenance.md"]


def test_an_unusable_translation_is_sent_back_as_before(executor, canned) -> None:
    english = "AC-05 is serviced every month [1]."
    canned.replies = [english, english, "空压机 AC-05 每个月保养一次 [1]。"]
    result, answer = _run(executor, "空压机 AC-05 多久保养一次？")
    assert len(canned.prompts) == 3  # answer, translation (still English), retry
    assert result.trace.visits_of("translate")[0].details["reason"] == "the reply is not in zh"
    assert result.trace.visits_of("ground")[0].details["reason"] == (
        "the question is in Chinese, the answer is not")
    assert "It was sent back because the question is in Chinese" in canned.prompts[2]
    assert answer.text == "空压机 AC-05 每个月保养一次 [2]。" and not answer.fallback


def _citing_block_with(text: str, template: str):
    """A reply that cites the prompt's evidence block holding ``text`` ({n} in ``template``)."""
    import re

    def reply(prompt: str) -> str:
        blocks = re.split(r"(?m)^\[(\d{1,2})\]", prompt)
        number = next(blocks[i] for i in range(1, len(blocks), 2) if text in blocks[i + 1])
        return template.format(n=number)
    return reply


def test_a_supplier_of_another_part_is_refused_and_the_funnel_names_generate(
        executor, canned) -> None:
    """The contract register names both suppliers in one block: "HS-40 is supplied by Baltic
    Bearing Supply" passed the check when it looked names up block by block. Now it is sent
    back, then refused naming the pairing, and attribution says the cited evidence was
    contradicted at generate, never that it reached the answer."""
    from modrag_studio.engine.evidence.attribution import attribute
    from modrag_studio.engine.evidence.expected import ExpectedEvidence

    wrong = _citing_block_with("HT-2024-1107 covers the seal kit HS-40",
                               "The seal kit HS-40 is supplied by Baltic Bearing Supply. [{n}]")
    canned.replies = [wrong, wrong]
    result, answer = _run(executor, "Which company supplies the seal kit HS-40?")
    assert answer.fallback and len(canned.prompts) == 2
    assert answer.text == ("The documents do not mention Baltic Bearing Supply in connection "
                           "with HS-40.")
    assert "not beside HS-40" in canned.prompts[1]
    doc = load(ROOT / "sample_graphs" / "basic_rag.json")
    found = attribute(result, doc, ExpectedEvidence.parse(
        ["text:The contract HT-2024-1107 covers the seal kit HS-40"]))
    assert found.first_loss == "ground"
    assert found.verdict.startswith("The expected evidence reached the prompt, and was ignored "
                                    "or contradicted at generate (generate): block [")
    assert "reaches the answer" not in found.verdict


def test_a_list_with_another_suppliers_part_is_refused(executor, canned) -> None:
    wrong = _citing_block_with("HT-2024-1107 covers the seal kit HS-40",
                               "HS-40 seal kit and SKF-6205 spindle bearing. [{n}]")
    canned.replies = [wrong, wrong]
    _, answer = _run(executor, "What does Kestrel Hydraulics supply?")
    assert answer.fallback
    assert "SKF-6205 in connection with Kestrel Hydraulics" in answer.text


def test_the_right_supplier_passes(executor, canned) -> None:
    canned.replies = [_citing_block_with(
        "HT-2024-1107 covers the seal kit HS-40",
        "The seal kit HS-40 is supplied by Kestrel Hydraulics. [{n}]")]
    result, answer = _run(executor, "Which company supplies the seal kit HS-40?")
    assert not answer.fallback and "Kestrel Hydraulics" in answer.text
    assert len(canned.prompts) == 1  # no retry for the absent word "company" (not 'ask')
    assert result.trace.last_visit("ground").details["route"] == "grounded"
