"""Bulk embedding: texts/s of each runtime of the packaged all-MiniLM-L6-v2, side by side.

One process embeds the same SciFact abstracts (title, blank line, text: as the loader reads
a BEIR record) in batches of ``--batch`` with each candidate, one after the other:

- ``torch unsorted``: sentence-transformers on torch, batches in corpus order;
- ``torch sorted`` (the floor): the same, texts sorted longest first before batching;
- ``onnx fp32 sorted``: ONNX Runtime on the export made here (``onnx_bert``);
- ``onnx int8 sorted``: its dynamically quantised copy (weights per channel);
- ``numpy sorted``: the numpy runtime (``numpy_bert``), on the first ``--numpy-docs`` texts
  only (it is the slowest by far);
- ``chosen``: ``embed_texts`` with runtime ``auto``, what indexing runs (it sorts itself).

Then whole jobs: a fresh process imports, loads and embeds every text through
``embed_texts`` (sorted batches), runtime ``torch`` against ``auto``, alternating, twice.

The floor and the chosen runtime run twice more, alternating, so a change in machine load
hits both; the ratio chosen / floor is given per round. Each candidate's vectors are compared
with torch's (cosine per text). Then fresh processes embed one query (start-up, and whether
torch was imported): with the export present, with none (numpy), and on torch.

Run: .venv/bin/python bench/bench_embed_runtimes.py [--docs 1000] [--batch 32]
Writes bench/results/embed_runtimes.json (and prints the table).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
OUT = ROOT / "bench" / "results" / "embed_runtimes.json"
QUERY = "0-dimensional biomaterials show inductive properties."

STARTUP = """
import sys, time
t0 = time.perf_counter()
from modrag_nodes.embedding import models
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
spec = EmbedderSpec(extra={} if sys.argv[1] == "auto" else {"runtime": sys.argv[1]})
vector = embed_texts(spec, [sys.argv[2]], role="query")
t1 = time.perf_counter()
print(round(t1 - t0, 3), type(models._sentence_transformer(spec)).__name__,
      "torch" in sys.modules, vector.shape[1])
"""

JOB = """
import json, sys, time
t0 = time.perf_counter()
from modrag_nodes.embedding import models
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
texts = json.load(open(sys.argv[2], encoding="utf-8"))
spec = EmbedderSpec(batch_size=int(sys.argv[3]),
                    extra={} if sys.argv[1] == "auto" else {"runtime": sys.argv[1]})
embed_texts(spec, texts)
print(round(time.perf_counter() - t0, 2),
      type(models._sentence_transformer(spec, len(texts))).__name__, "torch" in sys.modules)
"""


def job(runtime: str, texts_file: str, batch: int) -> dict[str, object]:
    """A whole indexing job's embedding in a fresh process: imports, load, every batch."""
    out = subprocess.run([sys.executable, "-c", JOB, runtime, texts_file, str(batch)],
                         cwd=ROOT, capture_output=True, text=True, timeout=3600, check=True)
    seconds, runtime_class, torch_imported = out.stdout.split()[-3:]
    return {"runtime_param": runtime, "seconds": float(seconds), "ran_on": runtime_class,
            "torch_imported": torch_imported == "True"}


def abstracts(n: int) -> list[str]:
    texts = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            texts.append(f"{record['title']}\n\n{record['text']}".strip())
            if len(texts) == n:
                break
    return texts


def batches(texts: list[str], size: int, *, sort: bool) -> tuple[list[list[int]], list[int]]:
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if sort else list(
        range(len(texts)))
    return [order[i:i + size] for i in range(0, len(order), size)], order


def timed(encode, texts: list[str], size: int, *, sort: bool) -> tuple[float, np.ndarray]:
    groups, _ = batches(texts, size, sort=sort)
    encode([texts[0]])  # warm: first-call allocations are not the runtime's speed
    vectors = np.zeros((len(texts), 384), dtype=np.float32)
    start = time.perf_counter()
    for group in groups:
        vectors[group] = encode([texts[i] for i in group])
    return len(texts) / (time.perf_counter() - start), vectors


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def load() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3])


