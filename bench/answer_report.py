"""Breakdowns of stored answer rows: by language and question type, refusal precision and
recall, invented numbers, wrong-language answers, copied template text, median seconds.

    .venv/bin/python bench/answer_report.py FILE.jsonl [FILE.jsonl ...] [--evalset SET]
        [--graph NAME] [--corpus DIR] [--same-questions]

Rows come from ``bench_answer_metrics.py``. Facts are re-scored with today's answer metrics
against the evaluation set (so rows of different days compare). Refusal counts
a refused answer as the positive class: precision = unanswerable refused / all refused,
recall = unanswerable refused / unanswerable. When answers carry supporting quotes
(``answer.quote``), ``facts_right_own_words`` scores the answers without them: what the
model wrote, not the document's sentences appended to it. For sets with document ids
(CMRC), ``span_80`` counts answers holding 80% of the gold span's characters in order
(gold spans there carry context words: "树高可达55米" for an answer
"高度可达55米"). An invented number is a number (with or without a unit) or a date of an
answer that is not a refusal and that no evidence block contains; rows stored before the
evidence was kept are checked against the whole corpus
(``--corpus``), which can only under-count.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from modrag_nodes.generation.fact_match import fact_recall, is_refusal
from modrag_nodes.grounding.claims import Block, extract_claims
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import language_of

ROOT = Path(__file__).resolve().parent.parent
NUMERIC = ("quantity", "number", "date")
TEMPLATE = re.compile(r"<[^<>\n]{2,600}>|^\s*<|\[block number\]|write the answer as",
                      re.IGNORECASE)


def invented_numbers(answer: str, blocks: list[str]) -> list[str]:
    """Numbers and dates of ``answer`` that no block contains."""
    if is_refusal(answer):
        return []
    parsed = [Block.of(text) for text in blocks]
    from modrag_nodes.grounding.claims import claim_found
    return [c.text for c in extract_claims(answer) if c.kind in NUMERIC
            and not any(claim_found(c, b, []) for b in parsed)]


def row_extras(answer, question: str) -> dict:
    """What a row keeps beyond the metrics: evidence ids and texts' numbers check."""
    blocks = [item.chunk.text for item in answer.evidence]
    refused = bool(answer.fallback) or is_refusal(answer.text)
    return {"evidence_docs": [item.doc_id for item in answer.evidence],
            "invented_numbers": [] if refused else invented_numbers(answer.text, blocks),
            "answer_language": language_of(answer.text) if answer.text else "",
            "question_language": language_of(question),
            "template_copied": bool(TEMPLATE.search(answer.text)),
            "fallback": bool(answer.fallback)}


def _rows(files: list[Path], graph: str | None) -> list[dict]:
    rows = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if graph is None or row.get("graph") == graph:
                    row["_file"] = file.name
                    rows.append(row)
    return rows


def _type(tags: list[str]) -> str:
    for name in ("1-hop", "2-hop", "unanswerable"):
        if name in tags:
            return name
    return "other"


def span_coverage(gold: str, answer: str) -> float:
    """Share of the gold span's characters the answer has in the same order (longest common
    subsequence over the span's length): a span quoted with other words around it scores 1."""
    gold, answer = normalise(gold).replace(" ", ""), normalise(answer).replace(" ", "")
    if not gold:
        return 0.0
    row = [0] * (len(answer) + 1)
    for g in gold:
        previous = 0
        for j, a in enumerate(answer, start=1):
            current = row[j]
            row[j] = previous + 1 if g == a else max(row[j], row[j - 1])
            previous = current
    return row[-1] / len(gold)


def _span_right(row: dict, question: dict, least: float = 0.8) -> bool:
    """Every expected fact's best alternative covered at ``least`` (and not refused)."""
    facts = [f if isinstance(f, list) else [f] for f in question.get("expected_facts", [])]
    return bool(facts) and not row.get("refused") and all(
        max(span_coverage(alt, row.get("answer", "")) for alt in alts) >= least
        for alts in facts)


def _gold_in_prompt(row: dict, question: dict) -> bool:
    """Whether the answer was given a document of the question's expected ``doc_ids``."""
    wanted = set(question.get("expected_evidence", {}).get("doc_ids", []))
    return bool(wanted & set(row.get("evidence_docs", [])))


def _facts_right(row: dict, question: dict) -> bool:
    """Every expected fact stated and not refused, scored now (rows keep the scores of the
    metrics of their day; this re-scores them with today's)."""
    facts = [f if isinstance(f, list) else [f] for f in question.get("expected_facts", [])]
    recall, _ = fact_recall(facts, row.get("answer", ""))
    return recall == 1.0 and not row.get("refused")


_QUOTE_LINE = re.compile(r"^> .*$\n?", re.MULTILINE)


def own_words(answer: str) -> str:
    """The answer without its supporting-quote lines (``> “…” [n]``, from ``answer.quote``):
    what the model itself wrote."""
    return _QUOTE_LINE.sub("", answer).rstrip()


def _corpus_blocks(corpus: Path) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*_*.md"))]


