"""Plain-words sentences about what each node did, generated from a trace's value summaries.

Used by presentation mode ("found 20 passages; kept the best 5"). Works from a trace alone,
so a recorded run (trace JSON) can be replayed without its full values.
"""

from __future__ import annotations

import re

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.formatting import duration, failure
from modrag_studio.engine.core.graph_io import role_of
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.trace import NodeVisit, Trace, ValueSummary

_CITES = re.compile(r"\[(\d+) citations?\]\s*$")


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _quote(text: str, limit: int = 90, strip_id: bool = False) -> str:
    flat = " ".join(text.split())
    if strip_id and ": " in flat:
        flat = flat.split(": ", 1)[1]
    return "“" + (flat if len(flat) <= limit else flat[: limit - 1] + "…") + "”"


def _item_type(summary: ValueSummary) -> str:
    match = re.fullmatch(r"list\[(.+)\]", summary.type)
    return match.group(1) if match else ""


def _scored_inputs(visit: NodeVisit) -> list[ValueSummary]:
    return [s for s in visit.inputs.values() if "ScoredChunk" in s.type or s.type == "list[list]"]


def describe_output(visit: NodeVisit, summary: ValueSummary) -> str:
    """One phrase for one output summary."""
    item, count = _item_type(summary), summary.count or 0
    first = summary.preview[0] if summary.preview else ""
    if item == "Document":
        return f"loaded {_plural(count, 'document')}"
    if item == "Chunk":
        docs = [s.count or 0 for s in visit.inputs.values() if _item_type(s) == "Document"]
        if docs:
            return f"cut {_plural(docs[0], 'document')} into {_plural(count, 'chunk')}"
        return f"produced {_plural(count, 'chunk')}"
    if item == "ScoredChunk":
        inputs = _scored_inputs(visit)
        if len(inputs) > 1 or any(s.type == "list[list]" for s in inputs):
            lists = sum(s.count or 0 for s in inputs if s.type == "list[list]") or len(inputs)
            phrase = f"merged {lists} rankings into {_plural(count, 'passage')}"
        elif inputs:
            before = inputs[0].count or 0
            phrase = (f"looked again at {_plural(before, 'passage')} and kept the best {count}"
                      if count < before else f"re-scored {_plural(count, 'passage')}")
        else:
            phrase = f"found {_plural(count, 'passage')}"
        return phrase + (f"; the best is {_quote(first, 70, strip_id=True)}" if first else "")
    if item:
        return f"produced a list of {_plural(count, item.lower() or 'item')}"
    if summary.type == "Answer":
        match = _CITES.search(first)
        cites = int(match.group(1)) if match else 0
        text = _CITES.sub("", first).strip()
        tail = f", citing {_plural(cites, 'source')}" if cites else ""
        return f"wrote the answer {_quote(text, 140)}{tail}"
    if summary.type == "Prompt":
        match = re.search(r"(\d+) evidence", first)
        evidence = int(match.group(1)) if match else 0
        return f"wrote the instructions for the language model with {_plural(evidence, 'passage')}"
    if summary.type == "Query":
        return f"prepared the question {_quote(first)}"
    if summary.type == "str":
        return f"produced the text {_quote(first)}"
    if summary.type in ("int", "float", "bool"):
        return f"produced {first}"
    if summary.type == "dict":
        return f"produced a record with {_plural(count, 'field')}"
    return f"produced a {summary.type}"


def describe_visit(visit: NodeVisit, title: str = "", registry: NodeRegistry | None = None) -> str:
    """A sentence for one visit: what the node did, in plain words."""
    name = title or visit.node_id
    if visit.status == "skipped":
        return f"{name} was skipped ({visit.skip_reason or 'its branch was not taken'})."
    if visit.status == "failed":
        return f"{name} failed: {failure(visit, with_type=False)}"
    if visit.status == "cancelled":
        return f"{name} was stopped before it finished."
    role = role_of(visit.type_id, registry or default_registry())
    if role == "input":
        value = next(iter(visit.outputs.values()), None)
        shown = _quote(value.preview[0]) if value and value.preview else "a value"
        return f"{name}: the run was given {shown}."
    if role == "output":
        value = next(iter(visit.outputs.values()), None)
        phrase = describe_output(visit, value) if value else "returned nothing"
        return f"{name}: the result of the run. It {phrase.replace('produced', 'holds', 1)}."
    uncut = _uncut_port(visit.type_id, registry)  # repeats "results": not told twice
    phrases = [_flag(p, s) if s.type == "bool" else describe_output(visit, s)
               for p, s in visit.outputs.items() if p != uncut]
    phrase = "; ".join(phrases) if phrases else "finished without output"
    claims = visit.details.get("claims")
    if isinstance(claims, list) and visit.details.get("reason"):  # a grounding check
        phrase = (f"looked up {_plural(len(claims), 'claim')} of the answer in the documents: "
                  f"{visit.details['reason']}")
        route = visit.details.get("route")
        return f"{name} {phrase}" + (f"; the answer goes on as “{route}”." if route else ".")
    if visit.details.get("route"):
        phrase += f"; it chose the “{visit.details['route']}” branch"
        if visit.details.get("reason"):
            phrase += f" because {visit.details['reason']}"
    when = {"cached": "reused its earlier result: it ",
            "bypassed": "was bypassed, passing its input on: it ",
            "pinned": "gave its pinned output: it "}.get(visit.status, "")
    slow = visit.status == "done" and visit.duration_s >= 0.05
    timing = f" (in {duration(visit.duration_s)})" if slow else ""
    return f"{name} {when}{phrase}{timing}."


def _flag(port: str, summary: ValueSummary) -> str:
    """A yes/no output in words ("reranked: yes"), not "produced True"."""
    first = summary.preview[0] if summary.preview else ""
    return f"{port.replace('_', ' ')}: {'yes' if first.strip() == 'True' else 'no'}"


def _uncut_port(type_id: str, registry: NodeRegistry | None) -> str | None:
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.evidence.lineage import role_of as evidence_role

    registry = registry or default_registry()
    role = evidence_role(registry.get(type_id)) if type_id in registry else None
    return role.uncut_port if role is not None else None


def story(trace: Trace, titles: dict[str, str] | None = None,
          registry: NodeRegistry | None = None) -> list[tuple[NodeVisit, str]]:
    """The replay steps of a run: each visit that started, with its sentence."""
    titles = titles or {}
    steps = []
    for visit in trace.visits:
        if visit.status == "cancelled" and not visit.started_at:
            continue
        steps.append((visit, describe_visit(visit, titles.get(visit.node_id, ""), registry)))
    return steps
