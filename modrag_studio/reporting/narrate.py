"""Plain-words sentences about what each node did, generated from a trace's value summaries.

Used by presentation mode ("found 20 passages; kept the best 5"). Works from a trace alone,
so a recorded run (trace JSON) can be replayed without its full values. ``plain`` tells it to
someone who does not know the engine: no model names, an embedding said as what it does.
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


NOTHING = "passed on nothing"


def describe_output(visit: NodeVisit, summary: ValueSummary, plain: bool = False) -> str:
    """One phrase for one output summary (``plain``: without the engine's words)."""
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
            phrase = f"found {_plural(count, 'passage')}" if count else "found no passage"
        return phrase + (f"; the best is {_quote(first, 70, strip_id=True)}" if first else "")
    if item:
        noun = "item" if item in ("Any", "object") else item.lower()
        if plain and not count:
            return NOTHING
        return f"produced a list of {_plural(count, noun)}"
    if summary.type == "Answer":
        match = _CITES.search(first)
        cites = int(match.group(1)) if match else 0
        text = _CITES.sub("", first).strip()
        tail = (f", citing {_plural(cites, 'source')}" if cites else
                "; it cites no source, so nothing shows that the documents back it")
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
    told = _told(summary, first, count, plain)
    return told if told is not None else f"produced {_noun(summary.type)}"


def _after_colon(text: str) -> str:
    return text.split(":", 1)[1] if ":" in text else text


PLAIN = {  # the same steps for someone who has never heard of an embedding
    "EmbedderSpec": "chose the model that compares meanings (it turns text into numbers)",
    "LLMSpec": "chose the language model that writes the answer",
    "VectorIndex": "stored {n} so they can be searched by meaning",
    "EmbeddedChunks": "turned {n} into numbers that capture their meaning",
}


def _told(summary: ValueSummary, first: str, count: int, plain: bool = False) -> str | None:
    """The value types of the node library that have their own words (a model's settings,
    an index, a report); None for the others."""
    kind = summary.type
    if plain and kind in PLAIN:
        return PLAIN[kind].format(n=_plural(count, "passage") if count else "the passages")
    if kind == "EmbedderSpec":
        return f"chose the embedding model {_after_colon(first)}" if first else \
            "chose the embedding model"
    if kind == "LLMSpec":
        return f"chose the language model {_after_colon(first)}" if first else \
            "chose the language model"
    if kind == "LoadReport":
        match = re.match(r"(\d+)/(\d+) files, [^,]+(.*)", first)
        if not match:
            return "reported which files it read"
        rest = match.group(3).replace(" (not documents)", " that hold no documents")
        return f"read {match.group(1)} of {_plural(int(match.group(2)), 'file')}{rest}"
    if kind == "VectorIndex":
        return f"stored {_plural(count, 'passage')} in a vector index" if count else \
            "opened a vector index"
    if kind == "BM25Index":
        match = re.search(r"(\d+) chunks", first)
        size = f" of {_plural(int(match.group(1)), 'passage')}" if match else ""
        return f"built a keyword index{size}"
    return {"KnowledgeGraph": "built a knowledge graph",
            "GraphExtraction": "picked out the names and relations in the passages",
            "EntityLinks": "matched the question's names to the knowledge graph",
            "GraphSearchResult": "searched the knowledge graph",
            "EmbeddedChunks": f"embedded {_plural(count, 'passage')}",
            "IngestPlan": "planned how to cut the documents",
            "IngestReport": "reported how each document was cut",
            "DocumentAnalysis": "measured the documents' structure",
            "Tokenizer": "chose how to cut text into words"}.get(kind)


def _noun(type_name: str) -> str:
    """``ChunkQualityReport`` -> "a chunk quality report" (no type names in the narration)."""
    bare = re.sub(r"[\[\]|.,]", " ", type_name).split()[-1] if type_name.strip() else "value"
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", bare).lower()
    words = words.replace("_", " ").strip() or "value"
    return ("an " if words[0] in "aeiou" else "a ") + words


def describe_visit(visit: NodeVisit, title: str = "", registry: NodeRegistry | None = None,
                   plain: bool = False) -> str:
    """A sentence for one visit: what the node did, in plain words (``plain``: without model
    names or the words of how text is compared)."""
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
        phrase = describe_output(visit, value, plain) if value else "returned nothing"
        return f"{name}: the result of the run. It {phrase.replace('produced', 'holds', 1)}."
    uncut = _uncut_port(visit.type_id, registry)  # repeats "results": not told twice
    phrases = [_flag(p, s) if s.type == "bool" else describe_output(visit, s, plain)
               for p, s in visit.outputs.items() if p != uncut]
    told = [p for p in phrases if p != NOTHING] or phrases  # an empty side output says nothing
    phrase = "; ".join(told) if told else "finished without output"
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


_UPSTREAM_FAILED = re.compile(r"upstream node '([^']+)' failed")
_NO_VALUE = re.compile(r"inactive branch: input '[^']*' got no value \(([^)]*)\)")


def skipped_sentence(visit: NodeVisit, name: str, trace: Trace,
                     titles: dict[str, str]) -> str:
    """Why a node was skipped, in nouns: the step that failed, the branch a router chose;
    never the port ids of the executor's reason."""
    reason = visit.skip_reason
    failed = _UPSTREAM_FAILED.fullmatch(reason)
    if failed:
        return f"{name} was skipped because {_title(failed.group(1), titles)} failed."
    inactive = _NO_VALUE.fullmatch(reason)
    if inactive or reason.startswith("inactive branch"):
        sources = [s.split(".", 1)[0] for s in (inactive.group(1) if inactive else "").split(", ")
                   if s and s != "nothing connected"]
        for source in sources:
            chooser = trace.last_visit(source)
            route = chooser.details.get("route") if chooser is not None else None
            if route:
                return (f"{name} was skipped: {_title(source, titles)} chose the “{route}” "
                        "branch, not this one.")
        return f"{name} was skipped: its branch was not taken."
    return f"{name} was skipped ({reason or 'its branch was not taken'})."


def _title(node_id: str, titles: dict[str, str]) -> str:
    return titles.get(node_id) or node_id


_ASKED = re.compile(r"question|query", re.IGNORECASE)


def story(trace: Trace, titles: dict[str, str] | None = None,
          registry: NodeRegistry | None = None, *,
          plain: bool = False) -> list[tuple[NodeVisit, str]]:
    """The replay steps of a run: each visit that started, with its sentence. The question
    of a run given earlier turns is told as a follow-up question."""
    titles = titles or {}
    registry = registry or default_registry()
    steps = []
    for visit in trace.visits:
        if visit.status == "cancelled" and not visit.started_at:
            continue
        name = titles.get(visit.node_id, "")
        sentence = skipped_sentence(visit, name or visit.node_id, trace, titles) \
            if visit.status == "skipped" else \
            _asked(trace, visit, plain, registry) or describe_visit(visit, name, registry, plain)
        steps.append((visit, sentence))
    return steps


def _asked(trace: Trace, visit: NodeVisit, plain: bool, registry: NodeRegistry) -> str:
    """The question input's sentence: a follow-up after earlier turns, the question asked in
    ``plain`` words; "" for other steps."""
    value = next(iter(visit.outputs.values()), None)
    if visit.status not in ("done", "cached") or role_of(visit.type_id, registry) != "input" \
            or value is None or not value.preview:
        return ""
    shown = value.preview[0].rstrip("…")
    questions = [str(v) for k, v in (trace.inputs or {}).items() if _ASKED.search(k)]
    if not _ASKED.search(visit.node_id) and not any(q.startswith(shown) for q in questions):
        return ""
    earlier = str((trace.inputs or {}).get("history") or "").strip()
    if earlier:
        return (f"A follow-up question: {_quote(value.preview[0])}, asked after the earlier "
                "turn of the conversation, which the answer may draw on.")
    return f"The question asked: {_quote(value.preview[0])}." if plain else ""


def _produces(visit: NodeVisit, kind: str) -> bool:
    return any(s.type == kind for s in visit.outputs.values())


def _ranks(visit: NodeVisit) -> bool:
    return any(_item_type(s) == "ScoredChunk" for s in visit.outputs.values())


def story_steps(steps: list[tuple[NodeVisit, str]],
                registry: NodeRegistry | None = None) -> list[int]:
    """The short story of a run for people who did not build it (indices into ``steps``):
    the question, what was found (the first rankings), what was kept (the ranking the prompt
    got), the answer, the check, the result. Fewer than 3 of those: the full replay."""
    registry = registry or default_registry()
    done = [(i, v) for i, (v, _s) in enumerate(steps) if v.status in ("done", "cached",
                                                                         "pinned")]
    inputs = [(i, v) for i, v in done if role_of(v.type_id, registry) == "input"]
    asked = [(i, v) for i, v in inputs if re.search(r"question|query", v.node_id, re.I)]
    picked = [(asked or inputs)[0][0]] if inputs else []
    ranked = [(i, v) for i, v in done if _ranks(v)]
    first = [i for i, v in ranked if not _scored_inputs(v)][:2]
    answers = [(i, v) for i, v in done if _produces(v, "Answer")
               and role_of(v.type_id, registry) != "output"]
    answer_at = next((i for i, v in answers if _CITES.search(_preview(v, "Answer"))),
                     answers[0][0] if answers else None)
    before_answer = [i for i, _v in ranked if answer_at is None or i < answer_at]
    kept = [before_answer[-1]] if before_answer and before_answer[-1] not in first else []
    checks = [i for i, v in done if isinstance(v.details.get("claims"), list)
              or v.details.get("verdict") is not None]
    outputs = [i for i, v in done if role_of(v.type_id, registry) == "output"]
    picked += first + kept + ([answer_at] if answer_at is not None else [])
    picked += checks[:1] + outputs[-1:]
    chosen = sorted(dict.fromkeys(picked))
    return chosen if len(chosen) >= 3 else list(range(len(steps)))


def _preview(visit: NodeVisit, kind: str) -> str:
    return next((s.preview[0] for s in visit.outputs.values() if s.type == kind and s.preview),
                "")
