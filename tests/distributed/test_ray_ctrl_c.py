"""Ctrl-C on ``modrag index --ray local`` mid-job: a clear message, the documented exit code
(1: cancelled), no process of the head node it started left, and a store (created and marked
"writing" by the interrupted job) that a re-run completes into exactly what a clean run
writes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modrag_nodes.vectorstore import chroma_store
from modrag_studio.cli import main
from modrag_studio.commands.exit_codes import EXIT_RUN_FAILED
from modrag_studio.distributed.local_cluster import session_processes
from modrag_studio.engine.core.document import save
from tests.distributed.helpers import assert_same_records, collection_records, index_graph

pytest.importorskip("ray")  # the Ray tests skip where the distributed extra is absent
pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]


def _records(folder: Path) -> dict:
    chroma_store.forget_clients()
    client = chroma_store.client_for(("chroma-persistent", str(folder.resolve())))
    return collection_records(chroma_store.get_collection(client, "c20"))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def _interrupt_mid_job(process: subprocess.Popen, log: Path, timeout: float = 400) -> int:
    """SIGINT to ``process`` as soon as the Ray job's map worker (the actor that reads,
    splits and embeds) has started in the head node's session: the job is running and
    cannot have finished (the worker has yet to load the embedding model). Returns the
    head node's session id."""
    deadline = time.monotonic() + timeout
    session = None
    while True:
        text = log.read_text(errors="replace")
        assert process.poll() is None, f"ended before the job ran: {text}"
        assert time.monotonic() < deadline, f"no Ray job in {timeout} s: {text}"
        found = re.search(r"started a local Ray head node at \S+ \(session (\d+)", text)
        session = int(found[1]) if found else None
        if session and any("MapWorker" in _cmdline(pid) for pid in session_processes(session)):
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    return session


def test_ctrl_c_stops_the_job_and_its_head_and_a_rerun_completes_the_store(
        ray_cluster, corpus, local_reference, tmp_path, capsys):
    graph = tmp_path / "g.json"
    save(index_graph({"path": str(tmp_path / "chroma"), "collection": "c20"}), graph)
    corpus_file = str(corpus / "corpus.jsonl")
    log = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "modrag_studio.cli", "index", str(graph), "--input",
             f"corpus={corpus_file}", "--ray", "local", "--block-lines", "2",
             "--cache-dir", str(tmp_path / "cache")],
            stdout=subprocess.PIPE, stderr=err, env=env, cwd=tmp_path,
            # a shell without job control starts background commands with SIGINT ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        session = _interrupt_mid_job(process, log)
    stderr = log.read_text(errors="replace").replace("\r", "\n")
    assert process.returncode == EXIT_RUN_FAILED, stderr
    assert "cancelled: indexing cancelled (Ctrl-C)" in stderr
    assert "indexed (" not in process.stdout.read().decode()
    assert "stopped the local Ray head node" in stderr
    deadline = time.monotonic() + 10
    while session_processes(session) and time.monotonic() < deadline:
        time.sleep(0.2)  # SIGKILLed processes may take a moment to go
    assert session_processes(session) == []

    # The store as the interrupted job left it: a re-run (on the session's head node) ends
    # with exactly the records of a clean run, nothing missing and nothing twice.
    code = main(["index", str(graph), "--input", f"corpus={corpus_file}", "--ray",
                 "--block-lines", "2", "--json", "--cache-dir", str(tmp_path / "cache")])
    rerun = capsys.readouterr()
    assert code == 0, rerun.err
    expected, _ = local_reference  # a clean local run of the same graph and corpus
    assert_same_records(_records(tmp_path / "chroma"), expected)
    summary = json.loads(rerun.out)
    assert summary["store_count"] == summary["chunks"] == len(expected)
