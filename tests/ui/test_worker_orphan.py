"""The studio's run worker ends when the studio is killed (no orphan holding models)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.ui

STUDIO_STAND_IN = textwrap.dedent("""
    from modrag_studio.ui.run.process import ProcessRunner

    if __name__ == "__main__":
        runner = ProcessRunner()
        runner.start()
        runner.resident(timeout_s=120)  # the worker is up and waiting for requests
        print(runner._proc.pid, flush=True)
        input()  # killed here
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone for our purpose
        return stat.read().split()[2] != "Z"


def test_the_worker_ends_when_the_studio_is_killed(tmp_path):
    script = tmp_path / "studio_stand_in.py"
    script.write_text(STUDIO_STAND_IN)
    parent = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    assert _alive(worker)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling a condition, bounded
    alive = _alive(worker)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive, "the run worker outlived the studio"
