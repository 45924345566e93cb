"""Batched generation on the embedded llama.cpp: parallel slots against one request at a time.

The answer evaluation asks the chat model one question after another. llama.cpp can serve
several requests together (``n_parallel`` slots; their prompts and decode steps share one
batch). This bench sends the same K RAG prompts (numbered evidence from
``resources/sample_corpus`` and a question, about 600-650 tokens each with Qwen's tokenizer;
greedy, ``cache_prompt`` off, at most 64 new tokens) to one engine with 1 slot, one request
after the other, and to one engine with ``--slots`` slots, all K requests at once from K
threads. It prints the wall time of each, the ratio, llama.cpp's own prompt and decode
timings per request, and which answers differ from the one-at-a-time run.

Each mode runs in its own child process (its own load and memory), one after the other.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_parallel_generation.py [--k 4] [--slots 4]
     [--threads 1] [--batch-threads 2] [--model qwen|smollm2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "resources" / "sample_corpus"
EVIDENCE_CHARS = 2600
SYSTEM = ("You answer questions about the company's documents. Use only the evidence given; "
          "cite the passage numbers you use.")
QUESTIONS = ["What is the service interval of LP-07?", "Who supplies the spindle bearings?",
             "Which contract covers CNC-A01?", "What does the IT helpdesk do on weekends?",
             "When was the company founded?", "What is the warranty of HP-03?",
             "Which services depend on the warehouse database?",
             "What is the coolant change interval?"]


def messages_for(index: int) -> list[dict[str, str]]:
    """Question ``index`` with evidence paragraphs taken from a rotated list of documents."""
    files = sorted(CORPUS.glob("en_*.md"))
    start = index % len(files)
    blocks = [" ".join(block.split())
              for path in files[start:] + files[:start]
              for block in path.read_text(encoding="utf-8").split("\n\n")]
    evidence: list[str] = []
    used = 0
    for block in (b for b in blocks if b and not b.startswith("#")):
        if used + len(block) > EVIDENCE_CHARS:
            break
        evidence.append(block)
        used += len(block)
    numbered = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(evidence, 1))
    question = QUESTIONS[index % len(QUESTIONS)]
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Evidence:\n\n{numbered}\n\nQuestion: {question}"}]


def child(args: argparse.Namespace) -> dict[str, Any]:
    from modrag_nodes.llm import embedded, qwen_model, xllamacpp_runtime

    path = qwen_model.ensure_model() if args.model == "qwen" else embedded.packaged_gguf()
    slots = args.child_slots
    # the nodes' own engine set-up; each slot gets n_ctx / n_parallel of context
    server = xllamacpp_runtime.start_engine(path, args.threads, 4096 * slots, args.batch_threads,
                                            parallel=slots).server
    results: dict[int, dict[str, Any]] = {}

    def ask(index: int) -> None:
        body = {"messages": messages_for(index), "max_tokens": 64, "temperature": 0,
                "seed": 1, "stream": False, "cache_prompt": False}
        reply = server.handle_chat_completions(body)
        results[index] = {"text": reply["choices"][0]["message"]["content"],
                          "timings": reply.get("timings", {})}

    start = time.perf_counter()
    if slots == 1:
        for index in range(args.k):
            ask(index)
    else:
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(args.k)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return {"wall_s": time.perf_counter() - start, "results": results}


def run_mode(args: argparse.Namespace, slots: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child-slots", str(slots), "--k", str(args.k),
               "--threads", str(args.threads), "--batch-threads", str(args.batch_threads),
               "--model", args.model]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    data = json.loads(out.strip().splitlines()[-1])
    data["results"] = {int(k): v for k, v in data["results"].items()}
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=4, help="requests")
    parser.add_argument("--slots", type=int, default=4, help="parallel slots of the batched run")
    parser.add_argument("--threads", type=int, default=1, help="decode threads")
    parser.add_argument("--batch-threads", type=int, default=2, help="prompt threads")
    parser.add_argument("--model", choices=["qwen", "smollm2"], default="qwen")
    parser.add_argument("--child-slots", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_slots:
        print(json.dumps(child(args)))
        return
    one = run_mode(args, 1)
    many = run_mode(args, args.slots)
    print(f"{args.model}, {args.k} requests, threads {args.batch_threads} prompt / "
          f"{args.threads} decode")
    for label, data in (("one at a time", one), (f"{args.slots} slots at once", many)):
        print(f"\n{label}: wall {data['wall_s']:.1f} s")
        for index, row in sorted(data["results"].items()):
            t = row["timings"]
            print(f"  q{index}: prompt {t.get('prompt_n', 0)} tok"
                  f" {t.get('prompt_ms', 0) / 1000:.1f} s"
                  f" ({t.get('prompt_per_second', 0):.1f} t/s), decode {t.get('predicted_n', 0)}"
                  f" tok {t.get('predicted_ms', 0) / 1000:.1f} s"
                  f" ({t.get('predicted_per_second', 0):.1f} t/s)")
    same = [i for i in one["results"] if one["results"][i]["text"] == many["results"][i]["text"]]
    print(f"\nbatched / one at a time, wall: {many['wall_s'] / one['wall_s']:.2f}x "
          f"(speed-up {one['wall_s'] / many['wall_s']:.2f}x)")
    print(f"answers identical to the one-at-a-time run: {len(same)} of {len(one['results'])}")
    for index in sorted(set(one["results"]) - set(same)):
        print(f"  q{index} one at a time: {one['results'][index]['text']!r}")
        print(f"  q{index} batched:       {many['results'][index]['text']!r}")


if __name__ == "__main__":
    main()
