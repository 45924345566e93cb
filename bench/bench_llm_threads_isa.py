"""Threads and instruction set for the embedded llama.cpp: prompt processing and decode speed.

One fixed RAG-style prompt (evidence paragraphs from ``resources/sample_corpus`` and a
question, about 700 tokens with Qwen's tokenizer), greedy, 64 new tokens. Per config it
reports prompt-processing tokens/s and decode tokens/s as llama.cpp times them itself
(``timings`` of the server for xllamacpp, ``llama_perf_context`` for llama-cpp-python), median
and min over the rounds, and the ratio of the medians to the first config.

Configs: ``xllamacpp`` (the prebuilt wheel, AVX2 kernels; with ``--layouts plain repacked``
also ``xllamacpp-repacked``, llama.cpp's default of weights repacked into the CPU's extra
buffer types and a memory-fitting probe at load, against the plain weights the project's
engine loads) at 1 and 2 threads and, when a
Python with ``llama-cpp-python`` is given (``--native-python``, default
``/work/venv-native/bin/python`` or ``$MODRAG_NATIVE_PYTHON``), ``llama-cpp-python`` built for
this CPU at 1 and 2 threads. A thread setting ``B/D`` (``--threads 1 2 2/1``) gives prompt
processing B threads and decode D threads (llama.cpp's ``n_threads_batch`` and ``n_threads``).
``--busy N`` runs N CPU-bound loops beside the measurements (a machine shared with other
work). Every measurement is a fresh child process (its own load and
memory): one short warm-up generation, then the measured one. Rounds run the configs in
alternating order (forward, then backward) so a drift in machine load spreads over all.
Both runtimes get the same prompt text (the ChatML form both models' templates produce) through
the plain completion call, so the token sequences are the same and the greedy texts comparable.

Usage (the xllamacpp side runs in the project's venv):
  HF_HUB_OFFLINE=1 PYTHONPATH=... .venv/bin/python bench/bench_llm_threads_isa.py
      [--models qwen smollm2] [--rounds 3] [--threads 1 2 2/1] [--tokens 64] [--busy 1]
      [--native-python /work/venv-native/bin/python]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "resources" / "sample_corpus"
# evidence in a fixed order; paragraphs are taken until the budget is reached
EVIDENCE_FILES = ["en_cnc_machines.md", "en_maintenance_schedule.md", "en_contracts.md",
                  "en_it_services.md", "en_company_overview.md"]
EVIDENCE_CHARS = 2900
SYSTEM = ("You answer questions about the company's documents. Use only the evidence given; "
          "cite the passage numbers you use.")
QUESTION = ("Why does CNC-A01 vibrate, which part and which contract are involved, and what "
            "should maintenance do about it? Explain step by step.")
DEFAULT_NATIVE = "/work/venv-native/bin/python"


def build_prompt() -> str:
    """The ChatML prompt (system, user with numbered evidence and question, assistant turn)."""
    passages: list[str] = []
    used = 0
    for name in EVIDENCE_FILES:
        text = (CORPUS / name).read_text(encoding="utf-8")
        for block in text.split("\n\n"):
            block = " ".join(block.split())
            if not block or block.startswith("#"):
                continue
            if used + len(block) > EVIDENCE_CHARS:
                break
            passages.append(block)
            used += len(block)
    evidence = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    user = f"Evidence:\n\n{evidence}\n\nQuestion: {QUESTION}"
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def model_paths(names: list[str]) -> dict[str, str]:
    from modrag_nodes.llm import embedded, qwen_model

    paths = {}
    for name in names:
        paths[name] = str(qwen_model.ensure_model() if name == "qwen"
                          else embedded.packaged_gguf())
    return paths


# --- children (stdlib only and the runtime: the native one runs in another venv) ---------

WARMUP_PROMPT = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"


def split_threads(spec: str) -> tuple[int, int]:
    """``"2"`` -> (2, 2); ``"2/1"`` -> prompt processing 2, decode 1."""
    batch, _, decode = spec.partition("/")
    return int(batch), int(decode or batch)


def child_xllamacpp(path: str, threads: str, prompt: str, tokens: int, *,
                    layout: str = "plain") -> dict:
    import xllamacpp as xlc

    batch, decode = split_threads(threads)

    params = xlc.CommonParams()
    params.model.path = path
    params.n_ctx = 4096
    params.n_parallel = 1
    params.cpuparams.n_threads = decode
    params.cpuparams_batch.n_threads = batch
    params.warmup = False
    if layout == "plain":  # what the project's engine uses (xllamacpp_runtime.start_engine)
        params.no_extra_bufts = True
        params.fit_params = False
    params.verbosity = -1
    params.endpoint_metrics = True
    start = time.perf_counter()
    server = xlc.Server(params)
    server.handle_metrics()
    load_s = time.perf_counter() - start

    def run(text: str, n: int) -> dict:
        return server.handle_completions({
            "prompt": text, "max_tokens": n, "temperature": 0.0, "top_k": 1,
            "repeat_penalty": 1.0, "cache_prompt": False, "seed": 0})

    run(WARMUP_PROMPT, 4)
    wall = time.perf_counter()
    out = run(prompt, tokens)
    wall = time.perf_counter() - wall
    t = out["timings"]
    return {"load_s": load_s, "prompt_n": t["prompt_n"], "prompt_ms": t["prompt_ms"],
            "decode_n": t["predicted_n"], "decode_ms": t["predicted_ms"], "wall_s": wall,
            "text": out["choices"][0]["text"], "system_info": xlc.get_system_info()}


def child_llama_cpp_python(path: str, threads: str, prompt: str, tokens: int, *,
                           layout: str = "repacked") -> dict:
    import llama_cpp
    import llama_cpp.llama_cpp as low_level

    batch, decode = split_threads(threads)
    if layout == "plain":  # the model params Llama() starts from, without the repacking
        defaults = low_level.llama_model_default_params

        def plain_params():
            params = defaults()
            params.use_extra_bufts = False
            return params

        low_level.llama_model_default_params = plain_params
    start = time.perf_counter()
    llm = llama_cpp.Llama(model_path=path, n_ctx=4096, n_batch=2048, n_ubatch=512,
                          n_threads=decode, n_threads_batch=batch, seed=0, verbose=False)
    load_s = time.perf_counter() - start

    def run(text: str, n: int) -> dict:
        llm.reset()  # no prefix reuse between calls: the whole prompt is evaluated
        llama_cpp.llama_perf_context_reset(llm.ctx)
        out = llm.create_completion(text, max_tokens=n, temperature=0.0, top_k=1,
                                    repeat_penalty=1.0, seed=0)
        perf = llama_cpp.llama_perf_context(llm.ctx)
        return {"out": out, "perf": perf}

    run(WARMUP_PROMPT, 4)
    wall = time.perf_counter()
    got = run(prompt, tokens)
    wall = time.perf_counter() - wall
    perf = got["perf"]
    return {"load_s": load_s, "prompt_n": perf.n_p_eval, "prompt_ms": perf.t_p_eval_ms,
            "decode_n": perf.n_eval, "decode_ms": perf.t_eval_ms, "wall_s": wall,
            "text": got["out"]["choices"][0]["text"],
            "system_info": llama_cpp.llama_print_system_info().decode(),
            "version": llama_cpp.__version__}


CHILDREN = {"xllamacpp": child_xllamacpp,
            "xllamacpp-repacked": functools.partial(child_xllamacpp, layout="repacked"),
            "llama-cpp-python": child_llama_cpp_python,
            "llama-cpp-python-plain": functools.partial(child_llama_cpp_python,
                                                        layout="plain")}


# --- parent ---------------------------------------------------------------------------------

def lscpu_avx512() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "lscpu unavailable"
    model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                  if ln.startswith("Model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in out.splitlines()
                  if ln.startswith("Flags")), [])
    return f"{model}; avx512 flags: {' '.join(f for f in flags if 'avx512' in f) or 'none'}"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"loadavg {Path('/proc/loadavg').read_text().strip()}"


def native_python(arg: str | None) -> str | None:
    candidate = arg or os.environ.get("MODRAG_NATIVE_PYTHON") or DEFAULT_NATIVE
    if candidate == "none" or not Path(candidate).exists():
        return None
    probe = subprocess.run([candidate, "-c", "import llama_cpp"], capture_output=True)
    return candidate if probe.returncode == 0 else None


def run_child(python: str, runtime: str, path: str, threads: str, prompt: str,
              tokens: int) -> dict:
    job = json.dumps({"runtime": runtime, "path": path, "threads": threads, "prompt": prompt,
                      "tokens": tokens})
    done = subprocess.run([python, __file__, "--child"], input=job, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{runtime}@{threads}: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["qwen", "smollm2"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", nargs="+", default=["1", "2"],
                        help="thread settings: N, or B/D (prompt processing / decode)")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--layouts", nargs="+", default=["plain"], choices=["plain", "repacked"],
                        help="xllamacpp weight layouts: plain (the project's engine) and/or "
                             "repacked into the CPU's extra buffer types (llama.cpp's default)")
    parser.add_argument("--native-python", help="a Python with llama-cpp-python ('none': skip)")
    parser.add_argument("--busy", type=int, default=0,
                        help="run this many CPU-bound busy loops beside the measurements "
                             "(a machine shared with other work)")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job = json.loads(sys.stdin.read())
        result = CHILDREN[job["runtime"]](job["path"], job["threads"], job["prompt"],
                                          job["tokens"])
        print(json.dumps(result))
        return

    prompt = build_prompt()
    paths = model_paths(args.models)
    native = native_python(args.native_python)
    configs = [("xllamacpp" if layout == "plain" else f"xllamacpp-{layout}", sys.executable, t)
               for layout in args.layouts for t in args.threads]
    if native:
        configs += [("llama-cpp-python" if layout == "repacked" else "llama-cpp-python-plain",
                     native, t) for layout in args.layouts for t in args.threads]
    print(f"CPU: {lscpu_avx512()}; {os.cpu_count()} logical CPUs")
    print(f"native Python: {native or 'not found (llama-cpp-python configs skipped)'}")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    print(f"busy loops beside the measurements: {args.busy}")
    print(f"start: {uptime()}")
    records: list[dict] = []
    try:
        measure(args, configs, paths, prompt, records)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    print(f"end: {uptime()}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    report(records, args.models, configs)


def measure(args: argparse.Namespace, configs: list[tuple], paths: dict[str, str],
            prompt: str, records: list[dict]) -> None:
    for model in args.models:
        for rnd in range(args.rounds):
            order = configs if rnd % 2 == 0 else configs[::-1]
            for runtime, python, threads in order:
                rec = run_child(python, runtime, paths[model], threads, prompt, args.tokens)
                rec.update(model=model, runtime=runtime, threads=threads, round=rnd,
                           uptime=uptime())
                rec["pp_tps"] = rec["prompt_n"] / rec["prompt_ms"] * 1000
                rec["tg_tps"] = rec["decode_n"] / rec["decode_ms"] * 1000
                records.append(rec)
                print(f"  {model} {runtime}@{threads} round {rnd}: pp {rec['pp_tps']:.1f} t/s "
                      f"({rec['prompt_n']} tok), decode {rec['tg_tps']:.2f} t/s "
                      f"({rec['decode_n']} tok), load {rec['load_s']:.1f} s | {rec['uptime']}",
                      flush=True)


def report(records: list[dict], models: list[str], configs: list[tuple]) -> None:
    for model in models:
        rows = [r for r in records if r["model"] == model]
        first_runtime, _, first_threads = configs[0]  # ratios are to the first config
        base = [r for r in rows if r["runtime"] == first_runtime
                and r["threads"] == first_threads]
        base_pp = statistics.median(r["pp_tps"] for r in base) if base else None
        base_tg = statistics.median(r["tg_tps"] for r in base) if base else None
        print(f"\n### {model}: prompt {rows[0]['prompt_n']} tokens, {rows[0]['decode_n']} "
              f"decoded, {len(rows) // len(configs)} rounds")
        print("| runtime | threads | pp t/s median | pp min | pp x | decode t/s median | "
              "decode min | decode x | load s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for runtime, _, threads in configs:
            mine = [r for r in rows if r["runtime"] == runtime and r["threads"] == threads]
            pp = statistics.median(r["pp_tps"] for r in mine)
            tg = statistics.median(r["tg_tps"] for r in mine)
            print(f"| {runtime} | {threads} | {pp:.1f} | {min(r['pp_tps'] for r in mine):.1f} | "
                  f"{pp / base_pp:.2f} | {tg:.2f} | {min(r['tg_tps'] for r in mine):.2f} | "
                  f"{tg / base_tg:.2f} | {statistics.median(r['load_s'] for r in mine):.1f} |"
                  if base_pp else f"| {runtime} | {threads} | {pp:.1f} | | | {tg:.2f} | | | |")
        print("\ngreedy texts (first round of each config):")
        seen: dict[str, str] = {}
        for runtime, _, threads in configs:
            first = next(r for r in rows if r["runtime"] == runtime and r["threads"] == threads)
            seen[f"{runtime}@{threads}"] = first["text"]
        ref_key = f"{first_runtime}@{first_threads}"
        ref = seen.get(ref_key)
        for key, text in seen.items():
            same = f"same as {ref_key}" if text == ref else f"DIFFERS from {ref_key}"
            print(f"- {key} ({same}): {text!r}")
        stable = {k: len({r['text'] for r in rows if f"{r['runtime']}@{r['threads']}" == k})
                  for k in seen}
        print(f"distinct texts over rounds per config: {stable}")
    infos = {}
    for r in records:
        infos.setdefault(r["runtime"], r.get("system_info", "").strip())
    print("\nsystem info as each runtime reports it:")
    for runtime, info in infos.items():
        print(f"- {runtime}: {info}")


if __name__ == "__main__":
    main()
