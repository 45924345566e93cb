import threading
import time

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import (
    BadRunInput,
    CancelToken,
    Executor,
    GraphInvalid,
    NodeCache,
    RunHook,
)
from tests.engine.helpers import chain_graph, edge, graph, node


@pytest.fixture
def executor(tmp_path):
    return Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"))


def test_runs_in_order_and_collects_outputs(executor):
    result = executor.run(chain_graph(), {"question": "hello"})
    assert result.ok
    assert result.outputs == {"answer": "HELLO!"}
    assert result.trace.ran() == ["q", "suffix", "up", "join", "out"]


def test_one_edit_reruns_exactly_the_affected_nodes(executor):
    doc = chain_graph()
    executor.run(doc, {"question": "hello"})
    again = executor.run(doc, {"question": "hello"})
    assert again.trace.ran() == []
    assert set(again.trace.from_cache()) == {"q", "suffix", "up", "join", "out"}

    doc.node("suffix").params["value"] = "?"
    edited = executor.run(doc, {"question": "hello"})
    assert edited.outputs == {"answer": "HELLO?"}
    assert edited.trace.ran() == ["suffix", "join", "out"]
    assert set(edited.trace.from_cache()) == {"q", "up"}
    assert edited.trace.last_visit("suffix").cache_reason == "params changed: value"
    join_reason = edited.trace.last_visit("join").cache_reason
    assert "upstream changed: texts from suffix.value" in join_reason
    assert edited.trace.last_visit("up").cache_reason == "unchanged since the last run"


def test_cache_survives_a_restart(tmp_path):
    doc = chain_graph()
    Executor(default_registry(),
             cache=NodeCache(disk_dir=tmp_path / "c")).run(doc, {"question": "hi"})
    restarted = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "c"))
    result = restarted.run(doc, {"question": "hi"})
    assert result.outputs == {"answer": "HI!"}
    assert {"q", "up", "suffix", "join"} <= set(result.trace.from_cache())


def test_corrupted_disk_cache_entry_is_ignored_and_recomputed(tmp_path):
    doc = chain_graph()
    Executor(default_registry(),
             cache=NodeCache(disk_dir=tmp_path / "c")).run(doc, {"question": "hi"})
    for entry in (tmp_path / "c" / "results").rglob("*.pkl"):
        entry.write_bytes(b"garbage")
    cache = NodeCache(disk_dir=tmp_path / "c")
    result = Executor(default_registry(), cache=cache).run(doc, {"question": "hi"})
    assert result.outputs == {"answer": "HI!"}
    assert "up" in result.trace.ran()
    assert cache.warnings and "corrupted cache entry" in cache.warnings[0]


def test_router_branches_skip_inactive_nodes(executor):
    doc = graph(
        [
            node("q", "graph.input", name="question"),
            node("r", "debug.match_route", pattern="^hi"),
            node("yes", "text.upper"),
            node("no", "debug.passthrough"),
            node("after_no", "text.upper"),
            node("o1", "graph.output", name="shout"),
            node("o2", "graph.output", name="plain"),
        ],
        [
            edge("q.value", "r.text"),
            edge("r.match", "yes.text"),
            edge("r.other", "no.value"),
            edge("no.value", "after_no.text"),
            edge("yes.text", "o1.value"),
            edge("after_no.text", "o2.value"),
        ],
    )
    result = executor.run(doc, {"question": "hi there"})
    assert result.ok
    assert result.outputs == {"shout": "HI THERE"}
    assert result.trace.with_status("skipped") == ["no", "after_no", "o2"]
    assert "inactive branch" in result.trace.last_visit("no").skip_reason
    assert result.trace.last_visit("r").details["route"] == "match"
    other = executor.run(doc, {"question": "bye"})
    assert other.outputs == {"plain": "BYE"}
    assert other.trace.with_status("skipped") == ["yes", "o1"]


