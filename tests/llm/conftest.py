"""Fixtures for LLM tests: the Ollama fixture server, the embedded model, real Ollama skip."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.ollama_fixture_server import OllamaFixtureServer

REAL_OLLAMA = "127.0.0.1:11434"
_real_ollama_answers: bool | None = None


def real_ollama_available() -> bool:
    """Whether a real Ollama answers at 127.0.0.1:11434 (checked once, quickly)."""
    global _real_ollama_answers
    if _real_ollama_answers is None:
        import httpx

        try:
            reply = httpx.get(f"http://{REAL_OLLAMA}/api/version", timeout=1.0)
            _real_ollama_answers = reply.status_code == 200 and "version" in reply.json()
        except Exception:
            _real_ollama_answers = False
    return _real_ollama_answers


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("real_ollama") and not real_ollama_available():
        pytest.skip(f"no real Ollama answers at {REAL_OLLAMA}")


@pytest.fixture
def ollama_server() -> Iterator[OllamaFixtureServer]:
    """A fresh Ollama-compatible test fixture server on a free 127.0.0.1 port."""
    with OllamaFixtureServer(models=["fixture-llm", "fixture-embed"]) as server:
        yield server


@pytest.fixture(scope="session")
def embedded_model_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Keep the converted embedded model in pytest's cache folder (converted once, reused).

    The per-test MODRAG_CACHE_DIR is fresh for every test; converting the GGUF file each
    session would cost most of a minute, so the converted copy lives in ``.pytest_cache``.
    """
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    if os.environ.get("MODRAG_MODEL_DIR"):  # tests/conftest.py shares one folder
        folder = Path(os.environ["MODRAG_MODEL_DIR"])
    elif cache is not None:
        folder = Path(cache.mkdir("modrag-models"))
    else:
        folder = request.getfixturevalue("tmp_path_factory").mktemp("modrag-models")
    previous = os.environ.get("MODRAG_MODEL_DIR")
    os.environ["MODRAG_MODEL_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("MODRAG_MODEL_DIR", None)
    else:
        os.environ["MODRAG_MODEL_DIR"] = previous
