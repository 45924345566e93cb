"""The main job's prompts on the embedded llama.cpp: one at a time, with lookup decoding, and
several questions at once (slots), side by side.

The prompts are the real ones: the first ``--n`` questions of the demo evaluation set run
through ``sample_graphs/basic_rag.json`` up to its ``prompt`` node (retrieval, knowledge
graph, evidence focus; nothing generated). Each mode then answers all of them with Qwen
(greedy, ``max_tokens`` 160 and ``cache_prompt`` on, as the graph asks) in its own child
process, one mode after the other:

- ``plain``: one slot, one request after the other (the evaluation's ``--parallel 1``);
- ``lookup``: the same with prompt-lookup decoding (``llm.model`` ``lookup_decoding``);
- ``slots-K``: K slots, K threads each taking every K-th prompt (``--parallel K``).

Printed per mode: wall seconds, prompt and decode tokens with llama.cpp's own seconds for
them (summed over requests, so they overlap with slots), drafted and accepted tokens, the
ratio of wall times to ``plain``, and how many answers are the same text as ``plain``'s.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_generation_modes.py [--n 16]
     [--modes plain lookup slots-2 slots-4] [--threads 1] [--batch-threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "resources" / "sample_corpus" / "eval_questions.jsonl"


def graph_prompts(count: int) -> list[list[dict[str, str]]]:
    """The chat messages basic_rag builds for the first ``count`` demo questions."""
    from modrag_studio.commands.common import load_with_overrides
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor

    doc = load_with_overrides(str(ROOT / "sample_graphs" / "basic_rag.json"), [])
    with tempfile.TemporaryDirectory() as cache:
        executor = Executor(default_registry(), NodeCache(disk_dir=Path(cache)))
        rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
        prompts = []
        for row in rows[:count]:
            result = executor.run(doc, {"question": row["question"]}, target="prompt")
            prompt = result.node_outputs[("prompt", 0)]["prompt"]
            prompts.append([m.model_dump() for m in prompt.messages])
    return prompts


def child(mode: str, prompts_file: Path, threads: int, batch_threads: int) -> dict[str, Any]:
    from modrag_nodes.llm import qwen_model, xllamacpp_runtime

    prompts = json.loads(prompts_file.read_text(encoding="utf-8"))
    slots = int(mode.split("-")[1]) if mode.startswith("slots-") else 1
    engine = xllamacpp_runtime.start_engine(
        qwen_model.ensure_model(), threads, xllamacpp_runtime.MIN_CONTEXT * slots,
        batch_threads, parallel=slots, lookup=mode == "lookup")
    replies: dict[int, dict[str, Any]] = {}

    def ask(index: int) -> None:
        body = {"messages": prompts[index], "max_tokens": 160, "temperature": 0, "seed": 0,
                "repeat_penalty": 1.15, "stream": False, "cache_prompt": True}
        reply = engine.server.handle_chat_completions(body)
        replies[index] = {"text": reply["choices"][0]["message"]["content"],
                          "timings": reply.get("timings", {})}

    def worker(first: int) -> None:
        for index in range(first, len(prompts), slots):
            ask(index)

    start = time.perf_counter()
    workers = [threading.Thread(target=worker, args=(k,)) for k in range(slots)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    wall = time.perf_counter() - start

    def total(key: str) -> float:
        return sum(float(r["timings"].get(key) or 0) for r in replies.values())

    return {"mode": mode, "wall_s": wall, "prompt_n": total("prompt_n"),
            "prompt_s": total("prompt_ms") / 1000, "decode_n": total("predicted_n"),
            "decode_s": total("predicted_ms") / 1000, "drafted": total("draft_n"),
            "accepted": total("draft_n_accepted"),
            "texts": [replies[i]["text"] for i in range(len(prompts))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--modes", nargs="+", default=["plain", "lookup", "slots-2", "slots-4"])
    parser.add_argument("--threads", type=int, default=1, help="decode threads")
    parser.add_argument("--batch-threads", type=int, default=2, help="prompt threads")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prompts", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.prompts, args.threads, args.batch_threads)))
        return
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryDirectory() as scratch:
        prompts_file = Path(scratch) / "prompts.json"
        prompts_file.write_text(json.dumps(graph_prompts(args.n)), encoding="utf-8")
        print(f"{args.n} basic_rag prompts, Qwen, {args.threads} decode / {args.batch_threads} "
              f"prompt threads; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        results = []
        for mode in args.modes:
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--prompts", str(prompts_file),
                 "--threads", str(args.threads), "--batch-threads", str(args.batch_threads)],
                capture_output=True, text=True, check=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    base = results[0]
    print("| mode | wall s | x | prompt tokens (s) | decode tokens (s) | drafted / accepted "
          f"| answers as {base['mode']} |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        same = sum(a == b for a, b in zip(r["texts"], base["texts"], strict=True))
        print(f"| {r['mode']} | {r['wall_s']:.1f} | {base['wall_s'] / r['wall_s']:.2f} | "
              f"{r['prompt_n']:.0f} ({r['prompt_s']:.1f}) | {r['decode_n']:.0f} "
              f"({r['decode_s']:.1f}) | {r['drafted']:.0f} / {r['accepted']:.0f} | "
              f"{same}/{len(base['texts'])} |")
    for r in results[1:]:
        for index, (a, b) in enumerate(zip(base["texts"], r["texts"], strict=True)):
            if a != b:
                print(f"- {r['mode']} q{index}: {b[:90]!r} (plain: {a[:90]!r})")


if __name__ == "__main__":
    main()
