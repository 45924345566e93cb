"""The export thread behind ``--otlp``: a run's spans are made off the run's thread after a
delay (at once on flush), the queue is bounded in spans (a drop is told once), and a cached
re-run's spans say what a fresh computation of their attributes says."""

from __future__ import annotations

import logging
import time

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine import Executor, NodeCache  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument  # noqa: E402
from modrag_studio.engine.run.hooks import HookSet, RunHook  # noqa: E402
from modrag_studio.run_tracing.attributes import visit_attributes  # noqa: E402
from modrag_studio.run_tracing.export import BATCH, SMALL_BATCH, SpanWorker  # noqa: E402
from modrag_studio.run_tracing.spans import SpanBuilder, SpanHook  # noqa: E402


def chain(n: int) -> GraphDocument:
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": "abc"}}]
    edges = []
    for i in range(1, n):
        nodes.append({"id": f"n{i}", "type": "debug.passthrough", "params": {}})
        edges.append({"from": f"n{i - 1}.value", "to": f"n{i}.value"})
    return GraphDocument.model_validate({"metadata": {"name": "chain"}, "nodes": nodes,
                                         "edges": edges})


def pipeline(tmp_path, **options):
    exporter = InMemorySpanExporter()
    worker = SpanWorker(SpanBuilder(Resource.create({"service.name": "t"}), content=True),
                        exporter, **options)
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"),
                        hooks=[SpanHook(worker.submit)])
    return exporter, worker, executor


def test_spans_wait_for_the_delay_and_flush_sends_them(tmp_path):
    exporter, worker, executor = pipeline(tmp_path, delay_s=30)
    result = executor.run(chain(4))
    time.sleep(0.3)
    assert exporter.get_finished_spans() == ()  # not yet: the delay
    assert worker.flush(5)
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.parent is None)
    children = [s for s in spans if s is not root]
    assert root.name == "chain" and len(children) == 4
    assert {s.parent.span_id for s in children} == {root.context.span_id}
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert [s.name for s in children] == [v.node_id for v in result.trace.visits]
    for before, after in zip(children, children[1:], strict=False):  # one visit at a time, in order
        assert before.start_time <= before.end_time <= after.start_time <= after.end_time
    assert root.start_time <= children[0].start_time and children[-1].end_time <= root.end_time
    worker.shutdown(5)


def test_a_short_delay_exports_without_a_flush(tmp_path):
    exporter, worker, executor = pipeline(tmp_path, delay_s=0.05)
    executor.run(chain(2))
    deadline = time.monotonic() + 5
    while not exporter.get_finished_spans() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(exporter.get_finished_spans()) == 3
    worker.shutdown(5)


def test_a_full_queue_drops_whole_runs_and_warns_once(tmp_path, caplog):
    exporter, worker, executor = pipeline(tmp_path, delay_s=30, max_spans=8)
    caplog.set_level(logging.WARNING, logger="modrag_studio.run_tracing")
    for _ in range(4):
        executor.run(chain(3))  # 4 spans a run: two runs fit
    assert worker.dropped_runs == 2
    assert len([r for r in caplog.records if "queue full" in r.getMessage()]) == 1
    worker.shutdown(5)
    assert len(exporter.get_finished_spans()) == 8


def test_cached_visits_carry_what_a_fresh_computation_says(tmp_path):
    exporter, worker, executor = pipeline(tmp_path, delay_s=0)
    doc = chain(3)
    executor.run(doc)
    results = [executor.run(doc) for _ in range(2)]
    worker.flush(5)
    spans = [s for s in exporter.get_finished_spans() if s.parent is not None][3:]
    visits = [v for r in results for v in r.trace.visits]
    assert [v.status for v in visits] == ["cached"] * 6
    for span, visit, result in zip(spans, visits, [results[0]] * 3 + [results[1]] * 3,
                                   strict=True):
        key = (visit.node_id, visit.iteration)
        fresh = visit_attributes(visit, result.node_inputs[key], result.node_outputs[key],
                                 content=True, node_type=result.registry.get(visit.type_id))
        assert dict(span.attributes) == fresh
        assert span.attributes["modrag.cached"] is True and span.attributes["modrag.cache_key"]
    worker.shutdown(5)


def test_a_hookset_calls_only_the_events_a_hook_overrides():
    seen: list[str] = []

    class Ends(RunHook):
        def on_node_end(self, **kwargs) -> None:
            seen.append("end")

    hooks = HookSet([Ends()])
    assert hooks.listeners("on_node_start") == []
    hooks.emit("on_node_start", run_id="r", node_id="a", type_id="t", iteration=0)
    hooks.emit("on_node_end", run_id="r", visit=None, inputs={}, outputs={})
    assert seen == ["end"] and len(hooks.listeners("on_node_end")) == 1


