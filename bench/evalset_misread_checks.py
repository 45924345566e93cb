"""Model-free checks of generated questions against their value's sentence, measured on kept
sets whose rows were checked by hand: for each check, the poor and the good rows it would
reject, per corpus (answerable rows; and unanswerable Chinese rows asking of a piece of a
longer name); and the value sentences of each corpus (model-free counts).

    .venv/bin/python bench/evalset_misread_checks.py [--cache-dir DIR]

Reads the round-6 kept sets (``bench/results/evalset_quality_r6_{pkgdocs,demo,cmrc}.jsonl``),
their hand-check verdicts (the tables of ``bench/results/evalset_quality_before_after.md``)
and the corpora's chunks through ``sample_graphs/basic_rag.json``'s loader and splitter, as
generation reads them. ``unstated_details`` is a check measured and not built: a question's
key words (its subjects and question words left out) that the sentence stating its value (and
the one before) does not hold, more than half of them / any."""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation import misreads
from modrag_studio.evaluation.generation.content import (
    content_chunks,
    document_subject,
    package_name,
    question_subjects,
)
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from modrag_studio.evaluation.generation.fact_questions import current_facts
from modrag_studio.evaluation.generation.sampling import usable_chunks
from modrag_studio.evaluation.generation.terms import held_terms, key_terms
from modrag_studio.evaluation.generation.unanswerable import piece_of_a_name
from modrag_studio.evaluation.generation.verify import fact_sentences

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CORPORA = {"pkgdocs": "/work/shared/data/corpora/pkgdocs-dev/docs",
           "demo": str(ROOT / "resources" / "sample_corpus"),
           "cmrc": "/work/shared/data/cmrc2018-trial/corpus.jsonl"}
SECTIONS = {"pkgdocs": "### Round 6, pkgdocs-dev", "demo": "### Round 6, demo corpus",
            "cmrc": "### Round 6, cmrc2018-trial"}


def verdicts(name: str) -> dict[str, str]:
    """Row id -> good or poor, from the hand-check table of ``name``'s round-6 section."""
    text = (RESULTS / "evalset_quality_before_after.md").read_text(encoding="utf-8")
    start = text.index(SECTIONS[name])
    ends = [i for i in (text.find("\n### ", start + 5), text.find("\n## ", start)) if i > 0]
    section = text[start:min(ends, default=len(text))]
    return {m.group(1): m.group(2) for m in re.finditer(
        r"^\| (g\d{3}) \|.*\| (good|poor)\b[^|]*\|\s*$", section, re.M)}


def unstated(question: str, fact: str, chunk, language: str) -> tuple[int, int]:
    """(key words of the question besides its subjects, those its value's sentences lack)."""
    wide = " ".join(fact_sentences(fact, chunk.text))
    subjects = {t for s in question_subjects([chunk], language) for t in key_terms(s)}
    terms = [t for t in key_terms(question) if t not in subjects and t != "name"]
    held = set(held_terms(question, wide)) if wide else set(terms)
    return len(terms), sum(1 for t in terms if t not in held)


def row_checks(row: dict, chunks: dict, documents: dict) -> dict[str, str]:
    """The checks that would reject ``row`` (an answerable kept row), with what each found."""
    hits: dict[str, str] = {}
    question, kind = row["question"], next(t[5:] for t in row["tags"] if t[:5] == "type:")
    sources = [chunks[i] for i in row["expected_evidence"]["chunk_ids"]]
    for fact, chunk in zip(row["expected_facts"], sources, strict=False):
        stating = fact_sentences(fact, chunk.text, with_previous=False)
        subject = package_name(chunk) or document_subject(chunk)
        found = {
            "partial_value": misreads.partial_value(fact, question, stating),
            "example_code": misreads.example_code_value(fact, chunk.text, subject),
            "changed_later": misreads.changed_later(fact, chunk, documents[chunk.doc_id]),
            "dropped_kind": (None if kind == "paraphrase" else
                             misreads.dropped_kind(fact, question, stating)),
        }
        if kind != "paraphrase":
            terms, lacking = unstated(question, fact, chunk, row["language"])
            found["unstated_details (any)"] = "yes" if lacking else None
            found["unstated_details (over half)"] = "yes" if terms and (
                lacking * 2 > terms) else None
        hits.update({k: str(v) for k, v in found.items() if v})
    garbled = misreads.garbled_wording(question)
    if garbled:
        hits["garbled (wording)"] = garbled
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default="", help="node cache (default: a temporary one)")
    args = parser.parse_args()
    cache = Path(args.cache_dir or tempfile.mkdtemp(prefix="misread_checks_"))
    registry = default_registry()
    executor = Executor(registry, cache=NodeCache(disk_dir=cache))
    doc = load(str(ROOT / "sample_graphs" / "basic_rag.json"))
    source = find_chunk_source(doc, registry)
    table: dict[str, Counter] = defaultdict(Counter)
    anyone: Counter = Counter()
    counts: dict[str, tuple[int, int]] = {}
    lines = []
    for name, path in CORPORA.items():
        all_chunks = graph_chunks(doc, executor, {"corpus": path}, source)
        documents = defaultdict(list)
        for chunk in all_chunks:
            documents[chunk.doc_id].append(chunk)
        kept, _ = content_chunks(usable_chunks(all_chunks))
        facts = {c.chunk_id: current_facts(c, documents[c.doc_id]) for c in kept}
        counts[name] = (sum(map(len, facts.values())), sum(1 for f in facts.values() if f))
        by_id = {c.chunk_id: c for c in all_chunks}
        hand = verdicts(name)
        rows = [json.loads(line) for line in (RESULTS / f"evalset_quality_r6_{name}.jsonl")
                .read_text(encoding="utf-8").splitlines() if line.strip()]
        texts = [c.text for c in all_chunks]
        for row in rows:
            if not row["answerable"]:  # a Chinese template question: "{thing}的{detail}是什么？"
                thing = row["question"].split("的")[0] if row["language"] == "zh" else ""
                if thing and piece_of_a_name(thing, texts):
                    table["piece_of_a_name (unanswerable)"][(name, hand[row["id"]])] += 1
                    anyone[(name, hand[row["id"]])] += 1
                    lines.append(f"  {name} {row['id']} {hand[row['id']]}: piece_of_a_name "
                                 f"({thing})")
                continue
            hits = row_checks(row, by_id, documents)
            for check in hits:
                table[check][(name, hand[row["id"]])] += 1
            built = [k for k in hits if not k.startswith("unstated")]
            if built:
                anyone[(name, hand[row["id"]])] += 1
            if hits:
                lines.append(f"  {name} {row['id']} {hand[row['id']]}: "
                             + "; ".join(f"{k} ({v[:60]})" for k, v in hits.items()))
    header = " | ".join(f"{n}: poor / good" for n in CORPORA)
    print(f"| check | {header} |\n|---|" + "---|" * len(CORPORA))
    for check in sorted(table, key=lambda c: (c.startswith("unstated"), c)):
        cells = " | ".join(f"{table[check][(n, 'poor')]} / {table[check][(n, 'good')]}"
                           for n in CORPORA)
        print(f"| {check} | {cells} |")
    cells = " | ".join(f"{anyone[(n, 'poor')]} / {anyone[(n, 'good')]}" for n in CORPORA)
    print(f"| any built check | {cells} |")
    print("\nrows rejected:\n" + "\n".join(lines))
    print("\nvalue sentences / chunks holding one: " + ", ".join(
        f"{n} {a} / {b}" for n, (a, b) in counts.items()))


if __name__ == "__main__":
    main()
