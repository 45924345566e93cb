"""``evidence.pin``: puts given chunks at the top of a ranking (the "force into the prompt" probe).

The evidence debugger wires it in front of the prompt builder to ask "would the model have
answered right with the right passage in its prompt?" without touching the rest of the graph.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.node import InputPort, NodeContext, NodeType, OutputPort, ScoredChunk
from modrag_studio.engine.evidence.lineage import EvidenceRole


class PinParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    chunks: list[ScoredChunk] = Field(
        default_factory=list, description="Chunks to put first (scored-chunk JSON)")


class PinEvidence(NodeType):
    type_id = "evidence.pin"
    evidence_role = EvidenceRole("passes", pins=True)
    title = "Pin evidence"
    category = "Debug"
    description = ("Puts the given chunks first in the ranking (removing their other copies), "
                   "scored just above the best, so a prompt budget keeps them.")
    Params = PinParams
    inputs = (InputPort("evidence", list[ScoredChunk], required=False,
                        description="The ranking to pin the chunks into"),)
    outputs = (OutputPort("results", list[ScoredChunk], "Pinned chunks first, then the rest"),)

    def run(self, ctx: NodeContext, params: PinParams,
            evidence: list[ScoredChunk] | None = None) -> dict[str, Any]:
        rest = list(evidence or [])
        pinned_ids = {c.chunk_id for c in params.chunks}
        higher = rest[0].higher_is_better if rest else True
        scores = [c.score for c in rest] or [0.0]
        top = (max(scores) + 1.0) if higher else (min(scores) - 1.0)
        kind = rest[0].score_kind if rest else "similarity"
        pinned = [c.model_copy(update={"score": top, "higher_is_better": higher,
                                       "score_kind": kind, "retriever": "pinned"})
                  for c in params.chunks]
        ranked = pinned + [c for c in rest if c.chunk_id not in pinned_ids]
        for rank, item in enumerate(ranked, start=1):
            item.rank = rank
        ctx.note(pinned=[c.chunk_id for c in pinned])
        return {"results": ranked}
