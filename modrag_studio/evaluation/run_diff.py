"""One question through two variants, compared node by node.

Ranked outputs get a rank-diff table (chunks that entered or left the top, and those that
moved, by how much); answers are put side by side with their citations, time and tokens;
any other output is "same" or "changed". Each node also gets a one-line ``badge``.
"""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.datatypes import Answer, ScoredChunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.evidence.lineage import last_outputs
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import NodeVisit

TOP = 10


def rank_diff(a: list[ScoredChunk], b: list[ScoredChunk], top: int = TOP) -> dict[str, Any]:
    """Chunks entering or leaving the top ``top`` from A to B, and moves within it."""
    ranks_a = {item.chunk.chunk_id: rank for rank, item in enumerate(a[:top], 1)}
    ranks_b = {item.chunk.chunk_id: rank for rank, item in enumerate(b[:top], 1)}
    docs = {item.chunk.chunk_id: item.chunk.doc_id for item in [*a[:top], *b[:top]]}
    entered = [{"chunk_id": c, "doc_id": docs[c], "rank_b": r} for c, r in ranks_b.items()
               if c not in ranks_a]
    left = [{"chunk_id": c, "doc_id": docs[c], "rank_a": r} for c, r in ranks_a.items()
            if c not in ranks_b]
    moved = [{"chunk_id": c, "doc_id": docs[c], "rank_a": r, "rank_b": ranks_b[c],
              "up_by": r - ranks_b[c]} for c, r in ranks_a.items()
             if c in ranks_b and ranks_b[c] != r]
    moved.sort(key=lambda m: -abs(m["up_by"]))
    return {"top": top, "entered": entered, "left": left, "moved": moved,
            "unchanged": sum(1 for c, r in ranks_a.items() if ranks_b.get(c) == r)}


def _answer_side(answer: Answer, visit: NodeVisit | None) -> dict[str, Any]:
    return {"text": answer.text, "citations": [c.ref for c in answer.citations],
            "invalid_citations": answer.invalid_citations, "model": answer.model,
            "seconds": round(visit.duration_s, 3) if visit else None,
            "tokens": _tokens(visit)}


def _tokens(visit: NodeVisit | None) -> dict[str, Any]:
    if visit is None:
        return {}
    return {k: v for k, v in visit.details.items() if "token" in k}


def _outputs(result: RunResult, node_id: str) -> dict[str, Any] | None:
    return last_outputs(result).get(node_id)


def _same(x: Any, y: Any) -> bool:
    try:
        return stable_hash(_plain(x)) == stable_hash(_plain(y))
    except (TypeError, ValueError):
        return x is y


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _port_diff(x: Any, y: Any, visit_a: NodeVisit | None,
               visit_b: NodeVisit | None) -> dict[str, Any]:
    if _is_ranking(x) and _is_ranking(y):
        return {"kind": "ranking", "same": _same(x, y), **rank_diff(x, y)}
    if isinstance(x, Answer) and isinstance(y, Answer):
        return {"kind": "answer", "same": _same(x, y), "a": _answer_side(x, visit_a),
                "b": _answer_side(y, visit_b)}
    return {"kind": "value", "same": _same(x, y)}


def _is_ranking(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, ScoredChunk) for v in value)


def diff_runs(doc_a: GraphDocument, result_a: RunResult, doc_b: GraphDocument,
              result_b: RunResult) -> dict[str, dict[str, Any]]:
    """Node id -> {status, seconds a/b, cached a/b, ports: {port: diff}, badge}."""
    ids_b = set(doc_b.node_ids())
    nodes: dict[str, dict[str, Any]] = {}
    for node_id in [*doc_a.node_ids(), *(i for i in doc_b.node_ids() if i not in doc_a.node_ids())]:
        visit_a, visit_b = result_a.trace.last_visit(node_id), result_b.trace.last_visit(node_id)
        entry: dict[str, Any] = {
            "type_a": doc_a.node(node_id).type if node_id in doc_a.node_ids() else None,
            "type_b": doc_b.node(node_id).type if node_id in ids_b else None,
            "seconds": [_seconds(visit_a), _seconds(visit_b)],
            "cached": [bool(visit_a and visit_a.cached), bool(visit_b and visit_b.cached)],
            "ports": {},
        }
        out_a, out_b = _outputs(result_a, node_id), _outputs(result_b, node_id)
        if out_a is None or out_b is None:
            entry["status"] = ("only in A" if node_id not in ids_b else "only in B"
                               if node_id not in doc_a.node_ids() else "not run in both")
        else:
            for port in out_a.keys() & out_b.keys():
                entry["ports"][port] = _port_diff(out_a[port], out_b[port], visit_a, visit_b)
            entry["status"] = ("same" if all(p["same"] for p in entry["ports"].values())
                               else "changed")
        entry["badge"] = badge(entry)
        nodes[node_id] = entry
    return nodes


def _seconds(visit: NodeVisit | None) -> float | None:
    return round(visit.duration_s, 3) if visit is not None else None


def badge(entry: dict[str, Any]) -> str:
    """A short label of one node's difference: ``same``, ``+2 in -2 out 3 moved`` or
    ``answer differs``."""
    if entry["status"] != "changed":
        return entry["status"]
    for port in entry["ports"].values():
        if port["kind"] == "ranking" and not port["same"]:
            counts = ((len(port["entered"]), "+{} in"), (len(port["left"]), "-{} out"),
                      (len(port["moved"]), "{} moved"))
            parts = [form.format(n) for n, form in counts if n]
            return " ".join(parts) or "scores differ"
        if port["kind"] == "answer" and not port["same"]:
            return "answer differs"
    return "changed"


def format_run_diff(nodes: dict[str, dict[str, Any]], labels: tuple[str, str]) -> str:
    """The node-by-node diff as text: one line per node, then rank and answer tables."""
    lines = [f"A = {labels[0]}, B = {labels[1]}",
             f"{'node':<20}{'A s':>8}{'B s':>8}  difference"]
    for node_id, entry in nodes.items():
        secs = [f"{s:.3f}" if s is not None else "-" for s in entry["seconds"]]
        cached = ["c" if c else " " for c in entry["cached"]]
        lines.append(f"{node_id:<20}{secs[0]:>7}{cached[0]}{secs[1]:>7}{cached[1]}  "
                     f"{entry['badge']}")
    for node_id, entry in nodes.items():
        for port, diff in entry["ports"].items():
            if diff["same"]:
                continue
            if diff["kind"] == "ranking":
                lines.append(f"\n{node_id}.{port}: top {diff['top']}")
                lines.extend(f"  entered  {e['chunk_id']:<28} at {e['rank_b']}"
                             for e in diff["entered"])
                lines.extend(f"  left     {e['chunk_id']:<28} was {e['rank_a']}"
                             for e in diff["left"])
                lines.extend(f"  {'up' if m['up_by'] > 0 else 'down':<8} {m['chunk_id']:<28} "
                             f"{m['rank_a']} -> {m['rank_b']} ({abs(m['up_by'])})"
                             for m in diff["moved"])
            elif diff["kind"] == "answer":
                lines.append(f"\n{node_id}.{port}:")
                for side in ("a", "b"):
                    s = diff[side]
                    lines.append(f"  {side.upper()} [{', '.join(s['citations'])}] "
                                 f"{s['seconds']} s {s['tokens']}: {s['text']}")
    return "\n".join(lines)
