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
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation.checks import misreads
from modrag_studio.evaluation.generation.checks.verify import fact_sentences, only_in_images
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from modrag_studio.evaluation.generation.fact_questions import current_facts
from modrag_studio.evaluation.generation.reading.content import (
    content_chunks,
    document_subject,
    package_name,
    question_subjects,
)
from modrag_studio.evaluation.generation.reading.terms import held_terms, key_terms
from modrag_studio.evaluation.generation.sampling import usable_chunks
from modrag_studio.evaluation.generation.unanswerable import piece_of_a_name

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CORPORA = {"pkgdocs": "/work/shared/data/corpora/pkgdocs-dev/docs",
           "demo": str(ROOT / "resources" / "sample_corpus"),
           "cmrc": "/work/shared/data/cmrc2018-trial/corpus.jsonl"}
# (set, corpus, kept rows in bench/results, the heading of its hand-check table): round 6
# decides which checks are built; the earlier hand-checked sets are shown beside it
SETS = (("r6 pkgdocs", "pkgdocs", "evalset_quality_r6_pkgdocs", "### Round 6, pkgdocs-dev"),
        ("r6 demo", "demo", "evalset_quality_r6_demo", "### Round 6, demo corpus"),
        ("r6 cmrc", "cmrc", "evalset_quality_r6_cmrc", "### Round 6, cmrc2018-trial"),
        ("r6 smoke pkgdocs", "pkgdocs", "evalset_quality_r6_smoke_pkgdocs",
         "## Round 6 (prepared"),
        ("r5 pkgdocs", "pkgdocs", "evalset_quality_r5_pkgdocs",
         "### Hand check, pkgdocs-dev round 5"),
        ("r4 pkgdocs", "pkgdocs", "evalset_quality_r4_pkgdocs",
         "### Hand check, pkgdocs-dev round 4"),
        ("r4 demo", "demo", "evalset_quality_r4_demo", "### Hand check, demo round 4"),
        ("r1 pkgdocs after", "pkgdocs", "evalset_quality_after_pkgdocs",
         "### Hand check, after"),
        ("r1 demo after", "demo", "evalset_quality_after_demo", "### Hand check, demo, after"),
        ("r7 pkgdocs", "pkgdocs", "evalset_quality_r7_pkgdocs", "### Round 7, pkgdocs-dev (40"),
        ("r7 demo", "demo", "evalset_quality_r7_demo", "### Round 7, demo corpus"),
        ("r7 cmrc", "cmrc", "evalset_quality_r7_cmrc", "### Round 7, cmrc2018-trial"),
        ("r7 pkgdocs seed 1", "pkgdocs", "evalset_quality_r7_pkgdocs_seed1",
         "### Round 7, pkgdocs-dev, seed 1"),
        ("r8 pkgdocs seed 2", "pkgdocs", "evalset_quality_r8_pkgdocs_seed2",
         "### Round 8, pkgdocs-dev, seed 2"),
        ("r9 pkgdocs seed 3", "pkgdocs", "evalset_quality_r9_pkgdocs_seed3",
         "### Round 9, pkgdocs-dev, seed 3"),
        ("r10 pkgdocs seed 4", "pkgdocs", "evalset_quality_r10_pkgdocs_seed4",
         "### Round 10, pkgdocs-dev, seed 4"),
        ("r10 pkgdocs seed 5", "pkgdocs", "evalset_quality_r10_pkgdocs_seed5",
         "### Round 10, pkgdocs-dev, seed 5"),
        ("r10 pkgdocs seed 6", "pkgdocs", "evalset_quality_r10_pkgdocs_seed6",
         "### Round 10, pkgdocs-dev, seed 6"),
        ("r10 demo seed 4", "demo", "evalset_quality_r10_demo_seed4",
         "### Round 10, demo corpus, seed 4"),
        ("r10 cmrc seed 4", "cmrc", "evalset_quality_r10_cmrc_seed4",
         "### Round 10, cmrc2018-trial, seed 4"),
        ("r11 cmrc seed 5", "cmrc", "evalset_quality_r11_cmrc_seed5",
         "### Round 11, cmrc2018-trial, seed 5"),
        ("r11 pkgdocs seed 7", "pkgdocs", "evalset_quality_r11_pkgdocs_seed7",
         "### Round 11, pkgdocs-dev, seed 7"))


