"""The unnamed-subject check with subjects written in most of a corpus's documents left out
(``reading.content.DocumentSpread``), measured on kept sets whose rows were checked by hand:
the rows that named only such a subject, poor and good, per corpus; an English row from a
package's document is reworded to name the package ("In multidict, ...?") when it still
passes its checks, else rejected as ``unnamed_subject``.

    .venv/bin/python bench/evalset_widespread_subjects.py [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from evalset_misread_checks import CORPORA, RESULTS, corpus_chunks, verdicts

from modrag_studio.evaluation.generation.reading.content import (
    DocumentSpread,
    names_any,
    package_name,
    question_subjects,
)
from modrag_studio.evaluation.generation.sampling import usable_chunks

SETS = (("r6", "pkgdocs", "evalset_quality_r6_pkgdocs", "### Round 6, pkgdocs-dev"),
        ("r6", "demo", "evalset_quality_r6_demo", "### Round 6, demo corpus"),
        ("r6", "cmrc", "evalset_quality_r6_cmrc", "### Round 6, cmrc2018-trial"),
        ("r7", "pkgdocs", "evalset_quality_r7_pkgdocs", "### Round 7, pkgdocs-dev (40"),
        ("r7", "demo", "evalset_quality_r7_demo", "### Round 7, demo corpus"),
        ("r7", "cmrc", "evalset_quality_r7_cmrc", "### Round 7, cmrc2018-trial"),
        ("r7 seed 1", "pkgdocs", "evalset_quality_r7_pkgdocs_seed1",
         "### Round 7, pkgdocs-dev, seed 1"),
        ("r8 seed 2", "pkgdocs", "evalset_quality_r8_pkgdocs_seed2",
         "### Round 8, pkgdocs-dev, seed 2"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default="", help="node cache (default: a temporary one)")
    args = parser.parse_args()
    corpora = {name: ({c.chunk_id: c for c in chunks}, DocumentSpread(usable_chunks(chunks)))
               for name, chunks in corpus_chunks(args.cache_dir, "widespread_").items()}
    seen: set[tuple[str, str]] = set()
    counts: Counter = Counter()
    lines = []
    for label, corpus, stem, heading in SETS:
        by_id, spread = corpora[corpus]
        hand = verdicts(heading)
        for line in (RESULTS / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            verdict = hand.get(row["id"])
            ids = (row.get("expected_evidence") or {}).get("chunk_ids") or []
            if verdict is None or not ids or (corpus, row["question"]) in seen:
                continue
            seen.add((corpus, row["question"]))
            counts[(corpus, verdict, "rows")] += 1
            chunks = [by_id[i] for i in ids]
            subjects = question_subjects(chunks, row["language"])
            kept = spread.naming(subjects, chunks)
            if names_any(row["question"], subjects) and not names_any(row["question"], kept):
                named = [t for t in subjects if names_any(row["question"], [t])]
                package = package_name(chunks[0])
                outcome = "reworded" if package and row["language"] == "en" else "rejected"
                counts[(corpus, verdict, outcome)] += 1
                lines.append(f"  {label} {corpus} {row['id']} {verdict}, {outcome}: "
                             f"{row['question'][:80]!r} named only {named}")
    print("answerable and unanswerable rows with evidence, each question once per corpus\n")
    print("| corpus | rows poor / good | reworded poor / good | rejected poor / good |")
    print("|---|---|---|---|")
    for corpus in CORPORA:
        print(f"| {corpus} | " + " | ".join(
            f"{counts[(corpus, 'poor', k)]} / {counts[(corpus, 'good', k)]}"
            for k in ("rows", "reworded", "rejected")) + " |")
    print("\nrows whose only named subject is widespread:\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
