"""Soak: index / run / serve cycles with random kill -9 and corpus slips, on Chroma and
LanceDB folders; after every cycle the collection holds exactly the corpus (marked ``soak``:
``bash scripts/test.sh -m soak``; ``MODRAG_SOAK_S`` sets the length, default 20 minutes)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.hardening.test_store_integrity import corpus, file_graph, stored_ids

SOAK_TIMEOUT_S = float(os.environ.get("MODRAG_SOAK_S", "1200")) + 900
pytestmark = [pytest.mark.soak, pytest.mark.timeout(SOAK_TIMEOUT_S)]
ROOT = Path(__file__).resolve().parents[2]
SOAK_S = float(os.environ.get("MODRAG_SOAK_S", "1200"))


def _modrag(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    return subprocess.Popen([sys.executable, "-m", "modrag_studio.cli", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Soak:
    """One store folder, its graph and the corpus it must hold after every cycle."""

    def __init__(self, folder: Path, store_type: str) -> None:
        self.store = folder / "store"
        self.corpus = corpus(folder / "corpus", "a", 6)
        self.slip = folder / "slip"
        self.slip.mkdir()
        (self.slip / "a0.md").write_text((self.corpus / "a0.md").read_text())
        self.store_type = store_type
        graph = file_graph(self.store, share=0.5, store_type=store_type)
        for node in graph["nodes"]:
            if node["id"] == "corpus":
                node["params"]["default"] = str(self.corpus)
        self.graph = folder / "g.json"
        self.graph.write_text(json.dumps(graph))
        self.expected: set[str] = set()
        self.log: list[str] = []

    def index(self, corpus_dir: Path) -> subprocess.Popen:
        return _modrag("run", str(self.graph), "--input", f"corpus={corpus_dir}", "--json")

    def verify(self) -> None:
        """A clean run with the corpus ends in exactly its chunks (resyncing after a kill)."""
        process = self.index(self.corpus)
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, (self.log[-5:], err[-2000:])
        count = json.loads(out)["outputs"]["index"]["count"]
        ids = stored_ids(self.store, self.store_type)
        if not self.expected:
            self.expected = ids
        assert count == len(self.expected) and ids == self.expected, (self.log[-5:], ids)

    def killed_index(self, rng: random.Random) -> None:
        process = self.index(self.corpus)
        delay = rng.uniform(0.2, 4.0)
        try:
            process.wait(timeout=delay)
            self.log.append(f"index finished before the kill at {delay:.1f} s")
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
            self.log.append(f"index killed at {delay:.1f} s")
        process.communicate()

    def slipped_index(self) -> None:
        """The corpus path slips to a folder with one of its six files: refused, unchanged."""
        process = self.index(self.slip)
        _out, err = process.communicate(timeout=600)
        assert process.returncode != 0 and "delete" in err, err[-2000:]
        assert stored_ids(self.store, self.store_type) == self.expected
        self.log.append("slip refused")

    def served(self, rng: random.Random) -> None:
        port = _free_port()
        server = _modrag("serve", str(self.graph), "--host", "127.0.0.1", "--port", str(port))
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    if httpx.get(f"{base}/health", timeout=2).status_code in (200, 503):
                        break
                except httpx.HTTPError:
                    pass
                assert server.poll() is None, server.communicate()[1][-2000:]
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
            if rng.random() < 0.5:
                reply = httpx.post(f"{base}/run", json={}, timeout=120)
                assert reply.status_code == 200, reply.text[:2000]
                assert reply.json()["outputs"]["index"]["count"] == len(self.expected)
                self.log.append("served a run")
            else:
                self.log.append("server killed while starting to answer")
                httpx.post(f"{base}/run", json={}, timeout=0.3)
        except httpx.TimeoutException:
            pass
        finally:
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=60)
            server.communicate()


def test_kill_slip_and_serve_cycles_leave_a_consistent_collection(tmp_path):
    rng = random.Random(int(os.environ.get("MODRAG_SOAK_SEED", "1")))
    soaks = [Soak(tmp_path / "chroma", "store.chroma"),
             Soak(tmp_path / "lancedb", "store.lancedb")]
    for soak in soaks:
        soak.verify()
    cycles = {"kill": 0, "slip": 0, "serve": 0}
    end = time.monotonic() + SOAK_S
    while time.monotonic() < end:
        soak = rng.choice(soaks)
        kind = rng.choices(["kill", "slip", "serve"], weights=[5, 2, 3])[0]
        if kind == "kill":
            soak.killed_index(rng)
        elif kind == "slip":
            soak.slipped_index()
        else:
            soak.served(rng)
        cycles[kind] += 1
        soak.verify()
    print(f"soak cycles: {cycles}")
    assert all(cycles.values()) or SOAK_S < 120
