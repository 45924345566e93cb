"""The evidence attribution in plain words, for a stakeholder (presentation mode).

``narrate`` tells the whole path in one sentence ("The right passage was found by keyword
search (bm25) at position 2, but the reranker (rerank) moved it from position 2 to 11, below
the cut of 8."); ``narrate_node`` what one node did with it.
"""

from __future__ import annotations

from modrag_studio.engine.evidence.standing import Attribution, NodeEvidence

LOST_HERE = "This is where it was lost."  # ends the first-loss node's narration

NOUNS = {"source": "the loader", "splits": "the splitter", "indexes": "the index",
          "retrieves": "the search", "merges": "merging the searches", "reorders": "the reranker",
          "filters": "the grader", "gate": "the evidence check", "prompt": "the prompt",
          "passes": "this step", "cites": "the answer"}


def _named(node: NodeEvidence) -> str:
    """The node in plain words with its id, for a reader who also sees the canvas."""
    noun = node.noun or NOUNS.get(node.kind, node.node_id)
    return noun if node.node_id in noun.split() else f"{noun} ({node.node_id})"


def _below(node: NodeEvidence) -> str:
    if node.was is not None and node.now is not None:
        cut = f", below the cut of {node.limit}" if node.limit else ", below the cut"
        return f"moved it from position {node.was} to {node.now}{cut}"
    if node.now is not None:
        cut = f" of {node.limit}" if node.limit else ""
        return f"put it at position {node.now}, below the cut{cut}"
    return "moved it below the cut"


def _loss_reason(loss: NodeEvidence) -> str:
    """Why ``loss`` lost the evidence, as the end of a plain sentence."""
    name = _named(loss)
    match loss.kind:
        case "source":
            return f"{name} never read the document that holds it"
        case "splits":
            return f"{name} cut it out of every chunk"
        case "indexes":
            return "it never reached the index"
        case "retrieves":
            return f"{name} did not find it among its top results (it keeps {loss.count})"
        case "merges" | "reorders":
            return f"{name} {_below(loss)}"
        case "filters":
            return (f"{name} cut it out" if loss.short == "cut out"
                    else f"{name} judged it not relevant")
        case "gate":
            return f"{name} stopped before answering"
        case "prompt":
            return (f"{name} had no room left for it" if "budget" in loss.short
                    else f"{name} left it out")
        case "cites":
            return "the model, given it in the prompt, did not cite it"
    return f"{name} did not pass it on"


def narrate(attribution: Attribution) -> str:
    """The verdict in plain words for a stakeholder (presentation mode)."""
    if not attribution.expected or not attribution.nodes:
        return ""
    loss = attribution.node(attribution.first_loss) if attribution.first_loss else None
    found = [n for n in attribution.nodes if n.reached and n.kind in ("retrieves", "merges")]
    where = (f"The right passage was found by {_named(found[0])} at position "
             f"{found[0].positions[0]}" if found and found[0].positions else "")
    if loss is None:
        cited = [n for n in attribution.nodes if n.kind == "cites" and n.reached]
        tail = " and the answer cites it." if cited else " and it reaches the end of the pipeline."
        return (where or "The right passage was found") + tail
    reason = _loss_reason(loss)
    if where and loss.kind != "retrieves":
        return f"{where}, but {reason}."
    return f"{reason[0].upper()}{reason[1:]}."


def narrate_node(attribution: Attribution, node_id: str) -> str:
    """One plain sentence on what ``node_id`` did with the right passage ("" if it declares
    nothing); presentation mode shows it under the step's own sentence."""
    node = attribution.node(node_id)
    if node is None or not attribution.expected:
        return ""
    name = _named(node)
    name = name[0].upper() + name[1:]
    first = f" {LOST_HERE}" if node_id == attribution.first_loss else ""
    if node.status == "never_reached":
        return f"The right passage never reached {_named(node)}."
    if node.status == "lost":
        reason = _loss_reason(node)
        return f"{reason[0].upper()}{reason[1:]}.{first}"
    at = f"position {node.positions[0]} of {node.count}" if node.positions else ""
    match node.kind:
        case "source":
            return f"{name} read the document that holds the right passage."
        case "splits":
            return f"{name} kept the right passage ({node.text})."
        case "indexes":
            return f"{name} holds the right passage."
        case "retrieves" | "merges" | "passes" | "gate":
            return f"{name} has the right passage at {at}."
        case "reorders":
            was = f" (it was {node.was})" if node.was is not None else ""
            return f"{name} put the right passage at {at}{was}."
        case "filters":
            return (f"{name} kept the right passage." if "judged" not in node.text
                    else f"{name} judged the right passage relevant.")
        case "prompt":
            return f"The right passage is {node.short} of the prompt."
        case "cites":
            return f"The answer cites the right passage as {node.short.removeprefix('cited ')}."
    return f"{name} passed the right passage on."
