"""What changed between two versions of a subgraph (the update prompt's lines)."""

from __future__ import annotations

from modrag_studio.engine.core.document import GraphDocument


def _ports(doc: GraphDocument) -> tuple[set[str], set[str]]:
    boundary = doc.boundary
    if boundary is None:
        return set(), set()
    return {b.name for b in boundary.inputs}, {b.name for b in boundary.outputs}


def changes(old: GraphDocument, new: GraphDocument) -> list[str]:
    """One line per change: nodes added or removed, type and param changes, wires, ports."""
    lines: list[str] = []
    before = {n.id: n for n in old.nodes}
    after = {n.id: n for n in new.nodes}
    lines += [f"node added: {n} ({after[n].type})" for n in after if n not in before]
    lines += [f"node removed: {n} ({before[n].type})" for n in before if n not in after]
    for node_id in (n for n in after if n in before):
        a, b = before[node_id], after[node_id]
        if a.type != b.type:
            lines.append(f"{node_id}: type {a.type} -> {b.type}")
        for name in sorted(set(a.params) | set(b.params)):
            if a.params.get(name) != b.params.get(name):
                lines.append(f"{node_id}.{name}: {a.params.get(name, '(default)')!r} -> "
                             f"{b.params.get(name, '(default)')!r}")
        if a.bypass != b.bypass:
            lines.append(f"{node_id}: {'bypassed' if b.bypass else 'enabled'}")
        if a.subgraph != b.subgraph:
            lines.append(f"{node_id}: its subgraph changed")
    wires_a = {(e.source, e.target) for e in old.edges}
    wires_b = {(e.source, e.target) for e in new.edges}
    lines += [f"wire added: {s} -> {t}" for s, t in sorted(wires_b - wires_a)]
    lines += [f"wire removed: {s} -> {t}" for s, t in sorted(wires_a - wires_b)]
    (in_a, out_a), (in_b, out_b) = _ports(old), _ports(new)
    lines += [f"input added: {p}" for p in sorted(in_b - in_a)]
    lines += [f"input removed: {p} (wires to it are dropped)" for p in sorted(in_a - in_b)]
    lines += [f"output added: {p}" for p in sorted(out_b - out_a)]
    lines += [f"output removed: {p} (wires from it are dropped)" for p in sorted(out_a - out_b)]
    if not lines and old.metadata != new.metadata:
        lines.append("name or description changed")
    return lines