class Batches(InMemorySpanExporter):
    """Keeps the size of each export request too."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def export(self, spans):
        self.sizes.append(len(spans))
        return super().export(spans)


def _wait_for(predicate, timeout_s: float = 5.0) -> float:
    start = time.monotonic()
    while not predicate() and time.monotonic() - start < timeout_s:
        time.sleep(0.01)
    return time.monotonic() - start


def test_due_spans_wait_while_a_run_is_in_progress(tmp_path):
    active = [1]
    exporter, worker, executor = pipeline(tmp_path, delay_s=0, idle_wait_s=30,
                                          runs_active=lambda: active[0])
    executor.run(chain(3))
    time.sleep(0.3)
    assert exporter.get_finished_spans() == ()  # a run (another one) is in progress
    active[0] = 0
    executor.run(chain(3))  # the end of a run wakes the thread (no polling)
    waited = _wait_for(lambda: len(exporter.get_finished_spans()) == 8)
    assert len(exporter.get_finished_spans()) == 8 and waited < 5
    worker.shutdown(5)


def test_the_wait_for_no_run_is_bounded_and_flush_does_not_wait(tmp_path):
    exporter, worker, executor = pipeline(tmp_path, delay_s=0, idle_wait_s=0.2,
                                          runs_active=lambda: 1)
    executor.run(chain(3))
    waited = _wait_for(lambda: len(exporter.get_finished_spans()) == 4)
    assert len(exporter.get_finished_spans()) == 4 and waited >= 0.1
    exporter2, worker2, executor2 = pipeline(tmp_path / "b", delay_s=0, idle_wait_s=60,
                                             runs_active=lambda: 1)
    executor2.run(chain(3))
    start = time.monotonic()
    assert worker2.flush(5) and time.monotonic() - start < 2
    assert len(exporter2.get_finished_spans()) == 4
    for each in (worker, worker2):
        each.shutdown(5)


def test_a_half_full_queue_does_not_wait_for_no_run(tmp_path):
    exporter, worker, executor = pipeline(tmp_path, delay_s=0, idle_wait_s=60,
                                          runs_active=lambda: 1, max_spans=8)
    executor.run(chain(3))  # 4 spans: half of the queue
    _wait_for(lambda: len(exporter.get_finished_spans()) == 4)
    assert len(exporter.get_finished_spans()) == 4 and worker.dropped_runs == 0
    worker.shutdown(5)


@pytest.mark.parametrize("active", [0, 1])
def test_requests_are_small_while_a_run_is_in_progress(tmp_path, active):
    exporter = Batches()
    worker = SpanWorker(SpanBuilder(Resource.create({"service.name": "t"})), exporter,
                        delay_s=30, idle_wait_s=0, runs_active=lambda: active)
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"),
                        hooks=[SpanHook(worker.submit)])
    executor.run(chain(BATCH + 10))
    assert worker.flush(5)
    assert sum(exporter.sizes) == BATCH + 11
    small = [SMALL_BATCH] * (BATCH // SMALL_BATCH) + [11]
    assert exporter.sizes == (small if active else [BATCH, 11])
    worker.shutdown(5)


def test_the_hook_counts_the_runs_in_progress():
    hook = SpanHook(lambda record: None)
    seen: list[int] = []

    class Looks(RunHook):
        def on_node_end(self, **kwargs) -> None:
            seen.append(hook.active_runs())

    executor = Executor(default_registry(), hooks=[hook, Looks()])
    executor.run(chain(2))
    assert seen == [1, 1] and hook.active_runs() == 0


def test_a_run_that_raises_outside_any_node_still_ends_for_the_hooks(monkeypatch):
    """Ctrl-C (or a fault in the executor itself) between nodes: hooks get ``on_run_end``,
    so the span hook does not count the run as in progress for ever."""
    from modrag_studio.engine.run import executor as executor_module

    hook = SpanHook(lambda record: None)
    ended: list[str] = []

    class Ends(RunHook):
        def on_run_end(self, *, run_id, trace, **kwargs) -> None:
            ended.append(trace.status)

    def interrupted(self, node_id):
        raise KeyboardInterrupt

    monkeypatch.setattr(executor_module._Run, "_visit", interrupted)
    executor = Executor(default_registry(), hooks=[hook, Ends()])
    with pytest.raises(KeyboardInterrupt):
        executor.run(chain(2))
    assert ended == ["cancelled"] and hook.active_runs() == 0
