"""Runs a validated graph: dependency order, branches, bounded loops, cache, cancel, trace.

Which nodes a run visits is decided in ``selection``; what it hands back is a ``RunResult``
(``result``), re-exported here."""

from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_studio.engine.cache.code_identity import code_identity
from modrag_studio.engine.cache.node_cache import (
    NodeCache,
    explain_change,
    node_signature,
    signature_key,
    stable_hash,
)
from modrag_studio.engine.compose.check import validate_graph
from modrag_studio.engine.compose.expand import Expanded, expand
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import GraphInvalid, ModragError, RunCancelled
from modrag_studio.engine.core.graph_io import GraphInterface, graph_interface
from modrag_studio.engine.core.node import CancelToken, NodeType, node_context
from modrag_studio.engine.core.passthrough import bypass_routes, bypass_value
from modrag_studio.engine.core.paths import (
    data_home,
    graph_base_dir,
    path_params,
    using_graph_folder,
    using_work_dir,
)
from modrag_studio.engine.core.redact import scrub
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.resources import Resources, process_resources
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.core.validation import Problem, errors_only
from modrag_studio.engine.run.cancel_scope import cancel_scope
from modrag_studio.engine.run.hooks import HookSet, RunHook
from modrag_studio.engine.run.inputs import EdgeDelivery, Gathered, gather_inputs
from modrag_studio.engine.run.isolation import isolate
from modrag_studio.engine.run.pins import Pin
from modrag_studio.engine.run.result import RunResult
from modrag_studio.engine.run.run_notes import run_notes
from modrag_studio.engine.run.run_state import NodeState, RunState
from modrag_studio.engine.run.selection import select_nodes
from modrag_studio.engine.run.trace import ErrorInfo, NodeVisit, Trace, summarize
from modrag_studio.engine.trust.reach import absolute_path_inputs

log = logging.getLogger(__name__)
__all__ = ["BadRunInput", "Executor", "RunResult"]


class BadRunInput(ModragError):
    """A run was given an input name the graph does not declare."""


@dataclass
class _Attempt:
    """One visit being served: the node, its params and inputs, and its cache signature."""

    node: NodeType
    node_type: type[NodeType]
    visit: NodeVisit
    params: Any
    gathered: Gathered
    signature: dict[str, Any]
    previous: dict[str, Any] | None
    use_cache: bool


