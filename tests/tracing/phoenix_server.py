"""Arize Phoenix's local server for the trace tests, started as soon as the session knows it
will run them (``pytest_collection_finish`` in ``tests/conftest.py``): it takes tens of
seconds to come up, which then overlap the tests before these instead of adding to them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PHOENIX_VENV = Path(__file__).resolve().parents[2] / ".venv-phoenix"


def phoenix_python() -> Path | None:
    """The Python of Phoenix's own venv (made by scripts/test.sh), None when missing."""
    python = Path(os.environ.get("MODRAG_PHOENIX_PYTHON") or PHOENIX_VENV / "bin" / "python")
    return python if python.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Phoenix:
    process: subprocess.Popen
    base: str
    work: Path
    log: IO[str]

    def wait_ready(self, timeout_s: float = 180) -> str:
        """The server's URL once it answers; raises with its log when it never does."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=2)
                return self.base
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    told = (self.work / "phoenix.log").read_text()[-2000:]
                    self.stop()
                    raise RuntimeError(f"Phoenix did not start: {told}") from None
                time.sleep(0.3)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


_started: Phoenix | None = None


def start() -> Phoenix | None:
    """Start the server once per session (None without Phoenix's venv)."""
    global _started
    python = phoenix_python()
    if _started is None and python is not None:
        work = Path(tempfile.mkdtemp(prefix="modrag-phoenix-"))
        port, grpc_port = _free_port(), _free_port()
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port),
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        log = (work / "phoenix.log").open("w")
        process = subprocess.Popen([str(python), "-m", "phoenix.server.main", "serve"],
                                   env=env, stdout=log, stderr=subprocess.STDOUT)
        _started = Phoenix(process, f"http://127.0.0.1:{port}", work, log)
    return _started


def stop() -> None:
    global _started
    if _started is not None:
        _started.stop()
        _started = None