def summarise(rows: list[dict], questions: dict[str, dict], corpus: list[str]) -> dict:
    """The figures of one group of rows."""
    answerable = [r for r in rows if questions[r["id"]]["answerable"]]
    unanswerable = [r for r in rows if not questions[r["id"]]["answerable"]]
    facts = [r for r in answerable if _facts_right(r, questions[r["id"]])]
    own = [r for r in answerable
           if _facts_right({**r, "answer": own_words(r.get("answer", ""))}, questions[r["id"]])]
    cites = [r for r in answerable if r["metrics"].get("citation_validity") == 1.0
             and (r["metrics"].get("citation_recall") or 0) > 0]
    refused = [r for r in rows if r.get("refused")]
    right_refusals = [r for r in refused if not questions[r["id"]]["answerable"]]
    invented = []
    for r in rows:
        if "invented_numbers" in r:
            invented.append(bool(r["invented_numbers"]))
        else:
            invented.append(bool(invented_numbers(r.get("answer", ""), corpus)))
    wrong_language = [r for r in rows if not r.get("refused") and r.get("answer")
                      and language_of(r["answer"]) != language_of(r["question"])]
    seconds = [r["metrics"].get("latency_s") or 0 for r in rows]
    in_prompt = [r for r in answerable if _gold_in_prompt(r, questions[r["id"]])]
    return {
        "questions": len(rows),
        "facts_right": f"{len(facts)}/{len(answerable)}",
        "facts_right_own_words": f"{len(own)}/{len(answerable)}",
        "span_80": f"{sum(_span_right(r, questions[r['id']]) for r in answerable)}"
                   f"/{len(answerable)}",
        "facts_right_gold_in_prompt": (f"{sum(r in facts for r in in_prompt)}/{len(in_prompt)}"
                                       if any("evidence_docs" in r for r in rows) else "-"),
        "citations_right": f"{len(cites)}/{len(answerable)}",
        "unanswerable_refused": f"{len(right_refusals)}/{len(unanswerable)}",
        "answerable_refused": f"{len(refused) - len(right_refusals)}/{len(answerable)}",
        "refusal_precision": (f"{len(right_refusals) / len(refused):.2f}" if refused else "-"),
        "refusal_recall": (f"{len(right_refusals) / len(unanswerable):.2f}"
                           if unanswerable else "-"),
        "invented_numbers": f"{sum(invented)}/{len(rows)}",
        "wrong_language": f"{len(wrong_language)}/{len(rows)}",
        "template_copied": f"{sum(bool(TEMPLATE.search(r.get('answer', ''))) for r in rows)}"
                           f"/{len(rows)}",
        "median_s": f"{statistics.median(seconds):.1f}" if seconds else "-",
    }


def report(rows: list[dict], questions: dict[str, dict], corpus: list[str]) -> str:
    columns = ["questions", "facts_right", "facts_right_gold_in_prompt", "citations_right",
               "unanswerable_refused",
               "answerable_refused", "refusal_precision", "refusal_recall",
               "invented_numbers", "wrong_language", "template_copied", "median_s"]
    if not any(q.get("expected_evidence", {}).get("doc_ids") for q in questions.values()):
        columns.remove("facts_right_gold_in_prompt")
    else:
        columns.insert(2, "span_80")
    if any(own_words(r.get("answer", "")) != r.get("answer", "").rstrip() for r in rows):
        columns.insert(2, "facts_right_own_words")
    lines = ["| rows | group | " + " | ".join(columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for source in dict.fromkeys((r["_file"], r["graph"]) for r in rows):
        picked = [r for r in rows if (r["_file"], r["graph"]) == source]
        groups = {"all": picked}
        for lang in ("en", "zh"):
            groups[lang] = [r for r in picked if questions[r["id"]].get("language") == lang]
        for kind in ("1-hop", "2-hop", "unanswerable"):
            groups[kind] = [r for r in picked
                            if _type(questions[r["id"]].get("tags", [])) == kind]
        for name, group in groups.items():
            if group:
                figures = summarise(group, questions, corpus)
                lines.append(f"| {source[0]}:{source[1]} | {name} | "
                             + " | ".join(str(figures[c]) for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--evalset", default=str(ROOT / "resources/sample_corpus/"
                                                  "eval_questions.jsonl"))
    parser.add_argument("--graph")
    parser.add_argument("--corpus", default=str(ROOT / "resources/sample_corpus"))
    parser.add_argument("--same-questions", action="store_true",
                        help="only the questions every file and graph answered")
    parser.add_argument("--ids", help="only these question ids (comma-separated)")
    args = parser.parse_args()
    questions = {}
    for line in Path(args.evalset).read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            questions[q["id"]] = q
    rows = [r for r in _rows(args.files, args.graph) if r["id"] in questions]
    if args.ids:
        wanted = set(args.ids.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    if args.same_questions:
        keys = {(r["_file"], r["graph"]) for r in rows}
        common = set.intersection(*({r["id"] for r in rows if (r["_file"], r["graph"]) == k}
                                    for k in keys))
        rows = [r for r in rows if r["id"] in common]
    print(report(rows, questions, _corpus_blocks(Path(args.corpus))))


if __name__ == "__main__":
    sys.exit(main())
