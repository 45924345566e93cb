"""Does a generated evaluation set rank retrieval variants as the human qrels do?

Six variants of ``scifact_hybrid.json`` (BM25 alone, dense alone, RRF, convex fusion, RRF
with k=20, RRF weighting dense twice; with ``--rerank`` also RRF then the embedding reranker,
which reads its candidates' vectors from the store) are scored by
nDCG@10 on a set generated from the SciFact corpus (``modrag evalset generate``) and on the
SciFact train qrels; the two rankings are compared by Kendall's tau (goal >= 0.7), beside
the tau of random sets of as many human-judged queries ranked against the other queries, and
the share of resamples of the generated set (with replacement) whose tau reaches 0.7.

Run: .venv/bin/python bench/bench_evalset_agreement.py --evalset GENERATED.jsonl
     [--split train] [--limit 0] [--json]
The indexes are built on the first run (minutes) and cached for the next.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import VariantSpec, load
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.edit.variants import apply_variant
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import evaluate_graph, load_beir
from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.evaluation.tuning import dataset_from_evalset
from modrag_studio.evaluation.tuning.questions import subset

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "data" / "scifact"
GRAPH = ROOT / "sample_graphs" / "scifact_hybrid.json"
#: name -> (variant changes, the output scored)
VARIANTS: dict[str, tuple[dict, str]] = {
    "bm25": ({}, "bm25.results"),
    "dense": ({}, "dense.results"),
    "rrf": ({}, "fusion.results"),
    "convex": ({"swap": {"fusion": "fuse.convex"}}, "fusion.results"),
    "rrf k=20": ({"params": {"fusion": {"k": 20}}}, "fusion.results"),
    "rrf dense x2": ({"params": {"fusion": {"weights": {"dense": 2}}}}, "fusion.results"),
}
RERANK = {"rrf + rerank": ({"bypass": {"rerank": False}}, "rerank.results")}


def scores(doc, dataset, executor, variants: dict[str, tuple[dict, str]],
           groups: dict[str, str] | None = None,
           per_question: dict[str, dict[str, float]] | None = None,
           ) -> tuple[dict[str, float], dict]:
    """nDCG@10 of every variant (variants sharing a graph run once), and per group of
    questions (``groups``: query id -> group, e.g. the generated question's type); each
    question's nDCG@10 per variant goes into ``per_question`` when given."""
    registry = executor.registry
    graphs: dict[str, tuple] = {}
    for name, (changes, output) in variants.items():
        key = json.dumps(changes, sort_keys=True)
        graphs.setdefault(key, (apply_variant(doc, VariantSpec(name="v", **changes),
                                              registry), []))[1].append((name, output))
    found: dict[str, float] = {}
    by_group: dict[str, dict[str, float]] = {}
    for graph, wanted in graphs.values():
        report = evaluate_graph(graph, dataset, sorted({o for _, o in wanted}),
                                executor=executor)
        for name, output in wanted:
            found[name] = report.outputs[output]["ndcg@10"]
            sums: dict[str, list[float]] = {}
            for row in report.per_query.get(output, []):
                if per_question is not None:
                    per_question.setdefault(str(row["query_id"]), {})[name] = float(
                        row["ndcg@10"])
                if not groups:
                    continue
                group = groups.get(str(row["query_id"]), "other")
                sums.setdefault(group, []).append(float(row["ndcg@10"]))
            by_group[name] = {g: round(sum(v) / len(v), 4) for g, v in sorted(sums.items())}
    return found, by_group


def _summary(taus: np.ndarray) -> dict[str, float]:
    """How many draws, their median tau and the share that reaches the goal of 0.7."""
    return {"draws": len(taus), "median_tau": round(float(np.median(taus)), 3),
            "at_least_0.7": round(float(np.mean(taus >= 0.7 - 1e-9)), 3)}


def human_spread(per_query: dict[str, dict[str, float]], names: list[str], size: int,
                 tau: float, draws: int = 2000, seed: int = 0) -> dict[str, float]:
    """How a set of ``size`` human-judged queries drawn at random ranks the variants against
    the rest of the qrels (Kendall's tau per draw): the yardstick for a generated set's
    ``tau``, since near-tied variants swap places in any small set."""
    matrix = np.array([[row[n] for n in names] for row in per_query.values()])
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(draws):
        order = rng.permutation(len(matrix))
        taus.append(kendalltau(matrix[order[:size]].mean(0), matrix[order[size:]].mean(0))[0])
    found = np.nan_to_num(np.array(taus), nan=0.0)
    return {**_summary(found), "size": size,
            "at_most_this": round(float(np.mean(found <= tau + 1e-9)), 3)}


def generated_spread(per_question: dict[str, dict[str, float]], names: list[str],
                     on_qrels: dict[str, float], draws: int = 2000, seed: int = 0
                     ) -> dict[str, float]:
    """How the generated set's own tau varies over resamples of its questions (drawn with
    replacement, as many as it holds): how sure its ranking is."""
    matrix = np.array([[row[n] for n in names] for row in per_question.values()])
    truth = [on_qrels[n] for n in names]
    rng = np.random.default_rng(seed)
    taus = [kendalltau(matrix[rng.integers(0, len(matrix), len(matrix))].mean(0), truth)[0]
            for _ in range(draws)]
    return _summary(np.nan_to_num(np.array(taus), nan=0.0))


def question_types(evalset) -> dict[str, str]:
    """Question id -> its generated type (the ``type:`` tag)."""
    return {q.id: next((t[5:] for t in q.tags if t.startswith("type:")), "other")
            for q in evalset.questions}


OVERLAP_BANDS = ((0.5, "overlap<=0.5"), (0.8, "overlap<=0.8"), (1.01, "overlap>0.8"))


def overlap_bands(evalset, corpus_path: Path) -> dict[str, str]:
    """Question id -> the band of the share of its key terms its source document holds
    (the generator's ``overlap``): lexical search favours questions worded like their text."""
    from modrag_studio.evaluation.generation.reading.terms import overlap

    wanted = {d for q in evalset.questions if q.expected_evidence is not None
              for d in q.expected_evidence.to_dict().get("doc_ids", [])}
    texts: dict[str, str] = {}
    with open(corpus_path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] in wanted:
                texts[row["_id"]] = f"{row.get('title', '')} {row.get('text', '')}"
    bands: dict[str, str] = {}
    for q in evalset.questions:
        docs = q.expected_evidence.to_dict().get("doc_ids", []) if q.expected_evidence else []
        if docs and docs[0] in texts:
            share = overlap(q.question, texts[docs[0]])
            bands[q.id] = next(name for top, name in OVERLAP_BANDS if share <= top)
    return bands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evalset", required=True)
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int, default=0, help="first N qrels queries (0: all)")
    parser.add_argument("--rerank", action="store_true", help="add the reranker variant")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--group-by", choices=("type", "overlap"), default="type",
                        help="the columns of generated questions: their type, or the share "
                             "of their key terms their document holds")
    parser.add_argument("--per-question", metavar="FILE",
                        help="write each generated question's nDCG@10 per variant (JSON)")
    args = parser.parse_args()
    registry = default_registry()
    doc = load(GRAPH)
    executor = Executor(registry, NodeCache(disk_dir=Path(cache_home())))
    qrels = load_beir(args.dataset, args.split)
    if args.limit:
        qrels = subset(qrels, qrels.evaluated_query_ids()[: args.limit])
    evalset = load_evalset(args.evalset)
    generated = dataset_from_evalset(evalset, qrels.corpus_path)
    variants = {**VARIANTS, **(RERANK if args.rerank else {})}
    types = (question_types(evalset) if args.group_by == "type"
             else overlap_bands(evalset, Path(qrels.corpus_path)))
    per_question: dict[str, dict[str, float]] = {}
    on_generated, by_type = scores(doc, generated, executor, variants, types, per_question)
    if args.per_question:
        Path(args.per_question).write_text(json.dumps(per_question, indent=1))
    per_qrels: dict[str, dict[str, float]] = {}
    on_qrels, _ = scores(doc, qrels, executor, variants, per_question=per_qrels)
    names = list(variants)
    tau, p_value = kendalltau([on_generated[n] for n in names], [on_qrels[n] for n in names])
    spread = human_spread(per_qrels, names, len(generated.queries), float(tau))
    resampled = generated_spread(per_question, names, on_qrels)
    counts = {t: sum(1 for q in generated.queries if types.get(q) == t)
              for t in sorted(set(types.values()))}
    data = {"generated_questions": len(generated.queries), "qrels_queries": len(qrels.queries),
            "questions_by_type": {t: c for t, c in counts.items() if c},
            "ndcg@10": {n: {"generated": round(on_generated[n], 4),
                            "qrels": round(on_qrels[n], 4),
                            "generated_by_type": by_type.get(n, {})} for n in names},
            "kendall_tau": round(float(tau), 3), "tau_p_value": round(float(p_value), 4),
            "human_subsets": spread, "generated_resamples": resampled}
    kinds = list(data["questions_by_type"])
    for kind in kinds:
        values = [by_type[n].get(kind) for n in names]
        if None not in values and len(set(values)) > 1:
            t_kind, _ = kendalltau(values, [on_qrels[n] for n in names])
            data.setdefault("kendall_tau_by_type", {})[kind] = round(float(t_kind), 3)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"nDCG@10 on {data['generated_questions']} generated questions and "
          f"{data['qrels_queries']} {args.split} qrels queries")
    print("generated questions by type: " + ", ".join(
        f"{k} {v}" for k, v in data["questions_by_type"].items()))
    print(f"{'variant':<16}{'generated':>11}{'qrels':>9}{'rank g':>8}{'rank q':>8}"
          + "".join(f"{k[:11]:>12}" for k in kinds))
    rank_g = {n: i for i, n in enumerate(sorted(names, key=lambda n: -on_generated[n]), 1)}
    rank_q = {n: i for i, n in enumerate(sorted(names, key=lambda n: -on_qrels[n]), 1)}
    for name in names:
        print(f"{name:<16}{on_generated[name]:>11.4f}{on_qrels[name]:>9.4f}"
              f"{rank_g[name]:>8}{rank_q[name]:>8}"
              + "".join(f"{by_type[name].get(k, float('nan')):>12.4f}" for k in kinds))
    print(f"Kendall's tau between the two rankings: {tau:.3f} (p = {p_value:.4f})")
    for kind, value in data.get("kendall_tau_by_type", {}).items():
        print(f"  on the {kind} questions alone: {value:.3f}")
    print(f"{spread['draws']} random sets of {spread['size']} human-judged queries (ranked "
          f"against the other {len(qrels.queries) - spread['size']}): median tau "
          f"{spread['median_tau']:.3f}, {spread['at_least_0.7']:.0%} reach 0.7, "
          f"{spread['at_most_this']:.0%} score this set's tau or less")
    print(f"{resampled['draws']} resamples of the generated set: median tau "
          f"{resampled['median_tau']:.3f}, {resampled['at_least_0.7']:.0%} reach 0.7")
    return 0


if __name__ == "__main__":
    sys.exit(main())