def _loop_graph(limit: int, bound: int):
    return graph(
        [
            node("q", "graph.input", name="question"),
            node("count", "debug.counter"),
            node("gate", "debug.threshold", limit=limit),
            node("ok", "graph.output", name="count"),
            node("gave_up", "graph.output", name="gave_up"),
        ],
        [
            edge("q.value", "count.value"),
            edge("count.count", "gate.count"),
            edge("gate.retry", "count.count", loop=bound),
            edge("gate.passed", "ok.value"),
            edge("gate.retry", "gave_up.value"),
        ],
    )


def test_loop_runs_until_passing(executor):
    result = executor.run(_loop_graph(limit=3, bound=5), {"question": "x"})
    assert result.outputs == {"count": 3}
    assert [v.iteration for v in result.trace.visits_of("count")] == [0, 1, 2]
    assert len(result.trace.visits_of("gate")) == 3
    assert result.trace.last_visit("gave_up").status == "skipped"


def test_loop_bound_takes_the_exit_branch(executor):
    result = executor.run(_loop_graph(limit=10, bound=2), {"question": "x"})
    assert result.ok
    assert result.outputs == {"gave_up": 3}
    assert len(result.trace.visits_of("count")) == 3
    assert "bound of 2 reached" in result.trace.last_visit("gate").details["loop"]
    assert result.output_of("count", "count", iteration=1) == 2


def test_run_to_a_node_runs_only_its_upstream(executor):
    result = executor.run(chain_graph(), {"question": "a"}, target="up")
    assert result.trace.ran() == ["q", "up"]
    assert result.outputs == {}


def test_start_from_needs_cached_upstream(executor):
    doc = chain_graph()
    cold = executor.run(doc, {"question": "a"}, start_from="join")
    assert cold.status == "failed"
    assert "no cached result for upstream node" in cold.trace.last_visit("up").error.message
    executor.run(doc, {"question": "a"})
    warm = executor.run(doc, {"question": "a"}, start_from="join")
    assert warm.ok
    assert warm.trace.ran() == ["join"]
    assert warm.trace.from_cache() == ["q", "suffix", "up", "out"]
    assert warm.trace.last_visit("join").cache_reason == "re-run requested"


def test_failure_is_isolated_and_nothing_computed_is_lost(executor):
    doc = graph(
        [
            node("q", "graph.input", name="question"),
            node("bad", "debug.fail", message="boom"),
            node("after_bad", "debug.passthrough"),
            node("good", "text.upper"),
            node("o", "graph.output", name="good"),
            node("o2", "graph.output", name="bad"),
        ],
        [
            edge("q.value", "bad.value"),
            edge("bad.value", "after_bad.value"),
            edge("after_bad.value", "o2.value"),
            edge("q.value", "good.text"),
            edge("good.text", "o.value"),
        ],
    )
    result = executor.run(doc, {"question": "x"})
    assert result.status == "failed"
    assert result.outputs == {"good": "X"}
    failed = result.trace.last_visit("bad")
    assert failed.status == "failed" and failed.error.message == "boom"
    assert failed.error.type == "RuntimeError" and "Traceback" in failed.error.traceback
    assert result.trace.last_visit("after_bad").skip_reason == "upstream node 'bad' failed"
    assert result.trace.last_visit("o2").status == "skipped"


def test_cancel_stops_within_a_second(executor):
    doc = graph(
        [node("s1", "debug.sleep", seconds=30, steps=300), node("s2", "debug.sleep", seconds=1),
         node("k", "debug.constant", value="v")],
        [edge("k.value", "s1.value"), edge("s1.value", "s2.value")],
    )
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.perf_counter()
    result = executor.run(doc, cancel=cancel)
    assert time.perf_counter() - started < 1.5
    assert result.status == "cancelled"
    assert result.trace.ran() == ["k"]
    assert result.trace.last_visit("s1").status == "cancelled"
    assert result.trace.last_visit("s2").status == "cancelled"


