"""Fixtures shared by the hardening tests: an embedded-chunks source node and small graphs.

Run as a script (``python helpers.py chroma|lancedb FOLDER N``) it synchronises a Chroma (or
LanceDB) folder in a fresh process and prints the run's status and errors as JSON (used under
``unshare``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pydantic import BaseModel, ConfigDict  # noqa: E402

from modrag_nodes import register_builtin_nodes  # noqa: E402
from modrag_nodes.embedding.contracts import EmbeddedChunks  # noqa: E402
from modrag_nodes.embedding.spec import EmbedderSpec  # noqa: E402
from modrag_studio.engine import Executor, GraphDocument, NodeCache, NodeRegistry  # noqa: E402
from modrag_studio.engine.core.node import Chunk, NodeContext, NodeType, OutputPort  # noqa: E402

PYTHON = sys.executable


class EmbeddedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = 5
    dim: int = 8


class FixtureEmbedded(NodeType):
    """Test fixture: ``count`` chunks with deterministic vectors (no model needed)."""

    type_id = "testdata.embedded"
    category = "Test"
    Params = EmbeddedParams
    outputs = (OutputPort("embedded", EmbeddedChunks),)

    def run(self, ctx: NodeContext, params: EmbeddedParams) -> dict[str, Any]:
        import numpy as np

        chunks = [Chunk(chunk_id=f"c{i}", doc_id="d", text=f"text number {i}", start=0, end=12,
                        index=i, source="d.txt") for i in range(params.count)]
        vectors = np.random.default_rng(7).normal(size=(params.count, params.dim))
        return {"embedded": EmbeddedChunks(
            chunks=chunks, vectors=vectors.astype(np.float32), model_id="ollama:fixture",
            dim=params.dim, embedder=EmbedderSpec(kind="ollama", model="fixture"))}


def registry() -> NodeRegistry:
    reg = NodeRegistry()
    register_builtin_nodes(reg)
    reg.register(FixtureEmbedded)
    return reg


STORES = ("store.chroma", "store.lancedb")


def chroma_graph(folder: str | Path, count: int, store: str = "store.chroma") -> GraphDocument:
    """Fixture vectors -> ``store`` (a Chroma or LanceDB folder), collection 'faults'."""
    return GraphDocument.model_validate({
        "metadata": {"name": "chroma-faults"},
        "nodes": [
            {"id": "emb", "type": "testdata.embedded", "params": {"count": count}},
            {"id": "store", "type": store,
             "params": {"path": str(folder), "collection": "faults"}},
            {"id": "out", "type": "graph.output", "params": {"name": "index"}},
        ],
        "edges": [{"from": "emb.embedded", "to": "store.embedded"},
                  {"from": "store.index", "to": "out.value"}],
    })


def sync_chroma(folder: str | Path, count: int, store: str = "store.chroma") -> dict[str, Any]:
    """Run the store graph once in this process: status and error messages."""
    result = Executor(registry(), NodeCache()).run(chroma_graph(folder, count, store))
    return {"status": result.status,
            "errors": {v.node_id: v.error.message for v in result.trace.visits if v.error}}


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` with its content (to prove nothing was deleted)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def unshare_allowed() -> str | None:
    """None when ``unshare`` can make namespaces here, else the reason it cannot."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "-n", "true"], capture_output=True, text=True)
    if probe.returncode == 0:
        return None
    probe = subprocess.run(["unshare", "-r", "-m", "-n", "true"], capture_output=True,
                           text=True)
    if probe.returncode == 0:
        return None
    return f"unshare is not permitted here: {probe.stderr.strip()}"


def sync_read_only(folder: Path, kind: str, count: int) -> dict[str, Any]:
    """Synchronise ``folder`` (``kind``: chroma or lancedb) in a fresh process that sees it
    mounted read-only (call only when ``unshare_allowed()``): the run's status and errors."""
    import os

    script = (f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
              f"exec {PYTHON} {Path(__file__).resolve()} {kind} {folder} {count}")
    done = subprocess.run([*unshare_prefix(), "-m", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def lock_held(backend: str, folder: Path, collection: str) -> Iterator[subprocess.Popen]:
    """Another process holding the collection's write lock until the block ends."""
    holder = subprocess.Popen([PYTHON, "-c", (
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from modrag_nodes.vectorstore.write_lock import collection_lock\n"
        f"with collection_lock(({backend!r}, {str(folder)!r}), {collection!r}):\n"
        "    print('locked', flush=True)\n    sys.stdin.read()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=10)


def unshare_prefix() -> list[str]:
    """``unshare`` as root, or with a mapped root user when not root."""
    import os

    return ["unshare"] if os.geteuid() == 0 else ["unshare", "--map-root-user"]


if __name__ == "__main__":
    if sys.argv[1] in ("chroma", "lancedb"):
        print(json.dumps(sync_chroma(sys.argv[2], int(sys.argv[3]), f"store.{sys.argv[1]}")))