def startup(runtime: str, model_dir: str | None) -> dict[str, object]:
    env = dict(os.environ)
    if model_dir is not None:
        env["MODRAG_MODEL_DIR"] = model_dir
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", STARTUP, runtime, QUERY], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    wall = time.perf_counter() - t0
    seconds, runtime_class, torch_imported, dim = out.stdout.split()[-4:]
    return {"runtime_param": runtime, "process_wall_s": round(wall, 2),
            "import_and_embed_s": float(seconds), "ran_on": runtime_class,
            "torch_imported": torch_imported == "True", "dim": int(dim)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--numpy-docs", type=int, default=64)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import torch
    from sentence_transformers import SentenceTransformer

    from modrag_nodes.embedding import models, onnx_bert
    from modrag_nodes.embedding.numpy_bert import NumpyBert
    from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts

    texts = abstracts(args.docs)
    folder = models.resolve_sentence_transformer(models.DEFAULT_MODEL)[0]
    started = time.perf_counter()
    onnx_bert.ensure_export(folder)
    export_s = time.perf_counter() - started
    started = time.perf_counter()
    onnx_bert.ensure_quantized(folder)
    quantize_s = time.perf_counter() - started
    result: dict[str, object] = {
        "docs": len(texts), "batch": args.batch, "cores": onnx_bert.cores(),
        "torch_threads": torch.get_num_threads(), "load_before": load(),
        "export_s_if_not_cached": round(export_s, 1), "quantize_s": round(quantize_s, 1)}
    st = SentenceTransformer(folder, device="cpu", local_files_only=True)

    def st_encode(batch: list[str]) -> np.ndarray:
        return st.encode(batch, batch_size=len(batch), convert_to_numpy=True,
                         show_progress_bar=False)

    fp32 = onnx_bert.OnnxBert(folder)
    int8 = onnx_bert.OnnxBert(folder, onnx_bert.ensure_quantized(folder))
    spec = EmbedderSpec(batch_size=args.batch)
    models.clear_models()
    embed_texts(spec, texts[:models.BULK_TEXTS])  # loads what bulk embedding runs on

    def chosen(batch: list[str]) -> np.ndarray:
        return embed_texts(spec, batch)

    rows: dict[str, dict[str, float]] = {}
    vectors: dict[str, np.ndarray] = {}
    for name, encode, sort in (("torch unsorted", st_encode, False),
                               ("torch sorted", st_encode, True),
                               ("onnx fp32 sorted", fp32.encode, True),
                               ("onnx int8 sorted", int8.encode, True)):
        rate, vectors[name] = timed(encode, texts, args.batch, sort=sort)
        rows[name] = {"texts_per_s": round(rate, 1)}
        print(f"{name:18} {rate:6.1f} texts/s  (load {load()})", flush=True)
    start = time.perf_counter()
    vectors["chosen"] = chosen(texts)
    rows["chosen"] = {"texts_per_s": round(len(texts) / (time.perf_counter() - start), 1),
                      "ran_on": type(models._sentence_transformer(spec, len(texts))).__name__}
    print(f"{'chosen':18} {rows['chosen']['texts_per_s']:6.1f} texts/s  "
          f"({rows['chosen']['ran_on']})", flush=True)
    sample = texts[:args.numpy_docs]
    rate, numpy_vectors = timed(NumpyBert(folder).encode, sample, args.batch, sort=True)
    rows["numpy sorted"] = {"texts_per_s": round(rate, 1), "docs": len(sample),
                            "min_cosine_to_torch": round(float(cosines(
                                numpy_vectors, vectors["torch sorted"][:len(sample)]).min()), 6)}
    print(f"{'numpy sorted':18} {rate:6.1f} texts/s  (first {len(sample)} texts)", flush=True)
    for name in ("torch unsorted", "onnx fp32 sorted", "onnx int8 sorted", "chosen"):
        rows[name]["min_cosine_to_torch"] = round(float(cosines(
            vectors[name], vectors["torch sorted"]).min()), 6)

    rounds = [{"torch sorted": rows["torch sorted"]["texts_per_s"],
               "chosen": rows["chosen"]["texts_per_s"]}]
    for _ in range(2):
        floor, _ = timed(st_encode, texts, args.batch, sort=True)
        start = time.perf_counter()
        embed_texts(spec, texts)
        mine = len(texts) / (time.perf_counter() - start)
        rounds.append({"torch sorted": round(floor, 1), "chosen": round(mine, 1)})
    for entry in rounds:
        entry["ratio"] = round(entry["chosen"] / entry["torch sorted"], 2)
    result.update(candidates=rows, floor_vs_chosen_rounds=rounds, load_after_bulk=load())
    print("rounds (torch sorted, chosen, ratio):",
          [(r["torch sorted"], r["chosen"], r["ratio"]) for r in rounds], flush=True)

    with tempfile.TemporaryDirectory() as work:
        texts_file = str(Path(work) / "texts.json")
        Path(texts_file).write_text(json.dumps(texts), encoding="utf-8")
        jobs = [job(runtime, texts_file, args.batch) for _ in range(2)
                for runtime in ("torch", "auto")]
    for entry in jobs:
        entry["texts_per_s"] = round(len(texts) / float(entry["seconds"]), 1)
        print("job", entry, flush=True)
    result["fresh_process_jobs"] = jobs
    result["load_after_jobs"] = load()

    with tempfile.TemporaryDirectory() as empty:
        result["startup_one_query"] = [startup("auto", None), startup("auto", empty),
                                       startup("torch", None)]
    for row in result["startup_one_query"]:
        print("start-up", row, flush=True)
    result["load_after"] = load()
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
