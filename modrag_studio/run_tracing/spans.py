"""The executor hook that records a run for export, and the builder that turns the record
into OpenTelemetry spans: one per graph run, one child per node visit.

The hook does as little as it can on the executor's thread: it notes when each visit ended
and keeps the visit with its input and output values (the executor keeps the same values in
``RunResult.node_inputs`` / ``node_outputs``); when the run ends it hands the record to a
sink (``SpanWorker.submit``). A visit starts when its node started running
(``NodeVisit.started_at``) or, when it did not run (cached, pinned, bypassed, skipped), when
the visit before it in the same run ended: the executor visits a run's nodes one at a time.
Attributes and spans are made by the sink's thread, off the run's, with the times the events
had, so a visit's span also carries what the executor adds after the visit ended (the loop
edge it took). Spans are made as finished
``ReadableSpan`` values with their own ids: no live span, context or per-span lock. The hook
keeps one record per run id: one hook serves concurrent runs (``modrag serve``).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from openinference.semconv.trace import OpenInferenceMimeTypeValues, SpanAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from modrag_studio.engine.core.graph_io import role_of
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.trace import NodeVisit, Trace
from modrag_studio.run_tracing.attributes import CHAIN, visit_attributes
from modrag_studio.run_tracing.encoding import RecordedSpan

SCOPE = InstrumentationScope("modrag_studio.run_tracing")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
#: Attribute sets kept for cached visits (their values are those of the same cache key).
MEMO_SIZE = 8192


@dataclass(slots=True)
class VisitRecord:
    visit: NodeVisit
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    start_ns: int
    end_ns: int
    first_token_ns: int | None


#: What the hook keeps of a visit: the visit, its input and output values, when it ended
#: and when its first token came (ns since the epoch).
Ended = tuple[NodeVisit, dict[str, Any], dict[str, Any], int, int | None]


@dataclass(slots=True)
class RunRecord:
    run_id: str
    graph_name: str
    inputs: dict[str, Any]
    start_ns: int
    first_token: dict[str, int] = field(default_factory=dict)
    ended: list[Ended] = field(default_factory=list)
    status: str = "ok"
    duration_s: float = 0.0
    failure: str = ""
    trace_visits: list[NodeVisit] = field(default_factory=list)
    problems: list[Any] = field(default_factory=list)
    #: attributes given after the run, before export (``SpanWorker.annotate``)
    extra: dict[str, Any] = field(default_factory=dict)
    #: the run's node types (given at its start), which declare each span's kind
    registry: NodeRegistry | None = None

    @property
    def span_count(self) -> int:
        return len(self.ended) + 1

    def visits(self) -> list[VisitRecord]:
        """The visits with their start times (see the module's docstring)."""
        made, previous = [], self.start_ns
        for visit, inputs, outputs, end, first in self.ended:
            start = (int(visit.started_at * 1e9) if visit.started_at is not None
                     else previous)
            made.append(VisitRecord(visit, inputs, outputs, min(start, end), end, first))
            previous = end
        return made

    def outputs(self) -> dict[str, Any]:
        """The graph outputs' values by node id."""
        return {visit.node_id: outputs["value"] for visit, _, outputs, _, _ in self.ended
                if self.registry is not None and "value" in outputs
                and role_of(visit.type_id, self.registry) == "output"}


class SpanHook(RunHook):
    """Records every run and hands it, when it ends, to ``sink`` (which makes the spans)."""

    def __init__(self, sink: Callable[[RunRecord], None]) -> None:
        self.sink = sink
        self._runs: dict[str, RunRecord] = {}
        self._lock = threading.Lock()

    def active_runs(self) -> int:
        """How many runs are in progress (the export thread waits for none)."""
        return len(self._runs)

    def on_run_start(self, *, run_id: str, graph_name: str, inputs: dict[str, Any],
                     node_ids: list[str], **kwargs: Any) -> None:
        with self._lock:
            self._runs[run_id] = RunRecord(run_id, graph_name, dict(inputs), time.time_ns(),
                                           registry=kwargs.get("registry"))

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None:
        record = self._runs.get(run_id)
        if record is not None and node_id not in record.first_token:
            record.first_token[node_id] = time.time_ns()

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict[str, Any],
                    outputs: dict[str, Any], **kwargs: Any) -> None:
        record = self._runs.get(run_id)
        if record is not None:
            record.ended.append((visit, inputs, outputs, time.time_ns(), record.first_token.pop(
                visit.node_id, None) if record.first_token else None))

    def on_run_end(self, *, run_id: str, trace: Trace, **kwargs: Any) -> None:
        with self._lock:
            record = self._runs.pop(run_id, None)
        if record is None:
            return
        record.status, record.duration_s = trace.status, trace.duration_s
        if trace.status == "failed":
            record.failure = trace.failure_summary()[:1000]
        record.trace_visits, record.problems = list(trace.visits), list(trace.problems)
        self.sink(record)


