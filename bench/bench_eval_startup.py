"""Fixed cost of an evaluation: a fresh ``modrag eval --limit 1`` against its floor.

With the indexes cached (node cache and Chroma folder warm), each row is a new process, the
way a user re-runs an evaluation or a grid cell / CI gate starts one:

- ``modrag eval --limit 1`` of the hybrid SciFact graph (BM25 + MiniLM in Chroma + RRF),
  wall time from process start to exit, and its split (imports, then each node's time in the
  first query's run: cache reads, store open, embedder load and the query itself);
- the floor: a hand-written process that imports what it needs, opens the same Chroma
  collection and the same BM25 index (pickled by this bench from the graph's own run),
  loads the same embedder, embeds one query, searches both and fuses the two lists (RRF):
  the work of the hybrid graph's one query.

Both with the embedder on the numpy runtime (the default, ``runtime: auto``) and on torch
(``runtime: torch``, sentence-transformers), alternating run by run so machine load hits all
alike. Ratio = eval / floor of the same runtime.

Run: .venv/bin/python bench/bench_eval_startup.py [--docs 300] [--repeat 3]
(the first run embeds the corpus twice, once per runtime, into --data-dir).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_eval_loop import DATASET, GRAPH, dataset_dir  # noqa: E402

FLOOR = """
import sys, time
t0 = time.perf_counter()
import chromadb
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
t1 = time.perf_counter()
client = chromadb.PersistentClient(path=sys.argv[1])
collection = client.get_collection(sys.argv[2], embedding_function=None)
t2 = time.perf_counter()
spec = EmbedderSpec(extra={} if sys.argv[3] == "numpy" else {"runtime": "torch"})
vector = embed_texts(spec, [sys.argv[4]], role="query")
t3 = time.perf_counter()
found = collection.query(query_embeddings=vector, n_results=200)
t4 = time.perf_counter()
import pickle
with open(sys.argv[5], "rb") as handle:
    bm25 = pickle.load(handle)
t5 = time.perf_counter()
chunks = bm25.chunks
sparse = [chunks[i].chunk_id for i, score in bm25.search(sys.argv[4], 200) if score > 0]
fused = {}
for ranking in (sparse, found["ids"][0]):
    for rank, chunk_id in enumerate(ranking, start=1):
        fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (60 + rank)
top = sorted(fused, key=lambda c: -fused[c])[:10]
t6 = time.perf_counter()
print({"imports": t1 - t0, "store open": t2 - t1, "embedder + query vector": t3 - t2,
       "search": t4 - t3, "bm25 index open": t5 - t4, "bm25 + fusion": t6 - t5})
"""

PROFILE = """
import json, sys, time
t0 = time.perf_counter()
from modrag_studio.cli import main
from modrag_studio.commands import eval_command  # noqa: F401
from modrag_studio.engine.run.executor import Executor
t1 = time.perf_counter()
spent = {}
run = Executor.run
def timed(self, doc, inputs=None, **kw):
    from modrag_studio.engine.run.hooks import RunHook
    class Clock(RunHook):
        def on_node_end(self, *, visit, **_):
            spent[visit.node_id] = spent.get(visit.node_id, 0.0) + visit.duration_s
    return run(self, doc, inputs, **{**kw, "hooks": [*kw.get("hooks", ()), Clock()]})
