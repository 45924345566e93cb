"""The ``python -m modrag_studio GRAPH.json`` entry point opens the window with the graph."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from modrag_studio.engine.core.document import GraphDocument, save

pytestmark = pytest.mark.ui


def test_module_entry_point_shows_the_graph(tmp_path, root):
    path = tmp_path / "g.json"
    save(GraphDocument.model_validate({"nodes": [
        {"id": "q", "type": "graph.input"}, {"id": "o", "type": "graph.output"}],
        "edges": [{"from": "q.value", "to": "o.value"}]}), path)
    shot = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = subprocess.run(
        [sys.executable, "-m", "modrag_studio", str(path), "--no-restore", "--screenshot",
         str(shot)], cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    image = QImage(str(shot))
    assert not image.isNull() and image.width() >= 800
    assert (tmp_path / "config" / "modrag-studio" / "studio.ini").is_file()  # recent files
