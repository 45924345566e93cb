"""Runs graphs headless under the socket guard and prints one JSON line per graph.

``python offline_driver.py GRAPH.json [...]``: inputs without a default get a question or the
sample corpus. Used by ``test_offline.py`` inside ``unshare -n`` (no network at all).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.hardening import netguard  # noqa: E402

QUESTION = "How often is the lubrication pump LP-07 serviced?"


def inputs_for(doc) -> dict[str, str]:
    values: dict[str, str] = {}
    for node in doc.nodes:
        if node.type != "graph.input" or node.params.get("default") is not None:
            continue
        name = str(node.params.get("name"))
        values[name] = str(ROOT / "resources" / "sample_corpus") \
            if name in ("corpus", "source") else QUESTION
    return values


def main(paths: list[str]) -> None:
    netguard.install()
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, NodeCache, load

    executor = Executor(default_registry(), cache=NodeCache())
    for path in paths:
        doc = load(path)
        start = time.perf_counter()
        result = executor.run(doc, inputs_for(doc))
        print(json.dumps({
            "graph": Path(path).name, "status": result.status,
            "seconds": round(time.perf_counter() - start, 1),
            "errors": {v.node_id: v.error.message for v in result.trace.visits if v.error},
            "outputs": sorted(result.outputs), "network_attempts": list(netguard.attempts),
        }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
