"""Where the expected evidence stands in one run: at each node (``NodeEvidence``) and along
the whole path, with the first node that lost it (``Attribution``). ``attribution.attribute``
works it out; ``narration`` tells it in plain words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["reached", "lost", "never_reached"]


@dataclass
class NodeEvidence:
    """Where the expected evidence stands at one node."""

    node_id: str
    type_id: str
    kind: str
    arrived: bool
    reached: bool
    text: str
    short: str = ""
    positions: list[int] = field(default_factory=list)
    count: int = 0
    clause: str = ""          # the loss as the verdict says it ("#11 after rerank, top_n is 8")
    was: int | None = None    # position in the input ranking
    now: int | None = None    # position in the whole ranking before the cut (``uncut_port``)
    limit: str = ""           # the cut's value ("8")
    noun: str = ""            # what the node is in plain words ("the reranker")

    @property
    def status(self) -> Status:
        return "reached" if self.reached else "lost" if self.arrived else "never_reached"

    def to_dict(self) -> dict[str, Any]:
        data = {"node": self.node_id, "type": self.type_id, "kind": self.kind,
                "status": self.status, "text": self.text, "positions": self.positions,
                "count": self.count}
        if self.now is not None:
            data["before_cut"] = self.now
        return data


@dataclass
class Attribution:
    """The evidence's path through one run, the first node that lost it, and a verdict."""

    expected: list[str]
    nodes: list[NodeEvidence]
    resolutions: list[str] = field(default_factory=list)
    first_loss: str | None = None
    verdict: str = ""
    generator: str = ""  # the node that wrote the answer from the prompt, when one ran
    narration: str = ""  # the verdict in plain words, for presentation mode (``narrate``)

    def node(self, node_id: str) -> NodeEvidence | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"expected": self.expected, "resolutions": self.resolutions,
                "first_loss": self.first_loss, "verdict": self.verdict,
                "nodes": [n.to_dict() for n in self.nodes]}

    def table(self) -> str:
        """The per-node table for terminals."""
        lines = [f"{'node':<20} {'kind':<10} {'status':<14} where"]
        for n in self.nodes:
            mark = "  <- first loss" if n.node_id == self.first_loss else ""
            lines.append(f"{n.node_id:<20} {n.kind:<10} {n.status:<14} {n.text}{mark}")
        lines.extend(f"  {r}" for r in self.resolutions)
        lines.append(self.verdict)
        return "\n".join(lines)
