""""Force into the prompt": re-run from the prompt builder with the expected chunks inserted.

Tells a retrieval failure from a generation failure: if the model answers right once the
right passage is in its prompt, the loss was upstream; if not, it is the model (or prompt).
The graph is copied with an ``evidence.pin`` node wired in front of the prompt builder's
evidence input; everything upstream keeps its cache key, so it comes from the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.core.datatypes import Answer, ScoredChunk
from modrag_studio.engine.core.document import EdgeSpec, GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.evidence.attribution import Attribution, EvidenceFinder, attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.evidence.lineage import last_outputs, registry_of, role_of
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook

PIN_NODE = "forced_evidence"
_RANKED = ("retrieves", "merges", "reorders", "filters", "gate", "passes")


class CounterfactualError(ModragError):
    """The forced run cannot be set up (no prompt builder, no expected chunk in the run)."""


@dataclass
class Counterfactual:
    """The first answer and the one given with the expected chunks forced into the prompt."""

    prompt_node: str
    inserted: list[str]
    first: Any
    second: Any
    result: RunResult
    attribution: Attribution

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_node": self.prompt_node, "inserted": self.inserted,
                "first": _text(self.first), "second": _text(self.second),
                "verdict": self.attribution.verdict}

    def summary(self) -> str:
        return (f"With {', '.join(self.inserted)} forced into {self.prompt_node}: "
                f"{_text(self.second)!r} (before: {_text(self.first)!r})")


def prompt_node_of(doc: GraphDocument, registry: NodeRegistry) -> str:
    """The first prompt builder (a node declaring the ``prompt`` role) in run order."""
    order, _ = Topology.of(doc).order()
    for node_id in order:
        spec = doc.node(node_id)
        role = role_of(registry.get(spec.type)) if spec.type in registry else None
        if role is not None and role.kind == "prompt":
            return node_id
    raise CounterfactualError("the graph has no prompt builder to force evidence into")


def expected_chunks(result: RunResult, doc: GraphDocument, expected: ExpectedEvidence, *,
                    registry: NodeRegistry | None = None, limit: int = 3) -> list[ScoredChunk]:
    """The relevant chunks of the last run: best-ranked first, then the splitter's."""
    registry = registry_of(result, registry)
    finder = EvidenceFinder()
    outputs = last_outputs(result)
    ranked: dict[str, tuple[int, ScoredChunk]] = {}
    split: dict[str, ScoredChunk] = {}
    for spec in doc.nodes:
        role = role_of(registry.get(spec.type)) if spec.type in registry else None
        if role is None or spec.id not in outputs:
            continue
        for value in outputs[spec.id].values():
            for hit in finder.find(expected, value):
                chunk_id = hit.chunk.chunk_id
                if role.kind in _RANKED and hit.scored is not None:
                    if chunk_id not in ranked or hit.position < ranked[chunk_id][0]:
                        ranked[chunk_id] = (hit.position, hit.scored)
                elif role.kind == "splits":
                    split.setdefault(chunk_id, ScoredChunk(chunk=hit.chunk, score=1.0))
    best = [sc for _, sc in sorted(ranked.values(), key=lambda p: p[0])]
    best += [sc for cid, sc in split.items() if cid not in ranked]
    return [ScoredChunk(chunk=sc.chunk, score=sc.score, score_kind=sc.score_kind,
                        higher_is_better=sc.higher_is_better) for sc in best[:limit]]


def pin_type(registry: NodeRegistry) -> str:
    """The node type that pins evidence (``EvidenceRole.pins``)."""
    found = next((t.type_id for t in registry
                  if t.evidence_role is not None and t.evidence_role.pins), None)
    if found is None:
        raise CounterfactualError("no node type pins evidence (EvidenceRole pins=True): "
                                  "nothing to force chunks into the prompt with")
    return found


def with_pinned_evidence(doc: GraphDocument, prompt_node: str, chunks: list[ScoredChunk],
                         registry: NodeRegistry) -> GraphDocument:
    """A copy of ``doc`` whose prompt builder gets ``chunks`` first in its evidence."""
    params = {"chunks": [c.model_dump(mode="json") for c in chunks]}
    edges: list[EdgeSpec] = []
    fed = False
    for edge in doc.edges:
        if edge.target_node == prompt_node and edge.target_port == "evidence" and edge.loop is None:
            edges.append(EdgeSpec.model_validate({"from": edge.source,
                                                  "to": f"{PIN_NODE}.evidence"}))
            fed = True
        else:
            edges.append(edge)
    edges.append(EdgeSpec.model_validate({"from": f"{PIN_NODE}.results",
                                          "to": f"{prompt_node}.evidence"}))
    if not fed:
        edges = [e for e in edges if e.target != f"{PIN_NODE}.evidence"]
    pin = NodeSpec.model_validate({"id": PIN_NODE, "type": pin_type(registry),
                                   "params": params})
    return doc.model_copy(update={"nodes": [*doc.nodes, pin], "edges": edges})


def force_into_prompt(executor: Executor, doc: GraphDocument, inputs: Mapping[str, Any],
                      result: RunResult, expected: ExpectedEvidence, *,
                      prompt_node: str | None = None, hooks: Iterable[RunHook] = (),
                      cancel: CancelToken | None = None) -> Counterfactual:
    """Run ``doc`` again with the expected chunks of ``result`` forced into the prompt."""
    if not expected:
        raise CounterfactualError("declare the expected evidence first")
    prompt_node = prompt_node or prompt_node_of(doc, executor.registry)
    chunks = expected_chunks(result, doc, expected, registry=executor.registry)
    if not chunks:
        raise CounterfactualError(
            "no chunk of the last run matches the expected evidence: nothing to force in")
    forced = with_pinned_evidence(doc, prompt_node, chunks, executor.registry)
    second = executor.run(forced, inputs, hooks=hooks, cancel=cancel)
    if not second.ok:
        raise CounterfactualError("the forced run did not finish: "
                                  + second.trace.failure_summary(second.status))
    return Counterfactual(prompt_node, [c.chunk_id for c in chunks], _answer(result),
                          _answer(second), second,
                          attribute(second, forced, expected, registry=executor.registry))


def _answer(result: RunResult) -> Any:
    values = list(result.outputs.values())
    return next((v for v in values if isinstance(v, Answer)), values[0] if values else None)


def _text(value: Any) -> str:
    return value.text if isinstance(value, Answer) else "" if value is None else str(value)
