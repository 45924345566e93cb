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
from modrag_studio.engine.core.resources import Resources, resident_bytes, using_resources
from modrag_nodes.llm.embedded import packaged_gguf
from modrag_nodes.llm.xllamacpp_runtime import load_engine

resources = Resources()
before = resident_bytes()
with using_resources(resources):
    load_engine(packaged_gguf(), threads=1)
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
