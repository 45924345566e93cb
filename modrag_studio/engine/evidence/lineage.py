"""Evidence roles: how a node type's output chunks relate to its input chunks.

A node type declares one ``evidence_role`` (a class attribute) and the evidence debugger
(``engine.attribution``) follows the expected evidence through the run with it; a node type
that declares nothing is not shown. The kinds:

- ``source``: makes documents (loaders). ``splits``: documents in, chunks out (splitters).
- ``indexes``: chunks in, an index out (BM25, vector stores): what came in is indexed.
- ``retrieves``: searches an index and returns a ranking cut at ``top_param``.
- ``merges``: several rankings in, one out (fusion); ``ScoredChunk.sources`` keeps the ranks.
- ``reorders``: one ranking in, the same chunks re-scored and cut at ``top_param`` (rerankers).

A node that cuts a ranking (``retrieves``, ``merges``, ``reorders``) may name an ``uncut_port``:
an output holding the whole ranking before the cut as an ``UncutRanking``, so a loss can say
where the evidence went ("dropped, was #5, now #11 (top_n 8)"). That port is not one of the
node's evidence outputs, and being no ``list[ScoredChunk]`` it is not scored, compared or
shown as one of the node's rankings either.
- ``filters``: keeps a subset in order; ``dropped_port`` names where rejected chunks go (graders).
  ``judges=False``: a rule cuts, not a relevance judgement (the evidence focus, which also
  cuts a kept chunk's text: a phrase it cut out is lost there).
- ``gate``: passes the evidence on or fires ``stop_port`` instead (guards).
- ``prompt``: builds a ``Prompt`` whose evidence blocks are numbered; ``Prompt.dropped``
  lists what the token budget squeezed out.
- ``passes``: carries its input on unchanged (answer selection, outputs, generation).
- ``cites``: an ``Answer`` whose citations say which evidence was used (output parsers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.core.datatypes import Chunk, Contract, ScoredChunk
from modrag_studio.engine.evidence.expected import iter_chunks

if TYPE_CHECKING:
    from modrag_studio.engine.core.document import GraphDocument
    from modrag_studio.engine.core.node import NodeType
    from modrag_studio.engine.core.registry import NodeRegistry
    from modrag_studio.engine.run.executor import RunResult

RoleKind = Literal["source", "splits", "indexes", "retrieves", "merges", "reorders", "filters",
                   "gate", "prompt", "passes", "cites"]
ROLE_KINDS: tuple[str, ...] = RoleKind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class EvidenceRole:
    """How one node type's output chunks relate to its input chunks.

    ``inputs`` / ``outputs`` name the ports that carry evidence (empty: all of them);
    ``top_param`` is the param that cuts the output ranking (``top_k``, ``top_n``);
    ``uncut_port`` the output with the whole ranking before that cut (optional); ``noun``
    what the node is in plain words for narration ("keyword search"; default by kind);
    ``judges`` whether a ``filters`` node judges relevance (a grader) or cuts by a rule;
    ``checks_answer`` whether a ``passes`` node checks an answer against its evidence and
    routes an unsupported one away (a grounding or support check; see ``safety``);
    ``pins`` whether a ``passes`` node puts the chunks of its ``chunks`` param first in its
    ``evidence`` (on its ``results``): what a counterfactual run forces into the prompt with.
    """

    kind: RoleKind
    top_param: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    dropped_port: str | None = None
    stop_port: str | None = None
    uncut_port: str | None = None
    noun: str = ""
    judges: bool = True
    checks_answer: bool = False
    pins: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ROLE_KINDS:
            raise ValueError(
                f"evidence role kind {self.kind!r}: use one of {', '.join(ROLE_KINDS)}")

    def in_ports(self, node_type: type[NodeType]) -> list[str]:
        return list(self.inputs) or [p.name for p in node_type.inputs]

    def out_ports(self, node_type: type[NodeType]) -> list[str]:
        return list(self.outputs) or [p.name for p in node_type.outputs
                                      if p.name != self.uncut_port]


class UncutRanking(Contract):
    """A node's whole ranking before its cut; ``items[:cut]`` is what it passed on."""

    items: list[ScoredChunk]
    cut: int = 0

    def preview(self) -> str:
        return f"{len(self.items)} ranked before the cut at {self.cut}"


def role_of(node_type: type[Any]) -> EvidenceRole | None:
    """The evidence role a node type declares (None: it declares nothing)."""
    role = getattr(node_type, "evidence_role", None)
    return role if isinstance(role, EvidenceRole) else None


@dataclass(frozen=True)
class Appearance:
    """A chunk seen in one node's output: the port, 1-based position and the rank it carries."""

    node_id: str
    port: str
    position: int
    rank: int
    count: int

    def describe(self) -> str:
        return f"#{self.position} of {self.count}"


