"""Evaluation of graphs on BEIR-layout datasets (recall@k, hit@k, nDCG@10, MRR@10) and on
evaluation sets (answers), both reported as one ``EvalReport``."""

from modrag_studio.evaluation.beir import BeirDataset, load_beir
from modrag_studio.evaluation.metrics import QueryMetrics, doc_ranking, score_ranking
from modrag_studio.evaluation.report import EvalReport
from modrag_studio.evaluation.runner import evaluate_graph

__all__ = [
    "BeirDataset", "EvalReport", "QueryMetrics", "doc_ranking", "evaluate_graph", "load_beir",
    "score_ranking",
]
