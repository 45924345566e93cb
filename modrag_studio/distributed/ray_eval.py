"""``modrag eval --ray``: the queries of an evaluation spread over Ray actors.

Each actor holds the graph, an executor (so the query side of the graph: loaded models and
indexes stay in memory between its queries) and the dataset; it runs slices of the query list
with the evaluation runner's own per-query code, and the driver puts the slices back in query
order, so the metrics and the report are those of a local run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.distributed.session import ray_session
from modrag_studio.engine.core.document import GraphDocument, dumps, loads
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.beir import BeirDataset


class QueryWorker:
    """One Ray actor: runs slices of the evaluation's queries through its own executor."""

    def __init__(self, graph_json: str, dataset_root: str, split: str, outputs: list[str],
                 options: dict[str, Any], cache_dir: str | None, work_dir: str) -> None:
        from modrag_studio.engine.cache.node_cache import NodeCache
        from modrag_studio.evaluation.beir import load_beir
        from modrag_studio.evaluation.runner import QueryRunner

        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=Path(cache_dir) if cache_dir else None),
                            work_dir=work_dir)
        self.runner = QueryRunner(loads(graph_json), load_beir(dataset_root, split), executor,
                                  outputs, query_name=options["query_name"],
                                  corpus_name=options["corpus_name"],
                                  extra_inputs=options["extra_inputs"], hit_k=options["hit_k"],
                                  ndcg_gain=options["ndcg_gain"])

    def run(self, query_ids: list[str]) -> tuple[list[Any], list[dict[str, str]]]:
        """Run and score one slice through the evaluation loop (its query side batched):
        the slice's rows (``report.QuestionResult``, query order) and failures."""
        from modrag_studio.evaluation.loop import Question, QuestionRun, run_questions

        runner = self.runner
        rows: list[Any] = []
        failures: list[dict[str, str]] = []

        def score(_index: int, run: QuestionRun) -> bool:
            outcome = runner.score(run.question.id, run.result)
            rows.append(outcome.row)
            failures.extend(outcome.failures)
            return True  # the driver's first slice is no early-stop probe: keep every row

        questions = [Question(q, runner.dataset.queries[q]) for q in query_ids]
        run_questions(runner.doc, questions, executor=runner.executor,
                      query_name=runner.query_name, on_run=score,
                      base_inputs=runner.base_inputs())
        return rows, failures


def evaluate_on_ray(address: str, doc: GraphDocument, dataset: BeirDataset, outputs: list[str],
                    *, executor: Executor, actors: int = 2, slice_size: int = 8,
                    hit_k: int = 10, ndcg_gain: str = "linear", limit: int | None = None,
                    query_input: str | None = None,
                    corpus_input: str | None = None, extra_inputs: dict[str, str] | None = None,
                    cancel: CancelToken | None = None,
                    on_progress: Callable[[int, int], None] | None = None) -> Any:
    """``evaluate_graph`` with the queries run by ``actors`` Ray actors (same report)."""
    from modrag_studio.evaluation.runner import start_report

    _, query_name, corpus_name, query_ids, report = start_report(
        doc, dataset, outputs, hit_k, limit, query_input, corpus_input, ndcg_gain,
        executor.registry)
    options = {"hit_k": hit_k, "ndcg_gain": ndcg_gain, "query_name": query_name,
               "corpus_name": corpus_name,
               "extra_inputs": dict(extra_inputs or {})}
    slices = [query_ids[i:i + slice_size] for i in range(0, len(query_ids), slice_size)]
    started = time.perf_counter()
    cache_dir = executor.cache.disk_dir
    with ray_session(address) as ray:
        from ray.util import ActorPool

        worker = ray.remote(QueryWorker).options(max_restarts=2, max_task_retries=2)
        pool = ActorPool([worker.remote(dumps(doc), str(dataset.root), dataset.split, outputs,
                                        options, str(cache_dir) if cache_dir else None,
                                        str(executor.work_dir))
                          for _ in range(max(1, actors))])
        done = 0
        try:
            for rows, failures in pool.map(lambda actor, ids: actor.run.remote(ids), slices):
                if cancel is not None and cancel.cancelled:
                    raise RunCancelled("evaluation cancelled")
                report.results.extend(rows)
                report.failures.extend(failures)
                done += len(rows)
                if on_progress is not None:
                    on_progress(done, len(query_ids))
        except KeyboardInterrupt:
            raise RunCancelled("evaluation cancelled (Ctrl-C)") from None
    report.seconds = time.perf_counter() - started
    return report.finish()
