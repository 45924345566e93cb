"""Model-free replay of the subject check (a question must name one of its chunks' subjects)
on stored round-7 runs: which ``unnamed_subject`` rejections it now accepts, and the kept
questions' verdicts and names (the names a near-duplicate check compares), written as JSON to
compare two versions of the code.

    .venv/bin/python bench/evalset_subject_check.py --out NEW.json [--cache-dir DIR]
    PYTHONPATH=OLD_TREE .venv/bin/python bench/evalset_subject_check.py --out OLD.json
    .venv/bin/python bench/evalset_subject_check.py --compare OLD.json NEW.json

Reads ``bench/results/evalset_quality_r7_{demo,pkgdocs,cmrc}.report.json`` (their
``rejected_candidates``), the kept sets beside them (answerable rows: their chunks are
known) and the corpora's chunks through ``sample_graphs/basic_rag.json``'s loader and
splitter, as generation reads them."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from modrag_studio.evaluation.generation.reading.content import names_any, question_subjects

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CORPORA = {"demo": str(ROOT / "resources" / "sample_corpus"),
           "pkgdocs": "/work/shared/data/corpora/pkgdocs-dev/docs",
           "cmrc": "/work/shared/data/cmrc2018-trial/corpus.jsonl"}


def verdict(question: str, chunk_ids: list[str], language: str, by_id: dict) -> dict:
    """Whether ``question`` names a subject of its chunks, and the subjects it names."""
    chunks = [by_id[c] for c in chunk_ids if c in by_id]
    subjects = question_subjects(chunks, language)
    return {"question": question, "chunks": chunk_ids, "found": len(chunks),
            "named": names_any(question, subjects),
            "names": sorted(t for t in subjects if names_any(question, [t]))}


def replay(cache: Path) -> dict:
    registry = default_registry()
    executor = Executor(registry, cache=NodeCache(disk_dir=cache))
    doc = load(str(ROOT / "sample_graphs" / "basic_rag.json"))
    source = find_chunk_source(doc, registry)
    out: dict = {}
    for name, path in CORPORA.items():
        by_id = {c.chunk_id: c for c in graph_chunks(doc, executor, {"corpus": path}, source)}
        stem = f"evalset_quality_r7_{name}"
        report = json.loads((RESULTS / f"{stem}.report.json").read_text(encoding="utf-8"))
        rejected = [verdict(c["question"], c["chunk_ids"], c["language"], by_id)
                    for c in report["rejected_candidates"] if c["reason"] == "unnamed_subject"]
        kept = []
        for line in (RESULTS / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            ids = (row.get("expected_evidence") or {}).get("chunk_ids") or []
            if ids:
                kept.append({"id": row["id"], **verdict(row["question"], ids,
                                                       row.get("language", "en"), by_id)})
        out[name] = {"rejected": rejected, "kept": kept}
    return out


def compare(old: dict, new: dict) -> None:
    for name in new:
        before, after = old[name], new[name]
        turned = [n for o, n in zip(before["rejected"], after["rejected"], strict=True)
                  if not o["named"] and n["named"]]
        print(f"{name}: unnamed_subject {len(after['rejected'])}, accepted now {len(turned)}")
        for cand in turned:
            print(f"  + {cand['question']}  names {', '.join(cand['names'])}")
        changed = [(o, n) for o, n in zip(before["kept"], after["kept"], strict=True)
                   if (o["named"], o["names"]) != (n["named"], n["names"])]
        print(f"  kept answerable rows {len(after['kept'])}, verdict or names changed "
              f"{len(changed)}")
        for o, n in changed:
            print(f"  ~ {n['id']} {n['question']}  {o['names']} -> {n['names']} "
                  f"(named {o['named']} -> {n['named']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="", help="write the replay as JSON here")
    parser.add_argument("--cache-dir", default="", help="node cache (default: a temporary one)")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two replays")
    args = parser.parse_args()
    if args.compare:
        old, new = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare)
        compare(old, new)
        return
    cache = Path(args.cache_dir or tempfile.mkdtemp(prefix="subject_check_"))
    data = replay(cache)
    if args.out:
        Path(args.out).write_text(json.dumps(data, ensure_ascii=False, indent=1),
                                  encoding="utf-8")
    for name, parts in data.items():
        print(f"{name}: rejected named {sum(r['named'] for r in parts['rejected'])} of "
              f"{len(parts['rejected'])}, kept named {sum(k['named'] for k in parts['kept'])} "
              f"of {len(parts['kept'])}")


if __name__ == "__main__":
    main()
