"""Where was the expected evidence lost? Follows it through a finished run, node by node.

Works on a ``RunResult`` (each node's inputs and outputs of its last visit) and the nodes'
declared evidence roles (``engine.lineage``): no re-run, no special cases per node type. For
every declared node it says where the evidence stands ("#3 of 20", "dropped, was #5 (top_n
8)", "block [2]", "cited [2]"), whether it arrived and whether it left, names the first node
that lost it and says so in one sentence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.core.datatypes import Answer, Chunk, Prompt, ScoredChunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.evidence.expected import ExpectedEvidence, iter_chunks
from modrag_studio.engine.evidence.lineage import (
    EvidenceRole,
    UncutRanking,
    last_inputs,
    last_outputs,
    registry_of,
    role_of,
)
from modrag_studio.engine.evidence.narration import NOUNS, narrate
from modrag_studio.engine.evidence.standing import Attribution, NodeEvidence
from modrag_studio.engine.run.executor import RunResult

_INDEXED_MIN = 256  # values this long are indexed once and reused (evaluation loops)
_RANKED_KINDS = ("retrieves", "merges", "reorders", "filters", "gate", "prompt")


@dataclass(frozen=True)
class Found:
    """A relevant chunk in a value: 1-based position, the chunk, its scored form."""

    position: int
    chunk: Chunk
    scored: ScoredChunk | None


class EvidenceFinder:
    """Finds relevant chunks in node values; long values are indexed once by identity."""

    def __init__(self) -> None:
        self._indexes: dict[int, tuple[Any, list[tuple[Chunk, ScoredChunk | None]],
                                       dict[str, list[int]], dict[str, list[int]]]] = {}

    def entries(self, value: Any) -> list[tuple[Chunk, ScoredChunk | None]]:
        if value is None:
            return []
        cached = self._indexes.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        entries = list(iter_chunks(value))
        if len(entries) >= _INDEXED_MIN:
            by_doc: dict[str, list[int]] = {}
            by_chunk: dict[str, list[int]] = {}
            for i, (chunk, _) in enumerate(entries):
                by_doc.setdefault(chunk.doc_id, []).append(i)
                by_chunk.setdefault(chunk.chunk_id, []).append(i)
            self._indexes[id(value)] = (value, entries, by_doc, by_chunk)
        return entries

    def find(self, expected: ExpectedEvidence, value: Any) -> list[Found]:
        entries = self.entries(value)
        cached = self._indexes.get(id(value))
        if cached is not None and cached[0] is value and all(
                item.kind in ("doc", "chunk") for item in expected.items):
            hits: set[int] = set()
            for item in expected.items:
                hits.update((cached[2] if item.kind == "doc" else cached[3]).get(item.value, []))
            return [Found(i + 1, *entries[i]) for i in sorted(hits)]
        return [Found(i, chunk, scored) for i, (chunk, scored) in enumerate(entries, start=1)
                if expected.is_relevant(chunk)]


@dataclass
class _Context:
    expected: ExpectedEvidence
    finder: EvidenceFinder
    node_id: str
    role: EvidenceRole
    params: dict[str, Any]
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    upstream_reached: bool | None
    in_ports: list[str]
    out_ports: list[str]
    explain: bool

    def find(self, values: Iterable[Any]) -> tuple[list[Found], int]:
        found: list[Found] = []
        total = 0
        for value in values:
            hits = self.finder.find(self.expected, value)
            offset = total
            found.extend(Found(h.position + offset, h.chunk, h.scored) for h in hits)
            total += len(self.finder.entries(value))
        return found, total

    def flow(self) -> tuple[list[Found], int, list[Found], bool]:
        """Relevant chunks out (and the output's length), relevant chunks in, and whether the
        evidence arrived (in the inputs, or the declared upstream node reached it)."""
        found, count = self.find(self.out_values())
        before, _ = self.find(self.in_values())
        return found, count, before, bool(before) or bool(self.upstream_reached)

    def in_values(self) -> list[Any]:
        return [self.inputs[p] for p in self.in_ports if self.inputs.get(p) is not None]

    def out_values(self) -> list[Any]:
        return [self.outputs[p] for p in self.out_ports if self.outputs.get(p) is not None]

    @property
    def cut(self) -> str:
        name, value = self.cut_param
        return f"{name}={value}" if name else ""

    @property
    def cut_param(self) -> tuple[str, str]:
        """(param name, value) of the declared cut; ("", "") when there is none."""
        name = self.role.top_param
        value = self.params.get(name) if name else None
        return (name, str(value)) if name and value else ("", "")

    def before_cut(self) -> tuple[int, int] | None:
        """(position, length) of the first relevant chunk in the whole ranking before the cut,
        from the declared ``uncut_port`` (None: not declared, not emitted or not in it)."""
        port = self.role.uncut_port
        uncut = self.outputs.get(port) if port else None
        value = uncut.items if isinstance(uncut, UncutRanking) else uncut
        hits = self.finder.find(self.expected, value) if value is not None else []
        return (hits[0].position, len(self.finder.entries(value))) if hits else None


def attribute(result: RunResult, doc: GraphDocument, expected: ExpectedEvidence, *,
              registry: NodeRegistry | None = None, targets: Iterable[str] = (),
              finder: EvidenceFinder | None = None, explain: bool = True) -> Attribution:
    """Follow ``expected`` through ``result``: one ``NodeEvidence`` per declared node.

    ``targets``: only nodes that feed these (and the targets themselves); default all.
    ``explain``: also resolve phrases against the splitter output (skipped in evaluations).
    """
    registry = registry_of(result, registry)
    finder = finder or EvidenceFinder()
    doc = expand(doc).doc  # the graph as it ran: inner nodes of subgraphs as sub/inner
    topology = Topology.of(doc)
    order, _ = topology.order()
    wanted = set(targets)
    if wanted:
        keep = set(wanted)
        for target in wanted:
            keep |= topology.upstream(target)
        order = [n for n in order if n in keep]
    ins, outs = last_inputs(result), last_outputs(result)
    states: dict[str, NodeEvidence] = {}
    resolutions: list[str] = []
    generator = ""
    for node_id in order:
        spec = doc.node(node_id)
        if spec.type not in registry or not outs.get(node_id):
            continue
        node_type = registry.get(spec.type)
        role = role_of(node_type)
        if role is None:
            continue
        sources = [e.source_node for e in topology.incoming.get(node_id, [])
                   if (not role.inputs or e.target_port in role.inputs) and e.source_node in states]
        upstream = any(states[s].reached for s in sources) if sources else None
        try:
            params = node_type.Params.model_validate(spec.params).model_dump()
        except Exception:
            params = dict(spec.params)
        ctx = _Context(expected, finder, node_id, role, params, ins.get(node_id, {}),
                       outs[node_id], upstream, role.in_ports(node_type),
                       role.out_ports(node_type), explain)
        if role.kind == "passes" and "prompt" in role.inputs:
            generator = node_id
        state = _KINDS[role.kind](ctx)
        state.node_id, state.type_id, state.kind = node_id, spec.type, role.kind
        state.noun = role.noun or NOUNS[role.kind]
        states[node_id] = state
        if role.kind == "splits" and explain:
            resolutions.extend(_resolutions(ctx))
    nodes = list(states.values())
    attribution = Attribution(expected.specs, nodes, resolutions, generator=generator)
    attribution.first_loss = _first_loss(nodes, topology, wanted)
    attribution.verdict = _verdict(attribution)
    attribution.narration = narrate(attribution)
    return attribution


# per-kind readers -----------------------------------------------------------------

def _state(arrived: bool, reached: bool, text: str, short: str = "",
           found: list[Found] | None = None, count: int = 0) -> NodeEvidence:
    return NodeEvidence("", "", "", arrived, reached, text, short or text,
                        [f.position for f in found or []], count)


def _at(found: list[Found], count: int) -> str:
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return f"#{found[0].position} of {count}{more}"


def _source(ctx: _Context) -> NodeEvidence:
    found, count = ctx.find(ctx.out_values())
    if found:
        docs = list(dict.fromkeys(f.chunk.doc_id for f in found))
        return _state(True, True, f"loaded: {', '.join(docs[:3])} ({count} documents)",
                      "loaded", found, count)
    return _state(True, False, f"not loaded ({count} documents)", "not loaded", found, count)


def _splits(ctx: _Context) -> NodeEvidence:
    found, count, _, arrived = ctx.flow()
    if found:
        ids = list(dict.fromkeys(f.chunk.chunk_id for f in found))
        more = f" (+{len(ids) - 3} more)" if len(ids) > 3 else ""
        return _state(arrived, True, f"in chunk {', '.join(ids[:3])}{more} of {count}",
                      "in chunk " + ids[0], found, count)
    return _state(arrived, False, "not in any chunk: the loader or splitter dropped it",
                  "not in any chunk", found, count)


def _indexes(ctx: _Context) -> NodeEvidence:
    found, count = ctx.find(ctx.in_values())
    arrived = bool(found) or (ctx.upstream_reached is True and not count)
    if arrived:
        return _state(True, True, f"indexed ({len(found) or 'its'} relevant chunks of {count})",
                      "indexed", found, count)
    return _state(False, False, f"not among the {count} chunks indexed", "not indexed",
                  found, count)


def _retrieves(ctx: _Context) -> NodeEvidence:
    found, count = ctx.find(ctx.out_values())
    arrived = ctx.upstream_reached is not False
    if found:
        return _state(arrived, True, _at(found, count), f"#{found[0].position}", found, count)
    if not count:
        return _state(arrived, False, "retrieved nothing", "not retrieved", found, count)
    cut = f" ({ctx.cut})" if ctx.cut else ""
    return _state(arrived, False, f"not in the top {count}{cut}", "not retrieved", found, count)


def _merges(ctx: _Context) -> NodeEvidence:
    found, count = ctx.find(ctx.out_values())
    before = _input_ranks(ctx)
    arrived = bool(before) or bool(ctx.upstream_reached)
    if found:
        best = found[0]
        sources = best.scored.sources if best.scored is not None else {}
        ranks = ", ".join(f"{name} #{s.rank}" for name, s in sources.items()) or before
        return _state(arrived, True, f"{_at(found, count)} ({ranks})" if ranks
                      else _at(found, count), f"#{best.position}", found, count)
    uncut = ctx.before_cut()
    name, value = ctx.cut_param
    if uncut is not None:
        cut = f", cut by {ctx.cut}" if ctx.cut else ""
        ranks = f" ({before})" if before else ""
        state = _state(arrived, False, f"#{uncut[0]} of {uncut[1]}{cut}{ranks}", "cut",
                       found, count)
        state.now, state.limit = uncut[0], value
        # the verdict names the input ranks itself ("bm25 #2, vector #9 before fusion, ...")
        inputs = f"{before} before {ctx.node_id}, " if before else ""
        state.clause = f"{inputs}#{uncut[0]} after" + (f", {name} is {value}" if name else "")
        return state
    cut = f"cut by {ctx.cut}: " if ctx.cut else "dropped: "
    return _state(arrived, False, f"{cut}was {before}" if before else "not in any input",
                  "dropped", found, count)


def _input_ranks(ctx: _Context) -> str:
    """"bm25 #2, vector #41": the best relevant rank in each input ranking."""
    parts: list[str] = []
    for port in ctx.in_ports:
        value = ctx.inputs.get(port)
        lists = value if isinstance(value, list) and value and isinstance(value[0], list) \
            else [value]
        for index, ranking in enumerate(lists, start=1):
            hits = ctx.finder.find(ctx.expected, ranking)
            if hits:
                scored = hits[0].scored
                name = scored.retriever if scored is not None and scored.retriever \
                    else f"input {index}"
                parts.append(f"{name} #{hits[0].position}")
    return ", ".join(parts)


def _reorders(ctx: _Context) -> NodeEvidence:
    found, count, before, arrived = ctx.flow()
    was = f", was #{before[0].position}" if before else ""
    if found:
        state = _state(arrived, True, f"{_at(found, count)}{was}", f"#{found[0].position}",
                       found, count)
        state.was = before[0].position if before else None
        return state
    name, value = ctx.cut_param
    cut = f" ({name} {value})" if name else ""
    uncut = ctx.before_cut()
    now = f", now #{uncut[0]}" if uncut is not None else ""
    state = _state(arrived, False, f"dropped{was}{now}{cut}", "dropped", found, count)
    state.was = before[0].position if before else None
    state.limit = value
    if uncut is not None:
        state.now = uncut[0]
        state.clause = f"#{uncut[0]} after {ctx.node_id}" + (f", {name} is {value}"
                                                             if name else "")
    return state


def _filters(ctx: _Context) -> NodeEvidence:
    found, count, before, arrived = ctx.flow()
    graded = sum(len(ctx.finder.entries(v)) for v in ctx.in_values())
    of = f" of {graded}" if graded else ""
    judges = ctx.role.judges
    if found:
        judged = f" ({count}{of} judged relevant)" if judges else f" ({count}{of} kept)"
        return _state(arrived, True, f"kept, {_at(found, count)}{judged}", "kept", found,
                      count)
    port = ctx.role.dropped_port
    rejected = ctx.finder.find(ctx.expected, ctx.outputs.get(port)) if port else []
    short = ("judged not relevant" if rejected else "filtered out") if judges else "cut out"
    was = f"was #{before[0].position}{of}; " if before else ""
    kept = [c.chunk_id for c, _ in iter_chunks(ctx.out_values())]
    label = "judged relevant" if judges else "kept"
    which = (f"{label}: {', '.join(kept[:3])}" + (f" (+{len(kept) - 3} more)"
                                                  if len(kept) > 3 else "")
             if kept else f"none {label}")
    state = _state(arrived, False, f"{short} ({was}{which})", short, found, count)
    state.was = before[0].position if before else None
    state.clause = f"{short}, {which}"
    return state


def _gate(ctx: _Context) -> NodeEvidence:
    found, count, before, arrived = ctx.flow()
    stopped = ctx.role.stop_port is not None and ctx.role.stop_port in ctx.outputs \
        and not ctx.out_values()
    if stopped:
        return _state(arrived, False, "stopped the run", "stopped the run", found, count)
    if found:
        return _state(arrived, True, f"passed, {_at(found, count)}", "passed", found, count)
    return _state(arrived, False, "not passed on", "not passed on", found, count)


def _prompt(ctx: _Context) -> NodeEvidence:
    before, _ = ctx.find(ctx.in_values())
    arrived = bool(before) or bool(ctx.upstream_reached)
    prompts = [v for v in ctx.outputs.values() if isinstance(v, Prompt)]
    found, count = ctx.find(prompts)
    if found:
        blocks = ", ".join(f"[{f.position}]" for f in found[:3])
        return _state(arrived, True, f"block {blocks} of {count}", f"block [{found[0].position}]",
                      found, count)
    dropped = {cid for p in prompts for cid in p.dropped}
    if any(f.chunk.chunk_id in dropped for f in before):
        cut = f" ({ctx.cut})" if ctx.cut else ""
        return _state(arrived, False, f"dropped by the token budget{cut}",
                      "dropped by the budget", found, count)
    return _state(arrived, False, "not in the prompt", "not in the prompt", found, count)


UNSUPPORTED = ("missing", "mismatch")  # claim verdicts of a check that the evidence does not back
CONTRADICTED = "ignored or contradicted"


def _unsupported(answers: list[Answer]) -> str:
    """Why a checked answer does not say what its evidence says ("" when it does, or when
    no check has looked at it): the check's reason, its claims that no block states about
    the question's subject."""
    for answer in answers:
        bad = [c for c in answer.claims if c.verdict in UNSUPPORTED]
        if bad:
            return answer.check_reason or ", ".join(c.text for c in bad)
    return ""


def _passes(ctx: _Context) -> NodeEvidence:
    found, count, before, arrived = ctx.flow()
    answers = [v for v in ctx.out_values() if isinstance(v, Answer)]
    reason = _unsupported(answers) if found and ctx.upstream_reached and answers else ""
    if reason:  # the evidence reached the prompt and was cited, but the answer says otherwise
        return _state(arrived, False, f"reached the prompt, {CONTRADICTED} at generate: "
                      f"{reason}", CONTRADICTED, found, count)
    if found and ctx.upstream_reached is False and all(
            isinstance(v, Answer) for v in ctx.out_values()):
        # an answer carries the evidence it was given; what counts is whether it was cited
        return _state(False, False, f"carried, not used ({_at(found, count)})", "not used",
                      found, count)
    if found:
        return _state(arrived, True, _at(found, count), f"#{found[0].position}", found, count)
    return _state(arrived, False, "not passed on", "not passed on", found, count)


def _cites(ctx: _Context) -> NodeEvidence:
    answers = [v for v in ctx.out_values() if isinstance(v, Answer)]
    given, count = ctx.find(answers)
    before, _ = ctx.find(ctx.in_values())
    arrived = bool(given) or bool(before) or bool(ctx.upstream_reached)
    relevant_chunks = {f.chunk.chunk_id for f in given + before}
    relevant_docs = {f.chunk.doc_id for f in given + before}
    refs = [c.ref for a in answers for c in a.citations if c.valid and (
        (c.chunk_id is not None and c.chunk_id in relevant_chunks)
        or (c.chunk_id is None and c.doc_id in relevant_docs))]
    if refs:
        cited = ", ".join(f"[{r}]" for r in dict.fromkeys(refs))
        return _state(arrived, True, f"cited {cited}", f"cited {cited}", given, count)
    where = f" (given as block [{given[0].position}])" if given else ""
    return _state(arrived, False, f"not cited{where}", "not cited", given, count)


_KINDS = {"source": _source, "splits": _splits, "indexes": _indexes, "retrieves": _retrieves,
          "merges": _merges, "reorders": _reorders, "filters": _filters, "gate": _gate,
          "prompt": _prompt, "passes": _passes, "cites": _cites}


def _resolutions(ctx: _Context) -> list[str]:
    chunks = [c for c, _ in iter_chunks(ctx.out_values())]
    documents = [v for value in ctx.in_values() for v in (value if isinstance(value, list)
                                                           else [value])]
    docs = [d for d in documents if hasattr(d, "doc_id") and hasattr(d, "title")]
    return [r.describe() for r in ctx.expected.resolve(chunks, docs)]


# first loss and verdict ----------------------------------------------------------

def _first_loss(nodes: list[NodeEvidence], topology: Topology, targets: set[str]) -> str | None:
    by_id = {n.node_id: n for n in nodes}
    ends = [by_id[t] for t in targets if t in by_id] or \
        [n for n in nodes if not (topology.downstream(n.node_id) & set(by_id))]
    if ends and any(n.reached for n in ends):
        return None
    for node in nodes:
        if node.status != "lost":
            continue
        later = topology.downstream(node.node_id) & set(by_id)
        if not any(by_id[d].reached for d in later):
            return node.node_id
    return None


def _verdict(attribution: Attribution) -> str:
    nodes = attribution.nodes
    if not nodes:
        return "No node in this graph declares how it handles evidence."
    if not attribution.expected:
        return "No expected evidence declared."
    loss = attribution.node(attribution.first_loss) if attribution.first_loss else None
    if loss is None:
        reached = [n for n in nodes if n.reached]
        if not reached:
            return "The expected evidence appears at no node of this run."
        cited = [n for n in reached if n.kind == "cites"]
        if cited:
            last = cited[-1]
            return f"The expected evidence reaches the answer: {last.text} ({last.node_id})."
        last = reached[-1]
        return f"The expected evidence reaches {last.node_id}: {last.text}."
    if loss.short == CONTRADICTED:
        at = f"generate ({attribution.generator})" if attribution.generator else "generate"
        return (f"The expected evidence reached the prompt, and was {CONTRADICTED} at {at}: "
                f"{loss.text.split(': ', 1)[-1]} ({loss.node_id}).")
    if loss.kind == "merges" and loss.clause:
        return f"Lost at {loss.node_id}: {loss.clause}."
    before = _last_reached_before(nodes, loss)
    trail = f"{before.short} after {before.node_id}, " if before is not None else ""
    return f"Lost at {loss.node_id}: {trail}{loss.clause or loss.text}."


def _last_reached_before(nodes: list[NodeEvidence], loss: NodeEvidence) -> NodeEvidence | None:
    ranked = [n for n in nodes[: nodes.index(loss)] if n.reached and n.kind in _RANKED_KINDS]
    return ranked[-1] if ranked else None
