"""Shared fixtures. Qt runs offscreen; tests never touch the network or the user's cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
PKGDOCS = SHARED_DATA / "corpora" / "pkgdocs-dev"  # the development suite's README folder
# One converted copy of the embedded chat model for every test (and every test run): the
# per-test cache folders below would otherwise convert the GGUF file again each time.
os.environ.setdefault("MODRAG_MODEL_DIR", str(ROOT / ".test-cache" / "models"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start Phoenix (the trace tests' receiver) now when those tests will run: its start-up
    then overlaps the tests before them."""
    if any(item.nodeid.startswith("tests/tracing/") for item in session.items):
        from tests.tracing import phoenix_server

        phoenix_server.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    import sys

    server = sys.modules.get("tests.tracing.phoenix_server")
    if server is not None:
        server.stop()


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Each test gets its own cache and data folders (never the user's)."""
    base = tmp_path_factory.mktemp("modrag-home")
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("MODRAG_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(base / "config"))  # cache key, trusted graphs
    yield


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; skips (with the reason) in a user's own clone."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (present in CI and dev machines)")
    return SHARED_DATA


@pytest.fixture
def root() -> Path:
    return ROOT
