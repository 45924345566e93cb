"""Embedded chat model: load time (first conversion vs converted copy) and tokens per second.

Usage: .venv/bin/python bench/bench_embedded_llm.py [--tokens 64] [--threads N] [--fresh]
``--fresh`` converts the GGUF file again into a temporary model folder (first-time cost).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    parser.add_argument("--fresh", action="store_true", help="convert into an empty folder")
    args = parser.parse_args()
    if args.fresh:
        os.environ["MODRAG_MODEL_DIR"] = tempfile.mkdtemp(prefix="modrag-models-")
    start = time.perf_counter()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from modrag_nodes.llm import embedded
    from modrag_nodes.llm.client import LLMSpec, chat
    from modrag_studio.engine.core.datatypes import ChatMessage

    imported = time.perf_counter() - start
    cpu0 = time.process_time()
    loaded = embedded.load_model(embedded.packaged_gguf())
    print(f"import {imported:.1f} s; load {loaded.load_time_s:.1f} s ({loaded.source}, "
          f"cpu {time.process_time() - cpu0:.1f} s, torch threads {torch.get_num_threads()})")
    question = "Explain in detail how a library lends books to its members."
    messages = [ChatMessage(role="user", content=question)]
    for run in range(2):
        cpu0 = time.process_time()
        result = chat(LLMSpec(max_tokens=args.tokens), messages, stream=False)
        cpu = time.process_time() - cpu0
        rate = result.completion_tokens / result.duration_s
        print(f"run {run + 1}: {result.completion_tokens} tokens in {result.duration_s:.2f} s = "
              f"{rate:.1f} tokens/s (prompt {result.prompt_tokens} tokens, first token after "
              f"{result.time_to_first_token_s:.2f} s, cpu {cpu:.1f} s, stopped {result.stopped})")


if __name__ == "__main__":
    main()
