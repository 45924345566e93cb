"""The figures that depend on the text package (``nodes/text``), without a model: BM25 on
SciFact train (three tokenizers: nDCG@10, Recall@100 and a digest of every ranking) and the
generated-set verification checks on stored generated questions and claims and on corpus
passages (one digest per check, the values kept in ``--out``). Run it on two trees and
compare: a change to the text package should leave every figure and digest the same, or
each difference explained (``--compare`` lists the rows that differ).

    .venv/bin/python bench/text_figures.py [--tree DIR] [--out FILE.json] [--compare OLD.json]

``--tree`` measures another checkout (its ``nodes/`` must be importable as
``modrag_nodes``: a symlink ``DIR/modrag_nodes -> nodes`` does it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results"
STORED = ("demo_generated_qwen5_candidates.jsonl", "demo_generated_qwen5_seed25_candidates.jsonl",
          "demo_generated_qwen5.jsonl", "scifact_generated_qwen.jsonl",
          "scifact_claims_back_translated.jsonl", "scifact_claims_qwen_extended.jsonl",
          "cmrc_evalset40.jsonl", "demo_paraphrase_qwen.jsonl")


def digest(values: object) -> str:
    return hashlib.sha1(json.dumps(values, ensure_ascii=False).encode()).hexdigest()[:12]


def lines(path: Path, limit: int | None = None) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:limit]]


def bm25_figures(out: dict) -> None:
    from bench_bm25 import ndcg_recall, read_qrels

    from modrag_nodes.retrieval.bm25 import BM25Index
    from modrag_nodes.retrieval.tokenizers import Tokenizer
    from modrag_studio.engine.core.datatypes import Chunk

    docs = lines(SHARED / "scifact" / "corpus.jsonl")
    chunks = [Chunk(chunk_id=d["_id"], doc_id=d["_id"], text=d["text"],
                    metadata={"title": d.get("title", "")}) for d in docs]
    qrels = read_qrels(SHARED / "scifact" / "qrels" / "train.tsv")
    judged = [q for q in lines(SHARED / "scifact" / "queries.jsonl") if q["_id"] in qrels]
    for name, tokenizer in {"plain": Tokenizer(),
                            "stem": Tokenizer(stopwords="english", stemmer="english"),
                            "bigram": Tokenizer(kind="bigram", stopwords="english")}.items():
        index = BM25Index.build(chunks, tokenizer=tokenizer, engine="fast", fields="title+text")
        ranked = [[chunks[i].doc_id for i, _ in index.search(q["text"], 100)] for q in judged]
        ndcg, recall = ndcg_recall(ranked, [qrels[q["_id"]] for q in judged])
        out[f"bm25 {name}"] = ranked
        print(f"BM25 {name}: {len(judged)} judged SciFact train queries, nDCG@10 {ndcg:.4f}, "
              f"Recall@100 {recall:.4f}, rankings {digest(ranked)}")


def verification_figures(out: dict, tree: Path) -> None:
    from modrag_studio.engine.core.datatypes import Chunk
    from modrag_studio.evaluation.generation import sampling

    if (tree / "modrag_studio" / "evaluation" / "generation" / "checks").is_dir():
        from modrag_studio.evaluation.generation.checks import round_trip, verify
        from modrag_studio.evaluation.generation.reading import terms
    else:  # a tree from before generation's sub-packages
        from modrag_studio.evaluation.generation import round_trip, terms, verify
    if (tree / "nodes" / "text").is_dir():
        from modrag_nodes.text.scripts import language_of
        from modrag_nodes.text.words import words
    else:  # a tree from before the text package
        language_of, words = terms.detect_language, terms.words

    texts = [part for path in [*sorted((ROOT / "resources" / "sample_corpus").rglob("*.md")),
                               *sorted((SHARED / "corpora" / "pkgdocs-dev" / "docs").rglob("*.md"))]
             for part in path.read_text(encoding="utf-8").split("\n\n") if len(part.strip()) > 40]
    texts += [d["text"] for d in lines(SHARED / "cmrc2018-trial" / "corpus.jsonl", 300)]
    texts += [d["text"] for d in lines(SHARED / "scifact" / "corpus.jsonl", 300)]
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=t) for i, t in enumerate(texts)]
    vocabulary = sampling.vocabulary(chunks)
    stems = terms.word_stems(vocabulary)
    rng = random.Random(0)
    checks: dict[str, list] = {}

    def keep(name: str, value: object) -> None:
        checks.setdefault(name, []).append(value)

    def said(verdict: verify.Verdict | None) -> list | None:
        return None if verdict is None else [verdict.reason, verdict.detail]

    for chunk in chunks:
        keep("chunk language", language_of(chunk.text))
        keep("words", words(chunk.text))
        keep("text chars", sampling.text_chars(chunk))
        keep("linking terms", sorted(sampling._linking_terms(chunk.text)))
    for row in (row for name in STORED for row in lines(RESULTS / name)):
        question = row.get("question") or ""
        facts = [f if isinstance(f, str) else f[0]
                 for f in row.get("facts") or row.get("expected_facts") or [] if f]
        chunk = next((c for c in chunks if facts and facts[0] in c.text), None) or chunks[
            rng.randrange(len(chunks))]
        keep("question language", language_of(question))
        keep("key terms", terms.key_terms(question))
        keep("overlap", round(terms.overlap(question, chunk.text), 6))
        keep("words to replace", terms.words_to_replace(question, chunk.text))
        keep("question text", said(verify.check_question_text(question)))
        keep("claim", said(verify.check_claim(question, chunk)))
        keep("answerable", said(verify.check_answerable(question, facts, [chunk])))
        keep("unanswerable", said(verify.check_unanswerable(question, vocabulary, chunk)))
        keep("stated in", [verify.stated_in(fact, chunk.text) for fact in facts])
        keep("wordy", round_trip.wordy(question, facts))
        keep("back translation", said(verify.check_back_translation(
            question, question, language_of(question), chunk, vocabulary, stems)))
    print(f"verification checks on {len(chunks)} passages and "
          f"{len(checks['key terms'])} stored questions and claims:")
    for name, values in checks.items():
        out[name] = values
        print(f"  {name}: {digest(values)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--out", type=Path, help="write every value (JSON)")
    parser.add_argument("--compare", type=Path, help="a previous --out: list what differs")
    args = parser.parse_args()
    sys.path[:0] = [str(args.tree), str(ROOT / "bench")]
    out: dict[str, list] = {}
    bm25_figures(out)
    verification_figures(out, args.tree)
    if args.out:
        args.out.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    if args.compare:
        old = json.loads(args.compare.read_text(encoding="utf-8"))
        for name, values in out.items():
            before = old.get(name, [])
            rows = [i for i, (a, b) in enumerate(zip(before, values, strict=True)) if a != b]
            print(f"differs from {args.compare.name}: {name}: {len(rows)} of {len(values)}"
                  + (f" (rows {rows[:8]})" if rows else ""))


if __name__ == "__main__":
    main()
