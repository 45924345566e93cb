"""Answer quality of the RAG samples on the demo corpus: facts, citations, refusals.

Runs basic_rag, modular_rag and corrective_rag on the questions in
``bench/answer_quality_questions.jsonl`` (English and Chinese, answerable and not) with one
embedded model, question by question (so a partial run covers every graph), appending one JSON
line per answer to ``--out``. ``--report FILE...`` prints the table from such files.

A fact is right when the answer contains one of the expected phrases (and is not a refusal);
citations are right when there is at least one, none is invalid and one cites an expected
document; a refusal is right when an unanswerable question is refused and an answerable one
is not.

Usage:
  nice -n 10 .venv/bin/python bench/answer_quality.py --model qwen --out /tmp/q.jsonl
  .venv/bin/python bench/answer_quality.py --report /tmp/q.jsonl /tmp/s.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from modrag_studio.evaluation.answer_metrics import fact_found, is_refusal

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = Path(__file__).with_name("answer_quality_questions.jsonl")
GRAPHS = ("basic_rag", "modular_rag", "corrective_rag")
MODELS = {"qwen": "qwen2.5-coder-1.5b-instruct", "smollm2": "SmolLM2-135M-Instruct"}


def load_questions() -> list[dict[str, Any]]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def score(question: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Facts, citations and refusal verdicts for one answer."""
    text = answer.get("text", "")
    refused = is_refusal(text) or not text.strip()
    answerable = bool(question.get("facts"))
    cited_docs = {c.get("doc_id") for c in answer.get("citations", []) if c.get("valid")}
    if answerable:
        fact = not refused and any(fact_found(f, text) for f in question["facts"])
        citations = (bool(cited_docs) and not answer.get("invalid_citations")
                     and bool(cited_docs & set(question["docs"])))
    else:
        fact = citations = None
    return {"fact_right": fact, "citations_right": citations,
            "refusal_right": refused != answerable, "refused": refused}


def run(model: str, out: Path, graphs: list[str], limit: int | None, threads: int) -> None:
    from modrag_studio.commands.common import apply_overrides
    from modrag_studio.engine.cache import NodeCache
    from modrag_studio.engine.document import load
    from modrag_studio.engine.executor import Executor
    from modrag_studio.engine.paths import cache_home
    from modrag_studio.engine.serialize import to_jsonable

    docs = {}
    for name in graphs:
        doc = load(ROOT / "sample_graphs" / f"{name}.json")
        sets = {"llm.model": MODELS[model], "llm.threads": str(threads)}
        sets.update({f"{n.id}.default": str(ROOT / "resources" / "sample_corpus")
                     for n in doc.nodes if n.id == "corpus"})
        docs[name] = apply_overrides(doc, sets)
    executor = Executor(cache=NodeCache(disk_dir=cache_home()))
    for question in load_questions()[:limit]:
        for name, doc in docs.items():
            start = time.perf_counter()
            result = executor.run(doc, {"question": question["question"]})
            answer = to_jsonable(result.outputs.get("answer")) or {}
            if not isinstance(answer, dict):
                answer = {"text": str(answer)}
            llm_calls = sum(1 for v in result.trace.visits if "completion_tokens" in v.details)
            row = {"model": model, "graph": name, "id": question["id"],
                   "question": question["question"], "status": result.status,
                   "answer": answer.get("text", ""),
                   "citations": [c.get("ref") for c in answer.get("citations", [])],
                   "seconds": round(time.perf_counter() - start, 1), "llm_calls": llm_calls,
                   **score(question, answer)}
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"{model} {name} {question['id']}: {row['seconds']} s "
                  f"{row['answer'][:100]!r}", file=sys.stderr, flush=True)


def report(files: list[Path]) -> str:
    rows = [json.loads(line) for file in files for line in file.read_text().splitlines()
            if line.strip()]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["model"], row["graph"])].append(row)
    lines = ["| model | graph | questions | facts right | citations right | refusals right "
             "| median s |", "|---|---|---|---|---|---|---|"]

    def ratio(items: list[dict[str, Any]], key: str) -> str:
        judged = [r[key] for r in items if r[key] is not None]
        return f"{sum(judged)}/{len(judged)}" if judged else "-"

    for (model, graph), items in sorted(groups.items()):
        secs = sorted(r["seconds"] for r in items)
        lines.append(f"| {model} | {graph} | {len(items)} | {ratio(items, 'fact_right')} | "
                     f"{ratio(items, 'citations_right')} | {ratio(items, 'refusal_right')} | "
                     f"{secs[len(secs) // 2]:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    parser.add_argument("--graphs", nargs="+", choices=GRAPHS, default=list(GRAPHS))
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--threads", type=int, default=1, help="model threads (llm.threads)")
    parser.add_argument("--out", type=Path, help="append one JSON line per answer here")
    parser.add_argument("--report", type=Path, nargs="+", help="print the table of these files")
    args = parser.parse_args()
    if args.report:
        print(report(args.report))
        return
    if args.out is None:
        parser.error("--out is required to run")
    run(args.model, args.out, args.graphs, args.limit, args.threads)
    print(report([args.out]))


if __name__ == "__main__":
    main()
