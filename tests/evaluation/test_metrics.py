import math

import pytest

from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk
from modrag_studio.evaluation.beir import DatasetError, load_beir
from modrag_studio.evaluation.metrics import doc_ranking, mean_metrics, ndcg_at, score_ranking


def scored(doc_id: str, rank: int, score: float) -> ScoredChunk:
    chunk = Chunk(chunk_id=f"{doc_id}#{rank}", doc_id=doc_id, text="t")
    return ScoredChunk(chunk=chunk, score=score, rank=rank)


def test_document_takes_its_best_chunk_position():
    results = [scored("b", 2, 0.8), scored("a", 1, 0.9), scored("b", 3, 0.7), scored("c", 4, 0.1)]
    assert doc_ranking(results) == ["a", "b", "c"]


def test_metrics_by_hand():
    relevance = {"d1": 1, "d3": 2}
    metrics = score_ranking("q", ["d3", "x", "d1"], relevance, hit_k=1,
                            gain="exponential").values
    dcg = (2**2 - 1) / math.log2(2) + (2**1 - 1) / math.log2(4)
    idcg = (2**2 - 1) / math.log2(2) + (2**1 - 1) / math.log2(3)
    assert metrics["ndcg@10"] == pytest.approx(dcg / idcg)
    linear = score_ranking("q", ["d3", "x", "d1"], relevance, hit_k=1).values  # the default
    assert linear["ndcg@10"] == pytest.approx((2 / 1 + 1 / 2) / (2 / 1 + 1 / math.log2(3)))
    assert metrics["recall@5"] == 1.0
    assert metrics["hit@1"] == 1.0
    assert metrics["mrr@10"] == 1.0
    late = score_ranking("q", ["x"] * 10 + ["d1"], {"d1": 1}).values
    assert late["recall@10"] == 0.0 and late["recall@20"] == 1.0 and late["mrr@10"] == 0.0
    assert late["hit@10"] == 0.0
    assert ndcg_at([], {"d": 1}, 10) == 0.0
    assert mean_metrics([score_ranking("a", ["d"], {"d": 1}),
                         score_ranking("b", ["x"], {"d": 1})])["hit@10"] == 0.5


def test_beir_loading_and_errors(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "q one"}\n'
                                            '{"_id": "2", "text": "no qrels"}\n')
    (tmp_path / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    data = load_beir(tmp_path, "dev")
    assert data.evaluated_query_ids() == ["1"]
    assert data.qrels == {"1": {"d1": 1}}
    with pytest.raises(DatasetError, match=r"test.tsv: not found \(splits here: dev\)"):
        load_beir(tmp_path, "test")
    (tmp_path / "queries.jsonl").write_text("{bad\n")
    with pytest.raises(DatasetError, match="queries.jsonl:1"):
        load_beir(tmp_path, "dev")


def test_every_ranking_metric_matches_trec_eval_on_graded_qrels():
    """pytrec_eval is trec_eval itself: ndcg_cut_10, recall_k, success_k and recip_rank of
    the top 10, on 60 random queries with grades 0-3 (MS MARCO / DBpedia style)."""
    import random

    import pytrec_eval

    rng = random.Random(25)
    docs = [f"d{i}" for i in range(40)]
    qrels, run, ours = {}, {}, {}
    for q in range(60):
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        if not any(qrels[f"q{q}"].values()):
            qrels[f"q{q}"][judged[0]] = 2
        ranked = rng.sample(docs, rng.randint(0, 30))
        run[f"q{q}"] = {d: float(100 - i) for i, d in enumerate(ranked)}  # no ties
        ours[f"q{q}"] = score_ranking(f"q{q}", ranked, qrels[f"q{q}"], hit_k=5).values
    measures = {"ndcg_cut.10", "recall.5,10,20,100", "success.5,10"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    top10 = {q: dict(sorted(r.items(), key=lambda kv: -kv[1])[:10]) for q, r in run.items()}
    reciprocal = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    for q, values in ours.items():
        got = reference.get(q, {})
        assert values["ndcg@10"] == pytest.approx(got.get("ndcg_cut_10", 0.0), abs=1e-4), q
        for k in (5, 10, 20, 100):
            assert values[f"recall@{k}"] == pytest.approx(got.get(f"recall_{k}", 0.0),
                                                          abs=1e-4), (q, k)
        for k in (5, 10):
            assert values[f"hit@{k}"] == pytest.approx(got.get(f"success_{k}", 0.0)), (q, k)
        assert values["mrr@10"] == pytest.approx(
            reciprocal.get(q, {}).get("recip_rank", 0.0), abs=1e-4), q
    graded = [q for q in ours if any(g > 1 for g in qrels[q].values())]
    assert len(graded) > 30  # the gains really differ on these


def test_an_unknown_gain_is_refused():
    with pytest.raises(ValueError, match="linear, exponential"):
        ndcg_at(["d"], {"d": 2}, 10, "log")