def test_nodes_cannot_corrupt_inputs_or_cached_values(executor):
    doc = graph(
        [node("src", "debug.list", items=["a", "b"]), node("m1", "debug.mutate"),
         node("m2", "debug.mutate"), node("o1", "graph.output", name="one"),
         node("o2", "graph.output", name="two"), node("o3", "graph.output", name="source")],
        [edge("src.items", "m1.items"), edge("src.items", "m2.items"),
         edge("m1.items", "o1.value"), edge("m2.items", "o2.value"), edge("src.items", "o3.value")],
    )
    result = executor.run(doc)
    assert result.outputs["source"] == [{"name": "a"}, {"name": "b"}]
    assert result.outputs["one"] == [{"name": "a", "mutated": True}, {"name": "b"}, "mutated"]
    assert result.outputs["two"] == result.outputs["one"]
    result.outputs["source"].append("caller mutation")
    again = executor.run(doc)
    assert again.outputs["source"] == [{"name": "a"}, {"name": "b"}]
    assert set(again.trace.from_cache()) == {"src", "m1", "m2", "o1", "o2", "o3"}


def test_concurrent_runs_do_not_see_each_other(executor):
    doc = chain_graph()
    results: dict[str, object] = {}

    def work(word: str) -> None:
        results[word] = executor.run(doc, {"question": word})

    words = [f"w{i}" for i in range(12)]
    threads = [threading.Thread(target=work, args=(w,)) for w in words]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for word in words:
        assert results[word].outputs == {"answer": word.upper() + "!"}
        assert results[word].trace.inputs == {"question": word}


def test_hooks_see_every_lifecycle_event(executor):
    events: list[tuple] = []

    class Recorder(RunHook):
        def on_run_start(self, **kw):
            events.append(("run_start", tuple(kw["node_ids"])))

        def on_node_start(self, **kw):
            events.append(("start", kw["node_id"]))

        def on_node_progress(self, **kw):
            events.append(("progress", kw["node_id"], round(kw["fraction"], 2)))

        def on_node_end(self, **kw):
            events.append(("end", kw["visit"].node_id, kw["visit"].status))

        def on_run_end(self, **kw):
            events.append(("run_end", kw["trace"].status))

    class Broken(RunHook):
        def on_node_start(self, **kw):
            raise RuntimeError("hook bug")

    doc = graph([node("s", "debug.sleep", seconds=0.01, steps=2)], [])
    result = executor.run(doc, hooks=[Broken(), Recorder()])
    assert result.ok
    assert events == [
        ("run_start", ("s",)),
        ("start", "s"),
        ("progress", "s", 0.5),
        ("progress", "s", 1.0),
        ("end", "s", "done"),
        ("run_end", "ok"),
    ]


def test_invalid_graph_and_unknown_inputs_are_refused(executor):
    with pytest.raises(GraphInvalid) as info:
        executor.run(graph([node("u", "text.upper")], []))
    assert "u.text" in str(info.value)
    with pytest.raises(BadRunInput, match="this graph takes: question"):
        executor.run(chain_graph(), {"qestion": "x"})


def test_missing_graph_input_fails_the_input_node(executor):
    result = executor.run(chain_graph(), {})
    assert result.status == "failed"
    assert "graph input 'question' was not given" in result.trace.last_visit("q").error.message


