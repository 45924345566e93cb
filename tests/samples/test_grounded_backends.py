"""The main job's grounding check on server backends (loopback Ollama and OpenAI-compatible
test fixtures): a grounded reply is the answer, an invented one ends in the refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache, load
from tests.llm.ollama_fixture_server import OllamaFixtureServer
from tests.llm.openai_fixture_server import OpenAIFixtureServer

ROOT = Path(__file__).resolve().parents[2]
GROUNDED = "The lubrication pump LP-07 is serviced every 500 operating hours [1]."
INVENTED = "The lubrication pump LP-07 is serviced every 250 hours [1]."
QUESTION = "How often is the lubrication pump LP-07 serviced?"


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    home = tmp_path_factory.mktemp("backends-home")
    return Executor(default_registry(), cache=NodeCache(memory_items=2048), work_dir=home / "data")


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))


def _run(executor: Executor, llm: dict):
    doc = load(ROOT / "sample_graphs" / "basic_rag.json")
    doc.node("corpus").params["default"] = str(ROOT / "resources" / "sample_corpus")
    doc.node("llm").params.clear()
    doc.node("llm").params.update(llm)
    result = executor.run(doc, {"question": QUESTION})
    assert result.ok, result.trace.to_json()[-3000:]
    return result.outputs["answer"], len(result.trace.visits_of("generate"))


def _check(answer, fallback: bool) -> None:
    if fallback:
        assert answer.text == "The documents do not mention 250 hours."
        return
    # block [1] is the knowledge graph's facts: the citation moves to the schedule itself
    assert answer.text.startswith(GROUNDED.removesuffix(" [1]."))
    assert [c.doc_id for c in answer.citations] == ["en_maintenance_schedule.md"]


@pytest.mark.parametrize("reply, fallback, calls", [(GROUNDED, False, 1), (INVENTED, True, 2)])
def test_ollama(executor, reply, fallback, calls) -> None:
    with OllamaFixtureServer(models=["fixture-llm"], responder=lambda body: reply) as server:
        answer, generated = _run(executor, {"backend": "ollama", "model": "fixture-llm",
                                            "host": server.host, "seed": calls})
    assert answer.fallback is fallback and generated == calls
    _check(answer, fallback)


@pytest.mark.parametrize("reply, fallback, calls", [(GROUNDED, False, 1), (INVENTED, True, 2)])
def test_openai_compatible(executor, monkeypatch, reply, fallback, calls) -> None:
    monkeypatch.setenv("MODRAG_TEST_OPENAI_KEY", "k")
    with OpenAIFixtureServer(pieces=[reply]) as server:
        answer, generated = _run(executor, {
            "backend": "openai", "model": "fixture-chat", "host": server.base_url,
            "retries": 0, "seed": 10 + calls, "api_key_env": "MODRAG_TEST_OPENAI_KEY"})
    assert answer.fallback is fallback and generated == calls
    _check(answer, fallback)