def corpus_chunks(cache_dir: str = "", prefix: str = "evalset_bench_") -> dict[str, list[Chunk]]:
    """Each corpus of ``CORPORA``: its chunks as generation reads them, through
    ``sample_graphs/basic_rag.json``'s loader and splitter (node cache ``cache_dir``, a
    temporary one named ``prefix``… when empty)."""
    cache = Path(cache_dir or tempfile.mkdtemp(prefix=prefix))
    registry = default_registry()
    executor = Executor(registry, cache=NodeCache(disk_dir=cache))
    doc = load(str(ROOT / "sample_graphs" / "basic_rag.json"))
    source = find_chunk_source(doc, registry)
    return {name: graph_chunks(doc, executor, {"corpus": path}, source)
            for name, path in CORPORA.items()}


def verdicts(heading: str) -> dict[str, str]:
    """Row id -> good or poor, from the hand-check table of the section ``heading`` opens."""
    text = (RESULTS / "evalset_quality_before_after.md").read_text(encoding="utf-8")
    start = text.index(f"\n{heading}") + 1
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
            "partial_value": (misreads.partial_value(fact, question, stating)
                              or misreads.cut_range(fact, chunk.text)),
            "example_code": misreads.example_code_value(fact, chunk.text, subject),
            "changed_later": misreads.changed_later(fact, chunk, documents[chunk.doc_id]),
            "dropped_kind": (None if kind == "paraphrase" else
                             misreads.dropped_kind(fact, question, stating)),
            "shape_against_question": misreads.shape_against_question(fact, question),
            "negated_value": misreads.negated_value(fact, question, stating),
            "answer_is_image_text": "yes" if only_in_images(fact, chunk.text) else None,
            "bound_against_question": misreads.bound_against_question(fact, question,
                                                                      stating),
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
    corpora = {}
    counts: dict[str, tuple[int, int]] = {}
    for name, all_chunks in corpus_chunks(args.cache_dir, "misread_checks_").items():
        documents = defaultdict(list)
        for chunk in all_chunks:
            documents[chunk.doc_id].append(chunk)
        kept, _ = content_chunks(usable_chunks(all_chunks))
        facts = {c.chunk_id: current_facts(c, documents[c.doc_id]) for c in kept}
        counts[name] = (sum(map(len, facts.values())), sum(1 for f in facts.values() if f))
        corpora[name] = ({c.chunk_id: c for c in all_chunks}, documents,
                         [c.text for c in all_chunks])
    table: dict[str, Counter] = defaultdict(Counter)
    anyone: Counter = Counter()
    lines = []
    for label, name, stem, heading in SETS:
        by_id, documents, texts = corpora[name]
        hand = verdicts(heading)
        rows = [json.loads(line) for line in (RESULTS / f"{stem}.jsonl")
                .read_text(encoding="utf-8").splitlines() if line.strip()]
        for row in rows:
            verdict = hand.get(row["id"])
            if verdict is None:
                continue  # (a row the hand check left out)
            if not row["answerable"]:  # a Chinese template question: "{thing}的{detail}是什么？"
                thing = row["question"].split("的")[0] if row["language"] == "zh" else ""
                hits = {"piece_of_a_name (unanswerable)": thing} if thing and piece_of_a_name(
                    thing, texts) else {}
            else:
                hits = row_checks(row, by_id, documents)
            for check in hits:
                table[check][(label, verdict)] += 1
            if any(not k.startswith("unstated") for k in hits):
                anyone[(label, verdict)] += 1
            if hits:
                lines.append(f"  {label} {row['id']} {verdict}: "
                             + "; ".join(f"{k} ({v[:60]})" for k, v in hits.items()))
    labels = [s[0] for s in SETS]
    for title, group in (("round 6 (decides)", labels[:3]), ("earlier hand checks", labels[3:9]),
                         ("later hand checks", labels[9:15]), ("round 10", labels[15:])):
        print(f"\n{title}, poor / good rejected\n| check | " + " | ".join(group) + " |\n|---|"
              + "---|" * len(group))
        for check in sorted(table, key=lambda c: (c.startswith("unstated"), c)):
            print(f"| {check} | " + " | ".join(
                f"{table[check][(g, 'poor')]} / {table[check][(g, 'good')]}" for g in group)
                + " |")
        print("| any built check | " + " | ".join(
            f"{anyone[(g, 'poor')]} / {anyone[(g, 'good')]}" for g in group) + " |")
    print("\nrows rejected:\n" + "\n".join(lines))
    print("\nvalue sentences / chunks holding one: " + ", ".join(
        f"{n} {a} / {b}" for n, (a, b) in counts.items()))


if __name__ == "__main__":
    main()
