"""Offline guarantee: the README main job, the sample graphs and the studio need no network.

Runs happen inside ``unshare -n`` (no network interface but loopback) and under a socket guard
that records any attempt to reach a non-loopback address or to resolve a name.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hardening import netguard
from tests.hardening.helpers import PYTHON, ROOT, unshare_allowed, unshare_prefix

QUESTION = "How often is the lubrication pump LP-07 serviced?"
SAMPLES = sorted((ROOT / "sample_graphs").glob("*.json"))
# BEIR graphs take a corpus file with no default; scifact_bm25 runs on shared data below.
NEEDS_BEIR = {"scifact_bm25.json", "scifact_dense.json", "scifact_hybrid.json"}


@pytest.fixture
def guard() -> Iterator[list[str]]:
    netguard.attempts.clear()
    netguard.install()
    try:
        yield netguard.attempts
    finally:
        netguard.uninstall()


@pytest.fixture(scope="module")
def model_env(request) -> dict[str, str]:
    """The environment for child runs; the converted embedded model is kept between sessions
    (``MODRAG_MODEL_DIR`` from tests/conftest.py, else pytest's cache folder)."""
    env = os.environ.copy()
    if not env.get("MODRAG_MODEL_DIR"):
        cache = getattr(request.config, "cache", None)
        folder = Path(cache.mkdir("modrag-models")) if cache is not None else \
            request.getfixturevalue("tmp_path_factory").mktemp("modrag-models")
        env["MODRAG_MODEL_DIR"] = str(folder)
    env["HF_HUB_OFFLINE"] = env["TRANSFORMERS_OFFLINE"] = "1"
    return env


def _no_network_run(args: list[str], env: dict[str, str], timeout: int = 900):
    if (reason := unshare_allowed()) is not None:
        pytest.skip(reason)
    return subprocess.run([*unshare_prefix(), "-n", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), env={**env,
                                                               "MODRAG_CACHE_DIR":
                                                               os.environ["MODRAG_CACHE_DIR"]})


def test_the_guard_refuses_and_records_non_loopback_connections(guard):
    with pytest.raises(OSError, match="blocked by the test guard"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    with pytest.raises(OSError, match="blocked"):
        socket.getaddrinfo("huggingface.co", 443)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with socket.create_connection(server.getsockname(), timeout=5):
        pass  # loopback is allowed
    server.close()
    assert guard == ["create_connection 192.0.2.1:80", "getaddrinfo huggingface.co"]


def test_unshare_leaves_no_network(model_env):
    done = _no_network_run([PYTHON, "-c", "import socket; socket.create_connection("
                            "('192.0.2.1', 80), timeout=3)"], model_env, timeout=60)
    assert done.returncode != 0 and "unreachable" in done.stderr.lower()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_readme_main_job_runs_with_no_network(model_env):
    """``modrag run sample_graphs/basic_rag.json --input question=...`` inside unshare -n."""
    code = ("import sys; from tests.hardening import netguard; netguard.install(); "
            "from modrag_studio.cli import main; code = main(sys.argv[1:]); "
            "print('ATTEMPTS', netguard.attempts, file=sys.stderr); sys.exit(code)")
    done = _no_network_run([PYTHON, "-c", code, "run", "sample_graphs/basic_rag.json",
                            "--input", f"question={QUESTION}", "--json",
                            "--set", "llm.model=SmolLM2-135M-Instruct"], model_env)  # fast
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ATTEMPTS []" in done.stderr
    body = json.loads(done.stdout)
    assert body["status"] == "ok"
    assert body["outputs"]["answer"]["text"].strip()


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_sample_graphs_run_headless_with_no_network(model_env, request):
    graphs = [str(p) for p in SAMPLES if p.name not in NEEDS_BEIR]
    done = _no_network_run([PYTHON, str(ROOT / "tests/hardening/offline_driver.py"), *graphs],
                           model_env, timeout=3500)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    summary = {r["graph"]: (r["status"], r["seconds"]) for r in reports}
    print("\noffline sample graph runs:", summary)
    assert len(reports) == len(graphs)
    for report in reports:
        assert report["network_attempts"] == [], report
        assert report["status"] == "ok", report


def test_bm25_sample_graph_in_process_makes_no_connection(guard, shared_data):
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, NodeCache, load

    doc = load(ROOT / "sample_graphs" / "scifact_bm25.json")
    corpus = shared_data / "scifact" / "corpus.jsonl"
    result = Executor(default_registry(), cache=NodeCache()).run(doc, {"corpus": str(corpus),
                                                   "query": "vitamin D and bone density"})
    assert result.ok, [v.error for v in result.trace.visits if v.error]
    assert guard == []


def test_code_graph_sample_in_process_makes_no_connection(guard, monkeypatch):
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, NodeCache, load

    monkeypatch.chdir(ROOT)
    doc = load(ROOT / "sample_graphs" / "kg_code_modules.json")
    result = Executor(default_registry(), cache=NodeCache()).run(
        doc, {"question": "Which modules depend on the executor module?"})
    assert result.ok, [v.error for v in result.trace.visits if v.error]
    assert guard == []


@pytest.mark.ui
def test_studio_startup_makes_no_network_call(guard, qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings

    from modrag_studio.composition import default_registry
    from modrag_studio.ui.shell.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "ask_unsaved", lambda self: True)
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(default_registry(), settings=settings, offer_restore=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.open_path(ROOT / "sample_graphs" / "basic_rag.json", offer_restore=False)
    qtbot.waitUntil(lambda: len(window.canvas.node_ids()) == len(window.editor.document().nodes)
                    and bool(window.features.run.run_bar.fields))
    assert guard == []
    window.close()