def registry_of(result: RunResult, registry: NodeRegistry | None = None) -> NodeRegistry:
    """``registry`` if given, else the registry the run was made with."""
    registry = registry or result.registry
    if registry is None:
        raise ValueError("this run result names no registry: pass the one it ran with")
    return registry


def last_outputs(result: RunResult) -> dict[str, dict[str, Any]]:
    """Each node's outputs of its last visit."""
    return _last_visit(result.node_outputs)


def last_inputs(result: RunResult) -> dict[str, dict[str, Any]]:
    """Each node's inputs of its last visit."""
    return _last_visit(result.node_inputs)


def _last_visit(values: dict[tuple[str, int], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    for (node_id, iteration), value in values.items():
        if node_id not in latest or iteration >= latest[node_id][0]:
            latest[node_id] = (iteration, value)
    return {node_id: value for node_id, (_, value) in latest.items()}


def chunk_lineage(result: RunResult, doc: GraphDocument, chunk_id: str,
                  registry: NodeRegistry | None = None) -> list[Appearance]:
    """Every declared node whose output holds ``chunk_id``, with its position there."""
    doc = expand(doc).doc
    registry = registry_of(result, registry)
    found: list[Appearance] = []
    outputs = last_outputs(result)
    for node in doc.nodes:
        if node.type not in registry or node.id not in outputs:
            continue
        node_type = registry.get(node.type)
        role = role_of(node_type)
        if role is None or role.kind == "indexes":
            continue
        for port in role.out_ports(node_type):
            value = outputs[node.id].get(port)
            entries = list(_chunks(value))
            for position, (chunk, scored) in enumerate(entries, start=1):
                if chunk.chunk_id == chunk_id:
                    rank = scored.rank if scored is not None and scored.rank else position
                    found.append(Appearance(node.id, port, position, rank, len(entries)))
                    break
    return found


def _chunks(value: Any) -> Iterator[tuple[Chunk, ScoredChunk | None]]:
    if value is None:
        return iter(())
    return iter_chunks(value)


# citations <-> chunks ---------------------------------------------------------------------

@dataclass(frozen=True)
class Place:
    """Where a chunk sits: a node's output port and its 1-based row there."""

    node_id: str
    port: str
    row: int


@dataclass(frozen=True)
class CitedAt:
    """A citation of a chunk in an answer: the node, its port, the citation's index and ref."""

    node_id: str
    port: str
    index: int
    ref: str


def prompt_block_source(result: RunResult, doc: GraphDocument, chunk_id: str,
                        registry: NodeRegistry | None = None) -> Place | None:
    """The output that fed ``chunk_id`` into a prompt block: found through the declared
    ``prompt`` nodes' evidence inputs (None when no prompt holds the chunk)."""
    doc = expand(doc).doc
    from modrag_studio.engine.core.datatypes import Prompt
    from modrag_studio.engine.core.topology import Topology

    registry = registry_of(result, registry)
    outputs = last_outputs(result)
    incoming = Topology.of(doc).incoming
    for node in doc.nodes:
        role = role_of(registry.get(node.type)) if node.type in registry else None
        if role is None or role.kind != "prompt":
            continue
        prompts = [v for v in outputs.get(node.id, {}).values() if isinstance(v, Prompt)]
        if not any(item.chunk_id == chunk_id for p in prompts for item in p.evidence):
            continue
        for edge in incoming.get(node.id, []):
            if role.inputs and edge.target_port not in role.inputs:
                continue
            value = outputs.get(edge.source_node, {}).get(edge.source_port)
            for row, (chunk, _) in enumerate(_chunks(value), start=1):
                if chunk.chunk_id == chunk_id:
                    return Place(edge.source_node, edge.source_port, row)
    return None


def citations_of(result: RunResult, doc: GraphDocument, chunk: Chunk,
                 registry: NodeRegistry | None = None) -> list[CitedAt]:
    """Every citation of ``chunk`` in the answers of the declared ``cites`` nodes (a citation
    without a chunk id cites the chunk's document)."""
    doc = expand(doc).doc
    from modrag_studio.engine.core.datatypes import Answer
    registry = registry_of(result, registry)
    outputs = last_outputs(result)
    found: list[CitedAt] = []
    for node in doc.nodes:
        role = role_of(registry.get(node.type)) if node.type in registry else None
        if role is None or role.kind != "cites":
            continue
        for port, value in outputs.get(node.id, {}).items():
            if not isinstance(value, Answer):
                continue
            for index, cite in enumerate(value.citations):
                if cite.chunk_id == chunk.chunk_id or (
                        cite.chunk_id is None and cite.doc_id == chunk.doc_id):
                    found.append(CitedAt(node.id, port, index, cite.ref))
    return found
