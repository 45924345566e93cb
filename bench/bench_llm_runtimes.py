"""Embedded chat runtimes: load time, time to first token, tokens/s and peak RSS per model.

Each (model, runtime) pair runs in a fresh child process so load time and peak RSS are its
own. Models: ``smollm2`` (packaged), ``qwen`` (assembled from its packages). Runtimes:
``xllamacpp`` (llama.cpp) and ``transformers`` (de-quantises the GGUF to float32 first; for
Qwen that is about 6 GB of RAM and minutes of conversion, so it is opt-in with ``--pairs``).

Usage:
  nice -n 10 .venv/bin/python bench/bench_llm_runtimes.py [--tokens 48] [--threads 1]
      [--pairs smollm2:xllamacpp smollm2:transformers qwen:xllamacpp qwen:transformers]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

MODELS = {"smollm2": "SmolLM2-135M-Instruct", "qwen": "qwen2.5-coder-1.5b-instruct"}
DEFAULT_PAIRS = ["smollm2:xllamacpp", "smollm2:transformers", "qwen:xllamacpp"]
QUESTION = "Explain in detail how a library lends books to its members."


def child(model: str, engine: str, tokens: int, threads: int) -> dict[str, object]:
    """Runs in the child process: load, then two generations; returns the figures."""
    import resource

    from modrag_nodes.llm.client import LLMSpec, chat
    from modrag_studio.engine.core.datatypes import ChatMessage

    extra = {"engine": engine, "threads": threads}
    messages = [ChatMessage(role="user", content=QUESTION)]
    start = time.perf_counter()
    first = chat(LLMSpec(model=MODELS[model], max_tokens=1, extra=extra), messages,
                 stream=False)
    load_s = first.load_time_s or 0.0
    first_call_s = time.perf_counter() - start
    result = chat(LLMSpec(model=MODELS[model], max_tokens=tokens, extra=extra), messages,
                  stream=False)
    decode_s = result.duration_s - (result.time_to_first_token_s or 0.0)
    return {
        "model": model, "engine": engine, "threads": threads, "load_s": round(load_s, 2),
        "first_call_s": round(first_call_s, 2),
        "ttft_s": round(result.time_to_first_token_s or 0.0, 2),
        "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "tokens_per_s": round(max(result.completion_tokens - 1, 0) / decode_s, 2)
        if decode_s > 0 else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", nargs="+", default=DEFAULT_PAIRS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model, engine = args.child.split(":")
        print(json.dumps(child(model, engine, args.tokens, args.threads)))
        return
    rows = []
    for pair in args.pairs:
        done = subprocess.run([sys.executable, __file__, "--child", pair, "--tokens",
                               str(args.tokens), "--threads", str(args.threads)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{pair}: failed: {done.stderr[-500:]}", file=sys.stderr)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| model | runtime | threads | load s | TTFT s | tokens/s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['engine']} | {r['threads']} | {r['load_s']} | "
              f"{r['ttft_s']} | {r['tokens_per_s']} | {r['peak_rss_mb']} |")


if __name__ == "__main__":
    main()