Executor.run = timed
code = main(sys.argv[1:])
t2 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "eval": t2 - t1, "nodes": spent, "code": code}))
"""


def graph_for(runtime: str, folder: Path) -> Path:
    """The hybrid graph with the embedder on ``runtime`` and its own Chroma collection."""
    doc = json.loads(GRAPH.read_text(encoding="utf-8"))
    for node in doc["nodes"]:
        if node["type"] == "embed.model" and runtime == "torch":
            node["params"]["runtime"] = "torch"
        if node["type"] == "store.chroma":
            node["params"]["collection"] = f"bench-startup-{runtime}"
            node["params"]["path"] = str(folder / "chroma")
    path = folder / f"hybrid-{runtime}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def eval_args(graph: Path, dataset: Path, cache: Path) -> list[str]:
    return ["eval", str(graph), "--dataset", str(dataset), "--split", "train", "--limit", "1",
            "--cache-dir", str(cache), "--output", "fusion.results"]


#: Children write and read compiled bytecode (``__pycache__``), as Python does on a user's
#: machine; an environment that turns it off (``PYTHONDONTWRITEBYTECODE``) would make every
#: process compile the modules it imports from source again.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def pickled_bm25_index(graph: Path, dataset: Path, cache: Path, folder: Path) -> Path:
    """The graph's own BM25 index (from the node cache), pickled for the floor process."""
    import pickle

    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.run.executor import Executor

    executor = Executor(default_registry(), cache=NodeCache(disk_dir=cache), work_dir=folder)
    corpus = str((dataset / "corpus.jsonl").resolve())
    done = executor.run(load(graph), {"corpus": corpus, "query": "x"}, target="bm25_index")
    if not done.ok:
        raise SystemExit(f"the BM25 index did not build: {done.trace.failure_summary()}")
    path = folder / "bm25-index.pkl"
    path.write_bytes(pickle.dumps(done.output_of("bm25_index", "index")))
    return path


def timed_process(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=CHILD_ENV)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=300, help="first N abstracts (0: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir())
                                                   / "modrag-bench-startup"))
    args = parser.parse_args()
    folder = Path(args.data_dir) / f"docs-{args.docs or 'all'}"
    folder.mkdir(parents=True, exist_ok=True)
    dataset = dataset_dir(Path(args.dataset), args.docs, folder)
    cache = folder / "cache"
    query = json.loads((dataset / "queries.jsonl").read_text().splitlines()[0])["text"]
    python = sys.executable
    runtimes = ("numpy", "torch")
    graphs = {rt: graph_for(rt, folder) for rt in runtimes}
    for rt in runtimes:  # warm: indexes built and cached, nothing measured
        timed_process([python, "-m", "modrag_studio.cli", *eval_args(graphs[rt], dataset,
                                                                     cache)])
    bm25_file = pickled_bm25_index(graphs["numpy"], dataset, cache, folder)
    walls: dict[str, list[float]] = {f"{k} {rt}": [] for rt in runtimes
                                     for k in ("eval", "floor")}
    profiles: dict[str, dict] = {}
    floors: dict[str, dict] = {}
    for _ in range(args.repeat):
        for rt in runtimes:
            wall, line = timed_process([python, "-c", PROFILE,
                                        *eval_args(graphs[rt], dataset, cache)])
            walls[f"eval {rt}"].append(wall)
            profiles[rt] = json.loads(line)
            wall, line = timed_process([python, "-c", FLOOR, str(folder / "chroma"),
                                        f"bench-startup-{rt}", rt, query, str(bm25_file)])
            walls[f"floor {rt}"].append(wall)
            floors[rt] = eval(line)  # noqa: S307 (our own child's dict repr)
    print(f"fresh-process fixed cost, {args.docs or 'all'} docs, indexes cached; median of "
          f"{args.repeat} (seconds, wall from process start; bytecode cached, as on a "
          f"user's machine)")
    print(f"{'runtime':<8}{'modrag eval --limit 1':>24}{'floor':>9}{'eval/floor':>12}")
    for rt in runtimes:
        ev, fl = statistics.median(walls[f"eval {rt}"]), statistics.median(walls[f"floor {rt}"])
        print(f"{rt:<8}{ev:>24.2f}{fl:>9.2f}{ev / fl:>12.2f}")
    numpy_eval = statistics.median(walls["eval numpy"])
    print(f"torch / numpy for modrag eval --limit 1: "
          f"{statistics.median(walls['eval torch']) / numpy_eval:.2f}x")
    for rt in runtimes:
        prof = profiles[rt]
        nodes = sorted(prof["nodes"].items(), key=lambda kv: -kv[1])[:5]
        print(f"split ({rt}, last run, in-process): imports {prof['imports']:.2f} s, the "
              f"evaluation {prof['eval']:.2f} s (of which inside nodes: "
              + ", ".join(f"{n} {s:.2f}" for n, s in nodes)
              + "; the rest: registry, cache reads, store open in fingerprints, batched query "
              "embedding, report)")
        print(f"floor ({rt}, last run): "
              + ", ".join(f"{k} {v:.2f}" for k, v in floors[rt].items()))


if __name__ == "__main__":
    main()