def test_concurrent_runs_compute_a_shared_node_once(executor):
    doc = graph([node("k", "debug.constant", value="v"),
                 node("slow", "debug.sleep", seconds=0.3, steps=3),
                 node("o", "graph.output", name="out")],
                [edge("k.value", "slow.value"), edge("slow.value", "o.value")])
    results = []
    threads = [threading.Thread(target=lambda: results.append(executor.run(doc)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r.trace.last_visit("slow").status for r in results)
    assert statuses == ["cached", "cached", "cached", "done"]
    assert all(r.outputs == {"out": "v"} for r in results)


def test_a_node_writing_the_state_its_fingerprint_reads_is_cached_from_the_second_run(tmp_path):
    """A store-like node's fingerprint changes by its own run; the next run is still cached
    (and so is everything downstream), and losing the written file re-runs it."""
    from modrag_nodes import register_builtin_nodes
    from modrag_studio.engine import NodeRegistry
    from modrag_studio.engine.core.node import NodeType
    from modrag_studio.engine.core.ports import InputPort, OutputPort

    store_file = tmp_path / "store.txt"
    runs: list[str] = []

    class FileStore(NodeType):
        type_id = "test.file_store"
        inputs = (InputPort("text", str),)
        outputs = (OutputPort("text", str),)

        def fingerprint(self, params, inputs, run_inputs):
            return store_file.read_text() if store_file.exists() else "missing"

        def run(self, ctx, params, text):
            runs.append(text)
            store_file.write_text(f"holds {text}")
            return {"text": text}

    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(FileStore)
    doc = graph(
        [node("q", "graph.input", name="question"), node("store", "test.file_store"),
         node("up", "text.upper"), node("out", "graph.output", name="answer")],
        [edge("q.value", "store.text"), edge("store.text", "up.text"),
         edge("up.text", "out.value")],
    )
    executor = Executor(registry, NodeCache(disk_dir=tmp_path / "cache"))
    assert executor.run(doc, {"question": "a"}).outputs == {"answer": "A"}
    second = executor.run(doc, {"question": "a"})
    assert second.trace.ran() == [] and runs == ["a"]
    assert second.trace.last_visit("store").cache_reason == "unchanged since the last run"

    store_file.unlink()
    third = executor.run(doc, {"question": "a"})
    assert third.trace.ran() == ["store"] and runs == ["a", "a"]
    assert set(third.trace.from_cache()) == {"q", "up", "out"}


def test_unpicklable_result_stays_in_memory_and_leaves_no_file(tmp_path):
    import threading as _threading

    cache = NodeCache(disk_dir=tmp_path / "c")
    cache.put("k" * 64, {"value": _threading.Lock()})  # pickle refuses locks mid-stream
    cache.put("j" * 64, {"value": [1, 2, 3]})
    assert cache.get("k" * 64) is not None
    files = sorted(p.name for p in (tmp_path / "c").rglob("*") if p.is_file())
    assert files == ["j" * 64 + ".pkl"]
    assert NodeCache(disk_dir=tmp_path / "c").get("j" * 64) == {"value": [1, 2, 3]}


def test_a_planned_run_gives_the_keys_a_real_run_uses_and_runs_nothing(executor, monkeypatch):
    from modrag_nodes.debug import Upper

    calls = []
    real_run = Upper.run
    monkeypatch.setattr(Upper, "run", lambda self, ctx, params, text: calls.append(text)
                        or real_run(self, ctx, params, text))
    doc = chain_graph()
    planned = executor.run(doc, {"question": "hello"}, target="join", plan_only=True)
    assert calls == []  # only the graph input ran
    assert planned.ok and set(planned.planned) >= {"q", "up", "join"}
    assert executor.cache.get(planned.trace.last_visit("join").cache_key) is None  # not stored

    real = executor.run(doc, {"question": "hello"}, target="join")
    assert calls == ["hello"]
    for node_id in ("q", "up", "join"):
        assert real.trace.last_visit(node_id).cache_key == \
            planned.trace.last_visit(node_id).cache_key


def test_a_planned_run_converts_no_value_it_did_not_compute(executor):
    """A planned node's outputs are placeholders: an edge that converts (a Query into the
    text a str port takes) passes the placeholder on instead of converting it (the answer
    evaluation plans every question of modular_rag this way before it embeds them)."""
    doc = graph(
        [node("q", "graph.input", name="question"),
         node("route", "route.intent", use_llm=False,
              routes=[{"name": "status", "keywords": ["status"]}]),
         node("up", "text.upper"),
         node("out", "graph.output", name="answer")],
        [edge("q.value", "route.query"), edge("route.default", "up.text"),
         edge("up.text", "out.value")])
    planned = executor.run(doc, {"question": "hello"}, target="up", plan_only=True)
    assert planned.ok, planned.trace.to_json()[-2000:]
    real = executor.run(doc, {"question": "hello"}, target="up")
    assert real.trace.last_visit("up").cache_key == planned.trace.last_visit("up").cache_key
