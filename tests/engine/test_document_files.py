"""Saving keeps a graph file's mode and writes through symlinks; loading refuses devices."""

from __future__ import annotations

import json
import os
import stat

import pytest

from modrag_studio.engine.core.document import GraphDocument, load, save
from modrag_studio.engine.core.errors import GraphLoadError


def test_save_keeps_the_mode_of_an_existing_file(tmp_path):
    path = tmp_path / "g.json"
    save(GraphDocument(), path)
    os.chmod(path, 0o644)
    save(GraphDocument(metadata={"name": "again"}), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    os.chmod(path, 0o640)
    save(GraphDocument(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_save_writes_through_a_symlink(tmp_path):
    real = tmp_path / "shared" / "g.json"
    real.parent.mkdir()
    save(GraphDocument(), real)
    link = tmp_path / "g.json"
    link.symlink_to(real)
    save(GraphDocument(metadata={"name": "through"}), link)
    assert link.is_symlink()
    assert json.loads(real.read_text())["metadata"]["name"] == "through"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_loading_a_device_is_refused_before_reading(device, capsys):
    from modrag_studio.cli import main

    with pytest.raises(GraphLoadError, match="not a regular file"):
        load(device)
    assert main(["run", device]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_trace_out_into_a_missing_folder_prints_outputs_then_a_clear_error(tmp_path, capsys):
    from modrag_studio.cli import main

    path = tmp_path / "g.json"
    path.write_text(json.dumps({
        "nodes": [{"id": "q", "type": "graph.input", "params": {"name": "question"}},
                  {"id": "a", "type": "graph.output", "params": {"name": "answer"}}],
        "edges": [{"from": "q.value", "to": "a.value"}]}))
    code = main(["run", str(path), "--no-cache", "-q", "--input", "question=kept",
                 "--trace-out", str(tmp_path / "missing" / "trace.json")])
    captured = capsys.readouterr()
    assert code == 2
    assert "kept" in captured.out
    assert "cannot write the trace" in captured.err and "Traceback" not in captured.err


KILLED_SAVE = """
import os, signal, sys
from modrag_studio.engine.core.document import GraphDocument, save
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # killed just before the rename
save(GraphDocument(metadata={"name": "half"}), sys.argv[1])
"""

HELD_TEMP = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)  # a save under way in another process
print("held", flush=True)
time.sleep(30)
"""


def _temps(folder, name="g.json"):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


def test_a_killed_save_leaves_a_temp_copy_that_the_next_save_removes(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "g.json"
    save(GraphDocument(metadata={"name": "first"}), path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(path)], env=env,
                            timeout=60)
    assert killed.returncode == -9
    assert len(_temps(tmp_path)) == 1  # what kill -9 leaves
    assert load(path).metadata.name == "first"  # the file itself is whole
    held_path = tmp_path / ".g.json.inflight.tmp"
    holder = subprocess.Popen([sys.executable, "-c", HELD_TEMP, str(held_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        save(GraphDocument(metadata={"name": "second"}), path)
        assert _temps(tmp_path) == [held_path.name]  # a live writer's copy stays
    finally:
        holder.kill()
        holder.wait()
    save(GraphDocument(metadata={"name": "third"}), path)
    assert _temps(tmp_path) == [] and load(path).metadata.name == "third"


def test_a_failed_save_leaves_no_temp_copy(tmp_path, monkeypatch):
    path = tmp_path / "g.json"
    save(GraphDocument(), path)

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        save(GraphDocument(metadata={"name": "lost"}), path)
    assert _temps(tmp_path) == [] and load(path).metadata.name != "lost"
