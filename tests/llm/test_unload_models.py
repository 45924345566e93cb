"""Unloading models gives their memory back: the real packaged chat model, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MB = 2**20

PROBE = """
import json
from modrag_studio.engine.core.resources import Resources, resident_bytes
from modrag_nodes.llm.embedded import packaged_gguf
from modrag_nodes.llm.xllamacpp_runtime import load_engine

resources = Resources()
before = resident_bytes()
load_engine(packaged_gguf(), threads=1, resources=resources)
loaded = resident_bytes()
held = resources.resident()
gone = resources.unload()
after = resident_bytes()
print(json.dumps({"before": before, "loaded": loaded, "after": after, "gone": len(gone),
                  "held": [[h.kind, h.name, h.size_bytes] for h in held],
                  "left": len(resources.resident())}))
"""


def test_unloading_the_chat_model_frees_its_memory():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    grown = found["loaded"] - found["before"]
    assert grown > 50 * MB, found  # SmolLM2-135M's weights and llama.cpp's buffers
    assert found["held"][0][0] == "chat model" and found["held"][0][2] > 50 * MB, found
    assert found["gone"] == 1 and found["left"] == 0
    assert found["after"] - found["before"] < grown / 2, found  # at least half came back


def test_the_studios_run_process_tells_and_unloads_what_it_holds():
    from modrag_studio.engine.core.node import CancelToken
    from modrag_studio.engine.run.hooks import RunHook
    from modrag_studio.ui.run.process import ProcessRunner
    from tests.engine.helpers import edge, graph, node

    doc = graph([node("q", "graph.input", name="question"),
                 node("model", "llm.model", backend="embedded", temperature=0.7, max_tokens=4),
                 node("chat", "llm.chat"), node("out", "graph.output", name="answer")],
                [edge("q.value", "chat.text"), edge("model.llm", "chat.llm"),
                 edge("chat.text", "out.value")], name="unload-demo")
    runner = ProcessRunner()
    try:
        assert runner.resident() == []  # not started: holds nothing
        result = runner.run(doc, {"question": "Say hi."}, RunHook(), CancelToken())
        assert result.ok, result.trace.failure_summary()
        held = runner.resident()
        assert [h["kind"] for h in held] == ["chat model"] and held[0]["size_bytes"] > 50 * MB
        assert "SmolLM2" in held[0]["name"]
        assert runner.resident(unload=True) == held
        assert runner.resident() == []
    finally:
        runner.close()