class SpanBuilder:
    """Makes a run record's spans (on the export thread). ``content``: also document text,
    messages, questions and answers (off: ids, scores, ranks, models and counts only).
    A cached visit whose cache key, reason and details were seen before reuses the
    attributes made then: the same key means the same values."""

    def __init__(self, resource: Resource, *, content: bool = False) -> None:
        self.resource = resource
        self.content = content
        self._memo: dict[tuple[Any, ...], dict[str, Any]] = {}

    def spans(self, record: RunRecord) -> list[RecordedSpan]:
        trace_id = random.getrandbits(128) or 1
        root = SpanContext(trace_id, _span_id(), is_remote=False, trace_flags=_SAMPLED)
        made = []
        run_texts = () if self.content else content_texts(record.inputs)
        failed_texts: tuple[str, ...] = ()
        for item in record.visits():
            visit = item.visit
            hide = _Hider(())  # a warning or error may quote the question: hidden
            if not self.content and (visit.warnings or visit.error is not None):
                hide = _Hider(run_texts + content_texts(item.inputs))
                if visit.error is not None:
                    failed_texts += hide.texts
            context = SpanContext(trace_id, _span_id(), is_remote=False, trace_flags=_SAMPLED)
            status, events = Status(StatusCode.UNSET), ()
            if visit.error is not None:
                message = hide(visit.error.message)
                status = Status(StatusCode.ERROR, message[:1000])
                events = (Event("exception", {"exception.type": visit.error.type,
                                              "exception.message": message},
                                timestamp=item.end_ns),)
            attributes, shared = self._visit_attributes(item, record.registry)
            if hide.texts and "modrag.warnings" in attributes:
                attributes = {**attributes, "modrag.warnings": [
                    hide(w) for w in attributes["modrag.warnings"]]}
            made.append(RecordedSpan(
                f"{visit.node_id} #{visit.iteration + 1}" if visit.iteration else visit.node_id,
                context=context, parent=root, resource=self.resource,
                attributes=attributes, events=events, status=status,
                start_time=item.start_ns, end_time=item.end_ns, instrumentation_scope=SCOPE,
                shared_attributes=attributes if shared else None))
        made.insert(0, RecordedSpan(
            record.graph_name or "graph run", context=root, resource=self.resource,
            attributes=self._run_attributes(record),
            status=(Status(StatusCode.ERROR, _Hider(run_texts + failed_texts)(record.failure))
                    if record.status == "failed"
                    else Status(StatusCode.UNSET)),
            start_time=record.start_ns,
            end_time=record.start_ns + int(record.duration_s * 1e9),
            instrumentation_scope=SCOPE))
        return made

    def _visit_attributes(self, item: VisitRecord, registry: NodeRegistry | None
                          ) -> tuple[dict[str, Any], bool]:
        """The visit's attributes, and whether they are a set shared by the visits of the
        same cache key (its encoding is then kept, ``SpanEncoder``)."""
        visit = item.visit
        key = None
        if visit.cached and visit.cache_key and item.first_token_ns is None:
            key = (visit.node_id, visit.type_id, visit.iteration, visit.cache_key,
                   visit.cache_reason, repr(visit.details), tuple(visit.warnings))
            known = self._memo.get(key)
            if known is not None:
                return known, True
        node_type = (registry.get(visit.type_id)
                     if registry is not None and visit.type_id in registry else None)
        attributes = visit_attributes(visit, item.inputs, item.outputs, content=self.content,
                                      node_type=node_type)
        if (item.first_token_ns is not None
                and "modrag.llm.time_to_first_token_s" not in attributes):
            attributes["modrag.llm.time_to_first_token_s"] = (
                item.first_token_ns - item.start_ns) / 1e9
        if key is not None:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = attributes
        return attributes, key is not None

    def _run_attributes(self, record: RunRecord) -> dict[str, Any]:
        visits = record.trace_visits
        attrs: dict[str, Any] = {
            SpanAttributes.OPENINFERENCE_SPAN_KIND: CHAIN,
            "modrag.run.id": record.run_id,
            "modrag.graph.name": record.graph_name,
            "modrag.run.status": record.status,
            "modrag.run.visits": len(visits),
            "modrag.run.cached": sum(1 for v in visits if v.status == "cached"),
            "modrag.run.inputs": sorted(record.inputs),
        }
        if self.content:
            attrs[SpanAttributes.INPUT_VALUE] = json.dumps(_plain(record.inputs),
                                                           ensure_ascii=False)
            attrs[SpanAttributes.INPUT_MIME_TYPE] = OpenInferenceMimeTypeValues.JSON.value
            outputs = record.outputs()
            if outputs:
                texts = {k: _text(v) for k, v in outputs.items()}
                only = list(texts.values())
                attrs[SpanAttributes.OUTPUT_VALUE] = only[0] if len(only) == 1 else json.dumps(
                    texts, ensure_ascii=False)
        problems = [p.get("message", "") for p in record.problems if isinstance(p, Mapping)]
        if problems:
            attrs["modrag.run.problems"] = [str(p) for p in problems]
        attrs.update(record.extra)
        return attrs


HIDDEN = "<content not exported>"


def content_texts(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The texts among ``values`` (a run's or a node's inputs): strings and the ``text``
    of objects such as a query or a chunk, in lists too."""
    found: list[str] = []

    def add(value: Any, depth: int) -> None:
        text = value if isinstance(value, str) else getattr(value, "text", None)
        if isinstance(text, str):
            found.append(text)
        elif isinstance(value, list | tuple) and depth < 2:
            for item in value[:1000]:
                add(item, depth + 1)

    for value in values.values():
        add(value, 0)
    return tuple(found)


class _Hider:
    """Replaces the given texts (as written and as ``repr`` quotes them) in a message."""

    def __init__(self, texts: tuple[str, ...]) -> None:
        self.texts = tuple(sorted({t for t in texts if t.strip()}, key=len, reverse=True))

    def __call__(self, message: str) -> str:
        for text in self.texts:
            message = message.replace(repr(text), HIDDEN)
            if len(text) >= 3:
                message = message.replace(text, HIDDEN)
        return message


def _span_id() -> int:
    return random.getrandbits(64) or 1


def _text(value: Any) -> str:
    text = getattr(value, "text", value)
    return text if isinstance(text, str) else repr(text)


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
            for k, v in values.items()}
