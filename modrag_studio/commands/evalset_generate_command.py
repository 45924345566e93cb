"""``modrag evalset generate GRAPH --input corpus=PATH --n 60 --out set.jsonl``: an
evaluation set written from a corpus by a chat model, with the graph's own loader and
splitter, every question verified before it is kept. The set file appears only when complete
(written through a temporary file); a failure or Ctrl-C leaves nothing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from modrag_studio.commands.common import (
    add_trust_option,
    load_with_overrides,
    refused_untrusted,
    shell_inputs,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    es = subparsers.add_parser("evalset", help="evaluation sets: generate one from a corpus")
    sub = es.add_subparsers(dest="evalset_command", required=True, metavar="ACTION")
    gen = sub.add_parser("generate", help="write verified questions about a corpus with a chat "
                         "model, using the graph's loader and splitter")
    gen.add_argument("graph", help="graph JSON file (its loader and splitter read the corpus)")
    gen.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                     help="a graph input, e.g. corpus=PATH (repeatable)")
    gen.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")
    gen.add_argument("--n", type=int, default=60, help="questions to keep (default 60)")
    gen.add_argument("--out", "-o", required=True, metavar="SET.jsonl",
                     help="the evaluation set to write (JSON Lines)")
    gen.add_argument("--seed", type=int, default=0, help="sampling and model seed (default 0)")
    gen.add_argument("--types", default="single,multi,unanswerable,paraphrase",
                     help="question types, comma-separated (default: single, multi, "
                          "unanswerable, paraphrase; also claim: a statement of a chunk's main "
                          "point, for retrieval)")
    gen.add_argument("--unanswerable-share", type=float, default=None, metavar="SHARE",
                     help="unanswerable questions at most this share of --n (default 0.25; "
                          "the share other types cannot fill goes to single questions first)")
    gen.add_argument("--language", default="auto", choices=("auto", "en", "zh"),
                     help="auto: each chunk's own language; en/zh: only chunks in it")
    gen.add_argument("--model", default="embedded", metavar="BACKEND[:MODEL]",
                     help="the chat model writing the questions (default: the best embedded "
                          "model installed; e.g. ollama:qwen2.5:7b, openai:gpt-4o-mini)")
    gen.add_argument("--host", help="server URL of an ollama or openai backend")
    gen.add_argument("--chunks", metavar="NODE.PORT",
                     help="the splitter output to use when the graph has several")
    gen.add_argument("--no-dense", action="store_true",
                     help="check specificity with BM25 only (no embedding of the corpus)")
    gen.add_argument("--no-round-trip", action="store_true",
                     help="keep questions without asking each again of the passages a search "
                          "finds (fewer model calls, more ambiguous questions)")
    gen.add_argument("--no-value-facts", action="store_true",
                     help="single and paraphrase questions from whole chunks only (by default "
                          "a sentence stating a value is tried first: its value is the fact, "
                          "the model only words the question)")
    gen.add_argument("--reword", metavar="SET.jsonl",
                     help="instead of writing new questions, paraphrase the answerable "
                          "single-chunk questions of SET (their facts and evidence kept), each "
                          "verified as a paraphrase, and translate its claims into the other "
                          "language and back, each verified as a claim; --n caps how many "
                          "are kept")
    gen.add_argument("--extend", metavar="SET.jsonl",
                     help="grow SET: write its rows, then up to --n new ones (none a "
                          "near-duplicate of its questions, ids numbered after its own); run "
                          "with another --seed when a small corpus cannot fill a set at once")
    gen.add_argument("--max-calls", type=int, metavar="N",
                     help="model calls at most (default 4 x n + 20; 3 x n + 20 without the "
                          "round trip)")
    gen.add_argument("--report", metavar="R.json", help="also write the quality report as JSON")
    gen.add_argument("--cache-dir", help="node result cache folder")
    add_trust_option(gen)
    gen.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    gen.set_defaults(func=run_generate)


def llm_from_flag(flag: str, host: str | None = None):
    """``BACKEND[:MODEL]`` as an LLMSpec; the embedded backend's default is the best model
    installed (Qwen2.5-Coder-1.5B when present, else SmolLM2-135M)."""
    from modrag_nodes.llm.api import LLMSpec

    backend, _, model = flag.partition(":")
    backend = backend.strip() or "embedded"
    if backend == "embedded" and not model.strip():
        from modrag_nodes.llm.api import best_embedded_model

        model = best_embedded_model()
    return LLMSpec(backend=backend, model=model.strip(), host=host or None)


def run_generate(args: argparse.Namespace) -> int:
    from modrag_studio.commands.progress import ProgressLine
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import atomic_write_text
    from modrag_studio.engine.core.errors import ModragError, RunCancelled
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.evalset import dumps_evalset, load_evalset
    from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset

    doc = load_with_overrides(args.graph, args.set)
    if doc is None or refused_untrusted(args.graph, args.trust, doc):
        return EXIT_INVALID
    registry = default_registry()
    line = None if args.quiet else ProgressLine("questions kept", every_s=0)

    def status(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    try:
        inputs = shell_inputs(doc, args.input, registry)
        config = GenerationConfig(
            n=args.n, llm=llm_from_flag(args.model, args.host), seed=args.seed,
            types=[t.strip() for t in args.types.split(",") if t.strip()],
            language=args.language, dense=not args.no_dense, chunks=args.chunks,
            max_attempts=args.max_calls, round_trip=not args.no_round_trip,
            value_facts=not args.no_value_facts)
        if args.unanswerable_share is not None:
            config.unanswerable_share = args.unanswerable_share
        config.check()
        out = Path(args.out)
        if not out.parent.is_dir():
            raise ValueError(f"--out {out}: the folder {out.parent} does not exist")
        executor = Executor(registry, cache=NodeCache(disk_dir=Path(args.cache_dir or
                                                                    cache_home())))
        reword = load_evalset(args.reword).questions if args.reword else None
        earlier = load_evalset(args.extend).questions if args.extend else []
        result = generate_evalset(doc, inputs, config, executor=executor,
                                  on_progress=line.update if line else None, on_status=status,
                                  reword=reword, extend=earlier)
    except RunCancelled as exc:
        print(f"cancelled: {exc}; nothing written", file=sys.stderr)
        return EXIT_RUN_FAILED
    except KeyboardInterrupt:
        print("interrupted; nothing written", file=sys.stderr)
        return EXIT_RUN_FAILED
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}; nothing written", file=sys.stderr)
        return EXIT_INVALID
    finally:
        if line is not None:
            line.close()
    if not result.questions:
        print(f"error: no question passed the checks; nothing written\n{result.report.text()}",
              file=sys.stderr)
        return EXIT_RUN_FAILED
    atomic_write_text(out, dumps_evalset([*earlier, *result.questions]))
    if args.report:
        atomic_write_text(Path(args.report), json.dumps(result.report.to_dict(), indent=2,
                                                        ensure_ascii=False))
    print(result.report.text())
    print(f"wrote {len(earlier) + len(result.questions)} questions to {out}"
          + (f" ({len(result.questions)} new)" if earlier else ""))
    return EXIT_OK