class _Run:
    """The state of one run (never shared between runs, so concurrent runs stay apart)."""

    def __init__(self, executor: Executor, doc: GraphDocument, inputs: Mapping[str, Any],
                 hooks: HookSet, cancel: CancelToken, run_id: str, topology: Topology,
                 interface: GraphInterface, pins: Mapping[str, Pin] | None = None) -> None:
        self.executor = executor
        self.registry = executor.registry
        self.doc = doc
        self.inputs = dict(inputs)
        self.hooks = hooks
        self.cancel = cancel
        self.run_id = run_id
        self.topology = topology
        self.interface = interface
        self.specs = {n.id: n for n in doc.nodes}
        self.state = RunState.start(topology, doc.node_ids())
        self.states = self.state.nodes
        self.rerun: set[str] = set()
        self.cached_only: set[str] = set()
        self.plan_only = False
        self.memory_only: set[str] = set()
        self.result = RunResult(trace=Trace(
            run_id=run_id, graph_name=doc.metadata.name, started_at=time.time(),
            inputs={k: _jsonable(v) for k, v in self.inputs.items()},
        ), registry=self.registry)
        self.delivery = EdgeDelivery(self.registry, self.specs, topology.into_port)
        self.pins = self._usable_pins(pins or {})

    def _usable_pins(self, pins: Mapping[str, Pin]) -> dict[str, Pin]:
        """The pins of nodes still in the graph with the type they were pinned as."""
        usable = {}
        for node_id, pin in pins.items():
            spec = self.specs.get(node_id)
            if spec is not None and spec.type == pin.type_id:
                usable[node_id] = pin
            elif spec is not None:
                self.result.trace.problems.append(Problem(
                    "stale-pin", f"pinned output of '{node_id}' ignored: it was pinned as a "
                    f"'{pin.type_id}' node, the node is now '{spec.type}'; unpin it",
                    node_id=node_id, severity="warning").to_dict())
        return usable

    # main loop ---------------------------------------------------------------
    def execute(self, active: set[str], rerun: set[str], cached_only: set[str]) -> RunResult:
        self.rerun, self.cached_only = rerun, cached_only
        order, _ = self.topology.order()
        order = [n for n in order if n in active]
        self.hooks.emit("on_run_start", run_id=self.run_id, graph_name=self.doc.metadata.name,
                        inputs=dict(self.inputs), node_ids=order, registry=self.registry)
        index = 0
        try:
            while index < len(order):
                node_id = order[index]
                index += 1
                if self.states[node_id].status != "pending":
                    continue
                if self.cancel.cancelled:
                    break
                restart = self._visit(node_id)
                if restart is not None:
                    index = order.index(restart)
        except BaseException as exc:  # Ctrl-C, or a fault outside any node: hooks see the end
            trace = self.result.trace
            trace.status = "cancelled" if isinstance(exc, KeyboardInterrupt) else "failed"
            trace.duration_s = time.time() - trace.started_at
            self.hooks.emit("on_run_end", run_id=self.run_id, trace=trace)
            raise
        self._finish(order)
        return self.result

    def _visit(self, node_id: str) -> str | None:
        spec = self.specs[node_id]
        node_type = self.registry.get(spec.type)
        node = self.registry.instance(spec.type)
        state = self.states[node_id]
        visit = NodeVisit(node_id=node_id, type_id=node_type.type_id, iteration=state.visits)
        state.visits += 1
        pin = self.pins.get(node_id)
        gathered = Gathered()
        if pin is None or self._upstream_visited(node_id):  # a branch not taken stays skipped
            gathered = gather_inputs(self.state, self.delivery, node_id, node_type)
        if gathered.skip_reason:
            state.status, state.skip_cause = "skipped", gathered.skip_cause
            visit.status, visit.skip_reason = "skipped", gathered.skip_reason
            self._record(visit, {}, {})
            return None
        if pin is not None:
            visit.cache_key = pin.key
            if pin.held:
                visit.status, visit.cached, visit.cache_reason = "cached", True, pin.held
            else:
                visit.status = "pinned"
                visit.details["pinned"] = ("pinned output from "
                                           + time.strftime("%Y-%m-%d %H:%M:%S",
                                                           time.localtime(pin.pinned_at)))
            outputs = {p.name: pin.outputs[p.name] for p in node_type.outputs
                       if p.name in pin.outputs}
            return self._serve(visit, outputs, {p: f"{pin.key}:{p}" for p in outputs}, {})
        if spec.bypass:
            return self._bypass(node_type, visit, gathered)
        params = node_type.Params.model_validate(spec.params)
        params_json = params.model_dump(mode="json")
        try:
            fingerprint = node.fingerprint(params, gathered.values, self.inputs)
        except Exception as exc:
            return self._fail(visit, state, exc, gathered.values)
        signature = node_signature(type_id=node_type.type_id, version=node_type.version,
                                   params=params_json, inputs=gathered.keys,
                                   fingerprint=fingerprint,
                                   path_params=path_params(node_type.Params))
        signature["code"] = code_identity(node_type)
        key = signature_key(signature)
        visit.cache_key = key
        visit.inputs = {p: summarize(v) for p, v in gathered.values.items() if v is not None}
        cache = self.executor.cache
        scope = self.executor.scope_of(self.doc)
        previous = cache.last_signature(scope, node_id)
        cacheable = node.is_cacheable(params)
        use_cache = cacheable and node_id not in self.rerun
        if cacheable and not cache.acquire_key(key, lambda: self.cancel.cancelled):
            visit.status, visit.skip_reason = "cancelled", "run cancelled while waiting"
            state.status = "cancelled"
            self._record(visit, gathered.values, {})
            return None
        try:
            outputs = self._cached_or_computed(_Attempt(node, node_type, visit, params, gathered,
                                                        signature, previous, use_cache))
        finally:
            if cacheable:
                cache.release_key(key)
        if outputs is None:
            return None
        if self.plan_only:
            self.result.planned[node_id] = signature
        else:
            cache.remember_signature(scope, node_id, signature,
                                     disk=node_id not in self.memory_only)
        state.outputs = outputs
        state.status = "done"
        state.port_keys = {port: f"{visit.cache_key}:{port}" for port in outputs}
        visit.outputs = {p: summarize(v) for p, v in outputs.items()}
        self._record(visit, gathered.values, outputs)
        return self._follow_loops(node_id, visit)

    def _upstream_visited(self, node_id: str) -> bool:
        """Whether every node feeding ``node_id`` was visited in this run (not left out
        because it only feeds pinned nodes)."""
        edges = self.topology.incoming.get(node_id, [])
        return bool(edges) and all(self.states[e.source_node].status != "pending"
                                   for e in edges)

    def _bypass(self, node_type: type[NodeType], visit: NodeVisit,
                gathered: Gathered) -> str | None:
        """A disabled node: each output gets the value of its compatible input."""
        visit.status = "bypassed"
        visit.inputs = {p: summarize(v) for p, v in gathered.values.items() if v is not None}
        outputs, keys, passed = {}, {}, {}
        for output, source in bypass_routes(node_type).items():
            value = gathered.values.get(source) if source is not None else None
            if value is None:
                continue
            assert source is not None
            outputs[output] = bypass_value(node_type, output, source, value)
            upstream = [key for _, key in gathered.keys.get(source, [])]
            keys[output] = stable_hash(["bypass", visit.node_id, source, output, upstream])
            passed[output] = source
        visit.details["bypassed"] = {out: f"from input '{src}'" for out, src in passed.items()}
        return self._serve(visit, outputs, keys, gathered.values)

    def _serve(self, visit: NodeVisit, outputs: dict[str, Any], port_keys: dict[str, str],
               inputs: dict[str, Any]) -> str | None:
        """Hand out outputs the node did not compute (pinned, or passed on by a bypass)."""
        self.hooks.emit("on_node_start", run_id=self.run_id, node_id=visit.node_id,
                        type_id=visit.type_id, iteration=visit.iteration)
        state = self.states[visit.node_id]
        state.outputs, state.status, state.port_keys = outputs, "done", port_keys
        visit.outputs = {p: summarize(v) for p, v in outputs.items()}
        self._record(visit, inputs, outputs)
        return self._follow_loops(visit.node_id, visit)

    def _cached_or_computed(self, attempt: _Attempt) -> dict[str, Any] | None:
        """The node's outputs from the cache, or from running it (None when it did not finish)."""
        visit, node_type, gathered = attempt.visit, attempt.node_type, attempt.gathered
        previous, signature, use_cache = attempt.previous, attempt.signature, attempt.use_cache
        node_id, cache, state = visit.node_id, self.executor.cache, self.states[visit.node_id]
        if self.plan_only and node_type.graph_role != "input":
            visit.status, visit.cache_reason = "done", "planned: keyed, not run"
            return {port.name: None for port in node_type.outputs}
        outputs = cache.get(visit.cache_key) if use_cache else None
        if outputs is not None:
            visit.status, visit.cached = "cached", True
            visit.cache_reason = ("unchanged since the last run" if previous == signature
                                  else "same params and inputs as an earlier cached run")
            self.hooks.emit("on_node_start", run_id=self.run_id, node_id=node_id,
                            type_id=node_type.type_id, iteration=visit.iteration)
            return outputs
        if node_id in self.cached_only:
            error = ModragError(f"no cached result for upstream node '{node_id}'; run the "
                                "whole graph once before running from a later node")
            return self._fail(visit, state, error, gathered.values)
        visit.cache_reason = ("re-run requested" if node_id in self.rerun
                              else "caching disabled for this node" if not use_cache
                              else "kept in memory only; not stored on disk"
                              if previous == signature and not node_type.disk_cache
                              else explain_change(previous, signature))
        outputs = self._execute(attempt)
        if outputs is None:
            state.status = "cancelled" if visit.status == "cancelled" else "failed"
            return None
        if attempt.node.is_cacheable(attempt.params):
            self._settle(attempt)
            cache.put(visit.cache_key, outputs,
                      disk=node_type.disk_cache and node_id not in self.memory_only)
        return outputs

    def _settle(self, attempt: _Attempt) -> None:
        """Key the outputs by the fingerprint the node leaves behind, not the one it found.

        A node whose fingerprint reads on-disk state it writes itself (a vector store, a graph
        file) sees a different fingerprint after it ran; keyed by the state before, the next
        run would miss the cache and re-run it and everything downstream of it. Updates
        ``signature`` and the visit's cache key in place.
        """
        signature = attempt.signature
        if signature.get("fingerprint") is None:
            return
        try:
            after = attempt.node.fingerprint(attempt.params, attempt.gathered.values, self.inputs)
        except Exception:  # the next run will explain; this run's outputs stand
            return
        if after == signature["fingerprint"]:
            return
        signature["fingerprint"] = after
        attempt.visit.cache_key = signature_key(signature)

    def _execute(self, attempt: _Attempt) -> dict[str, Any] | None:
        node, node_type, visit = attempt.node, attempt.node_type, attempt.visit
        params, values, node_id = attempt.params, attempt.gathered.values, visit.node_id
        ctx = node_context(
            node_id, node_type.type_id, iteration=visit.iteration, cancel=self.cancel,
            on_progress=lambda f, m: self.hooks.emit(
                "on_node_progress", run_id=self.run_id, node_id=node_id, fraction=f, message=m),
            on_stream=lambda t: self.hooks.emit(
                "on_node_stream", run_id=self.run_id, node_id=node_id, text=t),
            work_dir=self.executor.work_dir, run_inputs=self.inputs,
            resources=self.executor.resources)
        visit.status, visit.started_at = "running", time.time()
        self.hooks.emit("on_node_start", run_id=self.run_id, node_id=node_id,
                        type_id=node_type.type_id, iteration=visit.iteration)
        start = time.perf_counter()
        try:
            given = isolate(values) if node_type.isolate_inputs else dict(values)
            outputs = node.run(ctx, params, **given)
            _check_outputs(node_type, outputs)
        except RunCancelled:
            visit.status, visit.duration_s = "cancelled", time.perf_counter() - start
            visit.details, visit.warnings = ctx.details, ctx.warnings
            self._record(visit, values, {})
            return None
        except Exception as exc:
            visit.duration_s = time.perf_counter() - start
            visit.details, visit.warnings = ctx.details, ctx.warnings
            self._fail(visit, self.states[node_id], exc, values)
            return None
        visit.duration_s = time.perf_counter() - start
        visit.status = "done"
        visit.details, visit.warnings = ctx.details, ctx.warnings
        return outputs

    def _fail(self, visit: NodeVisit, state: NodeState, exc: BaseException,
              values: dict[str, Any]) -> None:
        state.status, state.skip_cause = "failed", "failed"
        visit.status = "failed"
        visit.error = ErrorInfo(type=type(exc).__name__, message=scrub(str(exc)),
                                traceback=scrub("".join(traceback.format_exception(exc))))
        visit.warnings = [scrub(w) for w in visit.warnings]
        log.warning("node '%s' (%s) failed: %s", visit.node_id, visit.type_id,
                    visit.error.message)
        self._record(visit, values, {})
        return None

    def _record(self, visit: NodeVisit, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        self.result.trace.visits.append(visit)
        self.result.node_inputs[(visit.node_id, visit.iteration)] = inputs
        self.result.node_outputs[(visit.node_id, visit.iteration)] = outputs
        self.hooks.emit("on_node_end", run_id=self.run_id, visit=visit, inputs=inputs,
                        outputs=outputs)

    # loops -------------------------------------------------------------------
    def _follow_loops(self, node_id: str, visit: NodeVisit) -> str | None:
        state = self.states[node_id]
        assert state.outputs is not None
        for index, edge in enumerate(self.topology.loops):
            if edge.source_node != node_id or edge.source_port not in state.outputs:
                continue
            assert edge.loop is not None
            done = self.state.loop_counts.get(index, 0)
            if done >= edge.loop.max_iterations:
                visit.details["loop"] = (f"{edge.source} -> {edge.target}: bound of "
                                         f"{edge.loop.max_iterations} reached, taking the exit")
                continue
            self.state.loop_counts[index] = done + 1
            visit.details["loop"] = (f"{edge.source} -> {edge.target}: iteration "
                                     f"{done + 1} of {edge.loop.max_iterations}")
            self.state.loop_values[(edge.target_node, edge.target_port)] = (
                state.outputs[edge.source_port], state.port_keys[edge.source_port], edge.source)
            for reset in {edge.target_node} | self.topology.downstream(edge.target_node):
                if reset in self.states:
                    self.state.reset(reset)
            return edge.target_node
        return None

    # end ---------------------------------------------------------------------
    def _finish(self, order: list[str]) -> None:
        trace = self.result.trace
        if self.cancel.cancelled:
            for node_id in order:
                if self.states[node_id].status == "pending":
                    spec = self.specs[node_id]
                    trace.visits.append(NodeVisit(node_id=node_id, type_id=spec.type,
                                                  status="cancelled",
                                                  skip_reason="run cancelled before it started"))
        ran = set(order)
        for port in self.interface.outputs:
            state = self.states[port.node_id]
            if port.node_id in ran and state.status == "done" and state.outputs:
                self.result.shared_outputs[port.name] = state.outputs["value"]
        statuses = {v.status for v in trace.visits}
        trace.status = ("cancelled" if self.cancel.cancelled or "cancelled" in statuses
                        else "failed" if "failed" in statuses else "ok")
        trace.duration_s = time.time() - trace.started_at
        self.hooks.emit("on_run_end", run_id=self.run_id, trace=trace)
        trace.problems.extend(
            Problem("hook-failed", message, severity="warning").to_dict()
            for message in self.hooks.failures)


def _check_outputs(node_type: type[NodeType], outputs: Any) -> None:
    if not isinstance(outputs, dict):
        raise TypeError(f"run() must return a dict of outputs, got {type(outputs).__name__}")
    declared = {p.name for p in node_type.outputs}
    if unknown := set(outputs) - declared:
        raise TypeError(f"run() returned undeclared outputs {sorted(unknown)} "
                        f"(declared: {sorted(declared)})")


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


class Executor:
    """Runs graph documents. Safe to share between threads; each run keeps its own state."""

    def __init__(self, registry: NodeRegistry, cache: NodeCache | None = None,
                 work_dir: str | Path | None = None, *,
                 resources: Resources | None = None, hooks: Iterable[RunHook] = ()) -> None:
        self.registry = registry
        self.hooks = list(hooks)  # every run's hooks (trace export), before the run's own
        self.cache = cache if cache is not None else NodeCache()
        self.resources = resources or process_resources()  # models and memos runs reuse
        self.work_dir = Path(work_dir) if work_dir else data_home()
        self._lock = threading.Lock()

    @staticmethod
    def scope_of(doc: GraphDocument) -> str:
        return doc.metadata.name

    def check(self, doc: GraphDocument, inputs: Mapping[str, Any], *,
              base_dir: str | Path | None = None, expanded: Expanded | None = None) -> None:
        """Raise GraphInvalid / BadRunInput before anything runs."""
        problems = errors_only(validate_graph(doc, self.registry, base_dir=base_dir,
                                              expanded=expanded))
        if problems:
            raise GraphInvalid(problems)
        declared = graph_interface(expanded.doc if expanded else doc, self.registry).input_names
        if unknown := sorted(set(inputs) - set(declared)):
            takes = ", ".join(declared) or "no inputs"
            raise BadRunInput(f"unknown input(s) {', '.join(unknown)}; this graph takes: {takes}")

    def run(
        self,
        doc: GraphDocument,
        inputs: Mapping[str, Any] | None = None,
        *,
        hooks: Iterable[RunHook] = (),
        cancel: CancelToken | None = None,
        target: str | None = None,
        rerun: Iterable[str] = (),
        start_from: str | None = None,
        run_id: str | None = None,
        base_dir: str | Path | None = None,
        pins: Mapping[str, Pin] | None = None,
        memory_only: Iterable[str] = (),
        plan_only: bool = False,
        checked: bool = False,
    ) -> RunResult:
        """Run ``doc``.

        ``target``: run only that node and its upstream closure ("run to here").
        ``rerun``: nodes to execute even when cached.
        ``start_from``: re-execute that node and everything after it, taking its upstream from
        the cache only (a missing cached upstream result fails with a clear message).
        ``base_dir``: the folder relative paths resolve against; by default the folder of the
        file ``doc`` was loaded from, else (never saved) the working directory, as the trace says.
        ``pins``: pinned outputs by node id (``engine.pins``): those nodes do not run, they
        hand out the pinned values, and nodes that only feed them do not run either.
        ``memory_only``: nodes whose results stay in the memory cache (evaluations' per query).
        ``plan_only``: every visited node's cache key without running it ("what key would it
        get"): the trace has the keys, ``planned`` the signatures; nothing is stored.
        ``checked``: it passed ``check`` with these input names before (an evaluation).
        """
        inputs = dict(inputs or {})
        expanded = expand(doc, base_dir=base_dir)  # subgraphs run as their inner nodes
        if not checked:
            self.check(doc, inputs, base_dir=base_dir, expanded=expanded)
        doc = expanded.doc
        topology = Topology.of(doc)
        ids = set(doc.node_ids())
        for name, node_id in (("target", target), ("start_from", start_from)):
            if node_id is not None and node_id not in ids and not expanded.inner_of(node_id):
                raise BadRunInput(f"{name}: no node '{node_id}' in the graph")
        interface = graph_interface(doc, self.registry)
        selection = select_nodes(expanded, topology, interface, target=target, rerun=rerun,
                                 start_from=start_from)
        inputs = absolute_path_inputs(doc, inputs, graph_base_dir(doc, base_dir), self.registry)
        run = _Run(self, doc, inputs, HookSet([*self.hooks, *hooks]), cancel or CancelToken(),
                   run_id or uuid.uuid4().hex[:12], topology, interface, pins)
        run.memory_only = set(memory_only)
        run.plan_only = plan_only
        folder = graph_base_dir(doc, base_dir)
        run.result.trace.problems.extend(run_notes(doc, self.registry, inputs, folder))
        with (using_work_dir(self.work_dir), using_graph_folder(folder),
              cancel_scope(run.cancel)):
            return run.execute(selection.past_pins(topology, set(run.pins)), selection.forced,
                               selection.cached_only)
