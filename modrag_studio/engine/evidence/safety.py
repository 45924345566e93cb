"""Whether a graph's answers pass a check before they are shown, and the edit that adds one.

A model's answer (the output of a node whose evidence role is ``cites``: the answer parser)
that reaches a graph output through no node declaring ``EvidenceRole(checks_answer=True)``
is shown as the model wrote it, however wrong: ``unchecked_answers`` warns about it
(``unchecked-answer``, on the parser), and ``make_safe`` inserts a check, a refusal and a
selector between the answer and the node it fed, plus one retry of the prompt with the
check's reason when the prompt takes a sent-back answer. The node types come from a
``SafetyRecipe`` the application gives (the engine names no node type).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from modrag_studio.engine.core.document import EdgeSpec, GraphDocument, LoopSpec, NodeSpec
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.evidence.lineage import role_of

UNCHECKED = "unchecked-answer"


@dataclass(frozen=True)
class SafetyRecipe:
    """The node types (and their ports) ``make_safe`` inserts."""

    check: str                      # routes a supported answer to ``passed``, else ``failed``
    refuse: str                     # turns a failed answer into a refusal naming what lacks
    select: str                     # the first answer that arrives, primary before fallback
    passed: str = "grounded"
    failed: tuple[str, ...] = ("ungrounded", "absent")
    check_query: str = "query"
    primary: str = "primary"
    fallback: str = "fallback"
    answer: str = "answer"          # the answer port of check, refuse and select
    feedback: str = "feedback"      # the prompt's input for a sent-back answer
    retries: int = 1


def _type(doc: GraphDocument, node_id: str, registry: NodeRegistry):
    spec = doc.node(node_id)
    return registry.get(spec.type) if spec.type in registry else None


def _is(kind: str, node_type) -> bool:
    role = role_of(node_type) if node_type is not None else None
    return role is not None and role.kind == kind


def _checks(node_type) -> bool:
    role = role_of(node_type) if node_type is not None else None
    return role is not None and role.checks_answer


def _unchecked_path(doc: GraphDocument, start: str, registry: NodeRegistry) -> list[str]:
    """A path from ``start`` to a graph output through no checking node ([] when none)."""
    forward: dict[str, list[str]] = {}
    for edge in doc.edges:
        if edge.loop is None:
            forward.setdefault(edge.source_node, []).append(edge.target_node)
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        node_type = _type(doc, node, registry)
        if node != start and _checks(node_type):
            continue
        if node != start and node_type is not None and node_type.graph_role == "output":
            path = [node]
            while path[-1] != start:
                path.append(came[path[-1]])
            return path[::-1]
        for nxt in forward.get(node, []):
            if nxt not in came and nxt != start:
                came[nxt] = node
                queue.append(nxt)
    return []


def unchecked_answers(doc: GraphDocument, registry: NodeRegistry) -> list[Problem]:
    """A warning on each answer parser whose answer reaches an output unchecked."""
    problems = []
    for spec in doc.nodes:
        if not _is("cites", _type(doc, spec.id, registry)):
            continue
        path = _unchecked_path(doc, spec.id, registry)
        if path:
            problems.append(Problem(
                UNCHECKED,
                f"the answer reaches the output '{path[-1]}' with no grounding check: a "
                "wrong answer is shown as it is, and nothing refuses a question the "
                "documents do not answer (Edit > Make Answers Safe adds a grounding "
                "check and a refusal)",
                node_id=spec.id, severity="warning"))
    return problems


def _new_id(doc: GraphDocument, base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _feeder(doc: GraphDocument, node_id: str, port: str) -> str | None:
    return next((e.source for e in doc.edges
                 if e.target_node == node_id and e.target_port == port and e.loop is None), None)


def make_safe(doc: GraphDocument, registry: NodeRegistry,
              recipe: SafetyRecipe) -> GraphDocument:
    """``doc`` with a check, a refusal and a selector after each unchecked answer parser
    (``unchecked_answers``); the same document when there is none."""
    taken = {n.id for n in doc.nodes}
    nodes, edges = list(doc.nodes), list(doc.edges)
    layout = doc.layout.model_copy(deep=True) if doc.layout is not None else None
    for problem in unchecked_answers(doc, registry):
        parser = problem.node_id or ""
        outgoing = [e for e in edges if e.source_node == parser and e.loop is None]
        if not outgoing:
            continue
        ground = _new_id(doc, "ground", taken)
        refuse = _new_id(doc, "refuse", taken)
        select = _new_id(doc, "select", taken)
        nodes += [NodeSpec(id=ground, type=recipe.check), NodeSpec(id=refuse, type=recipe.refuse),
                  NodeSpec(id=select, type=recipe.select)]
        source_port = outgoing[0].source_port
        edges = [e for e in edges if e not in outgoing]
        wired = [(f"{parser}.{source_port}", f"{ground}.{recipe.answer}"),
                 (f"{ground}.{recipe.passed}", f"{select}.{recipe.primary}"),
                 *((f"{ground}.{port}", f"{refuse}.{recipe.answer}") for port in recipe.failed),
                 (f"{refuse}.{recipe.answer}", f"{select}.{recipe.fallback}")]
        wired += [(f"{select}.{recipe.answer}", e.target) for e in outgoing
                  if e.source_port == source_port]
        edges += [e for e in outgoing if e.source_port != source_port]
        prompt = _feeder(doc, parser, "prompt")
        prompt_node = prompt.split(".", 1)[0] if prompt else None
        question = _feeder(doc, prompt_node, "query") if prompt_node else None
        if question:
            wired.append((question, f"{ground}.{recipe.check_query}"))
        edges += [EdgeSpec.model_validate({"from": a, "to": b}) for a, b in wired]
        prompt_type = _type(doc, prompt_node, registry) if prompt_node else None
        if prompt_type is not None and any(p.name == recipe.feedback for p in prompt_type.inputs) \
                and _feeder(doc, prompt_node, recipe.feedback) is None:
            edges.append(EdgeSpec.model_validate({
                "from": f"{ground}.{recipe.failed[0]}", "to": f"{prompt_node}.{recipe.feedback}",
                "loop": LoopSpec(max_iterations=recipe.retries).model_dump()}))
        if layout is not None and parser in layout.nodes:
            at = layout.nodes[parser]
            for step, node_id in enumerate((ground, refuse, select), start=1):
                layout.nodes[node_id] = at.model_copy(update={
                    "x": at.x + 60.0 * step, "y": at.y + 160.0 + 20.0 * step})
    if len(nodes) == len(doc.nodes):
        return doc
    return doc.model_copy(update={"nodes": nodes, "edges": edges, "layout": layout})
