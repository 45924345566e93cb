"""Re-scoring in one process: after a fusion param edit only fusion and below run again, the
question-independent results are held for later questions, and the scores equal a cold run."""

from __future__ import annotations

from collections import Counter
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.evaluation import evaluate_graph, load_beir
from modrag_studio.evaluation.query_batch import held_pins, query_side_nodes, uncached_texts
from tests.evaluation.compare_helpers import QUERIES, two_bm25_graph, write_dataset

OUTPUTS = ["fusion.results"]


class Visits(RunHook):
    """Counts, per node, the visits that ran it and those the cache (or a held pin) served;
    keeps each question's fused ranking (chunk id, score) by question text."""

    def __init__(self) -> None:
        self.ran: Counter[str] = Counter()
        self.cached: Counter[str] = Counter()
        self.texts: dict[str, str] = {}
        self.fused: dict[str, list[tuple[str, float]]] = {}

    def on_run_start(self, *, run_id: str, inputs: dict[str, Any], **kwargs: Any) -> None:
        self.texts[run_id] = inputs.get("query")

    def on_node_end(self, *, run_id: str, visit: Any, outputs: dict[str, Any],
                    **kwargs: Any) -> None:
        if visit.node_id == "fusion" and "results" in outputs and outputs["results"]:
            self.fused[self.texts[run_id]] = [(c.chunk_id, c.score)
                                              for c in outputs["results"]]
        if visit.status == "cached":
            self.cached[visit.node_id] += 1
        elif visit.status == "done" and not visit.cache_reason.startswith("planned"):
            self.ran[visit.node_id] += 1


def fused_tops(executor: Executor, doc, dataset) -> tuple[Any, dict[str, list]]:
    """The report and each question's fused ranking (the executor's Visits hook sees it)."""
    visits = next(h for h in executor.hooks if isinstance(h, Visits))
    visits.fused.clear()
    report = evaluate_graph(doc, dataset, OUTPUTS, executor=executor)
    return report, {q: visits.fused[text] for q, text in QUERIES.items()}


def test_a_fusion_param_edit_reruns_only_fusion_and_below(tmp_path):
    dataset = load_beir(write_dataset(tmp_path / "data"), "test")
    registry = default_registry()
    editor = GraphEditor(registry, two_bm25_graph())
    visits = Visits()
    executor = Executor(registry, NodeCache(disk_dir=tmp_path / "cache"),
                        work_dir=tmp_path / "w", hooks=[visits])
    _, before = fused_tops(executor, editor.document(), dataset)
    first = Counter(visits.ran)
    # every question ran the query side once; the index nodes ran once for all of them
    assert first["stemmed"] == first["plain"] == first["fusion"] == len(QUERIES)
    assert first["load"] == first["stem_index"] == first["plain_index"] == 1
    visits.ran.clear()
    visits.cached.clear()

    editor.set_param("fusion", "k", 5)
    report, after = fused_tops(executor, editor.document(), dataset)
    assert set(visits.ran) == {"fusion", "out"}
    assert visits.ran["fusion"] == len(QUERIES)
    assert visits.cached["stemmed"] == visits.cached["plain"] == len(QUERIES)
    # what only feeds the indexes is visited by the first question only; the indexes are
    # held for the others
    assert visits.cached["load"] == visits.cached["split"] == 1
    assert visits.cached["stem_index"] == visits.cached["plain_index"] == len(QUERIES)
    assert after != before  # k changed the fused scores

    fresh_visits = Visits()
    cold = Executor(registry, NodeCache(disk_dir=tmp_path / "cold"), work_dir=tmp_path / "w",
                    hooks=[fresh_visits])
    cold_report, cold_tops = fused_tops(cold, editor.document(), dataset)
    assert fresh_visits.ran["stemmed"] == len(QUERIES)  # really cold
    assert after == cold_tops
    assert report.per_query == cold_report.per_query
    assert report.outputs == cold_report.outputs


def test_unchanged_rescore_runs_nothing_and_planning_finds_the_cached_texts(tmp_path):
    dataset = load_beir(write_dataset(tmp_path / "data"), "test")
    registry = default_registry()
    doc = two_bm25_graph()
    visits = Visits()
    executor = Executor(registry, NodeCache(disk_dir=tmp_path / "cache"),
                        work_dir=tmp_path / "w", hooks=[visits])
    first, _ = fused_tops(executor, doc, dataset)
    visits.ran.clear()
    again, _ = fused_tops(executor, doc, dataset)
    assert not visits.ran
    assert again.per_query == first.per_query
    base = {"corpus": str(dataset.corpus_path.resolve())}
    side = query_side_nodes(doc, "query", registry)
    texts = list(QUERIES.values())
    assert uncached_texts(doc, executor, texts, "query", base, side, ["stemmed"], {}) == []
    new = ["a question never asked"]
    assert uncached_texts(doc, executor, texts[:1] + new, "query", base, side,
                          ["stemmed"], {}) == new


def test_only_cacheable_question_independent_feeders_are_held(tmp_path, monkeypatch):
    registry = default_registry()
    doc = two_bm25_graph()
    executor = Executor(registry, NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path)
    corpus = str(write_dataset(tmp_path / "data") / "corpus.jsonl")
    result = executor.run(doc, {"corpus": corpus, "query": "aspirin"})
    side = query_side_nodes(doc, "query", registry)
    held = held_pins(doc, result, side)
    assert set(held) == {"stem_index", "plain_index"}  # what feeds the retrievers
    assert all(pin.key == next(v.cache_key for v in result.trace.visits if v.node_id == n)
               for n, pin in held.items())  # downstream keys stay those of a full run
    monkeypatch.setattr(type(registry.instance("bm25.index")), "cacheable", False)
    assert held_pins(doc, result, side) == {}  # a node that runs every time is never held
