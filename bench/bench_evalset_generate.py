"""Time the generation of an evaluation set on the embedded chat model.

    .venv/bin/python bench/bench_evalset_generate.py [--n 60] [--model qwen|smollm2|BACKEND:MODEL]
        [--graph sample_graphs/basic_rag.json] [--input corpus=PATH] [--types ...] [--no-dense]
        [--out /tmp/bench_generated.jsonl] [--seed 0] [--extend SET.jsonl]

Prints the wall time (model load and corpus reading included), the questions kept per minute,
the seconds per model call and the quality report. The set is written to ``--out``; with
``--extend``, the rows of that set first, then the new ones (no near-duplicates of them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from modrag_nodes.llm.client import LLMSpec
from modrag_nodes.llm.pickers import best_embedded_model
from modrag_studio.commands.common import parse_pairs
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import atomic_write_text, load
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import dumps_evalset, load_evalset
from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"qwen": "embedded:qwen2.5-coder-1.5b-instruct",
          "smollm2": "embedded:SmolLM2-135M-Instruct"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--model", default="", help="qwen, smollm2 or BACKEND:MODEL "
                        "(default: the best embedded model installed)")
    parser.add_argument("--graph", default=str(ROOT / "sample_graphs" / "basic_rag.json"))
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--types", default="single,multi,unanswerable,paraphrase")
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument("--no-round-trip", action="store_true")
    parser.add_argument("--max-calls", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="/tmp/bench_generated.jsonl")
    parser.add_argument("--candidates", metavar="FILE",
                        help="also write every candidate, kept or not, with its verdict (JSONL)")
    parser.add_argument("--extend", metavar="SET", help="grow this set (another --seed)")
    args = parser.parse_args()
    flag = MODELS.get(args.model, args.model) or f"embedded:{best_embedded_model()}"
    backend, _, model = flag.partition(":")
    inputs = {k: str(Path(v).resolve()) if Path(v).exists() else v
              for k, v in parse_pairs(args.input, "--input").items()}
    config = GenerationConfig(n=args.n, llm=LLMSpec(backend=backend, model=model),
                              seed=args.seed, types=args.types.split(","),
                              dense=not args.no_dense, round_trip=not args.no_round_trip,
                              max_attempts=args.max_calls)
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=cache_home()))
    started = time.perf_counter()
    earlier = load_evalset(args.extend).questions if args.extend else []
    result = generate_evalset(load(args.graph), inputs, config, executor=executor,
                              extend=earlier,
                              on_status=lambda s: print(s, file=sys.stderr),
                              on_progress=lambda kept, n, last: print(
                                  f"{kept}/{n} kept; {last}", file=sys.stderr, flush=True))
    seconds = time.perf_counter() - started
    atomic_write_text(Path(args.out), dumps_evalset([*earlier, *result.questions]))
    if args.candidates:
        atomic_write_text(Path(args.candidates), "".join(json.dumps({
            "kind": c.kind, "language": c.language, "question": c.question, "facts": c.facts,
            "chunks": [k.chunk_id for k in c.chunks], "reason": c.verdict.reason,
            "detail": c.verdict.detail, "kept_as": c.row.id if c.row else None,
            "reply": c.reply}, ensure_ascii=False) + "\n" for c in result.candidates))
    calls = result.report.calls
    kept = len(result.questions)
    print(result.report.text())
    print(f"{flag}: {kept} questions kept of {args.n} asked, {calls} model calls, "
          f"{seconds:.0f} s wall, {kept / seconds * 60:.2f} questions/minute, "
          f"{seconds / max(1, calls):.1f} s per call; set in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
