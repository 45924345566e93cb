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
