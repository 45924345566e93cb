"""``kg.path_text``: paths and subgraph as a compact, templated context block.

Two layouts: ``edges`` lists each distinct edge once ("A -[depends on]-> B"), ``paths``
writes every path as a chain ("Warehouse DB <-[depends on]- Inventory Service"). The block is
returned as text and as a synthetic evidence chunk placed before the text evidence, so the
prompt builder shows the graph facts first.

With ``names: question`` a Chinese question gets the facts in Chinese where the graph knows
how: each entity under its first alias written in Chinese ("英格丽·霍尔姆 -[导师]-> 陈浩"), each
relation under its label in ``relation_labels["zh"]``; a small model copies the names it reads,
so an English name in the facts becomes an English name in a Chinese answer.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.contracts import GraphPath, GraphSearchResult
from modrag_nodes.retrieval.tokenizers import Tokenizer
from modrag_nodes.text.scripts import language_of
from modrag_studio.engine.core.node import (
    Chunk,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    ScoredChunk,
)


class PathTextParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    layout: Literal["edges", "paths"] = Field("edges", description="One line per distinct edge, "
                                                                  "or one line per path")
    edge_template: str = Field("{source} -[{relation}]-> {target}",
                               description="Line template: {source}, {relation}, {target}")
    header: str = Field("Knowledge graph facts:", description="First line (empty: none)")
    max_lines: int = Field(30, ge=1, le=1000, description="Lines kept, best paths first")
    doc_id: str = Field("knowledge-graph", min_length=1,
                        description="doc_id of the synthetic evidence chunk (its citation)")
    names: Literal["canonical", "question"] = Field(
        "canonical", description="canonical: entities under their graph names; question: "
                                 "under an alias in the question's language (Chinese) when "
                                 "the graph has one, relations under relation_labels")
    relation_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict, description='Relation labels by language, for names: question '
                                          '({"zh": {"depends_on": "依赖"}})')
    order: Literal["score", "question"] = Field(
        "score", description="score: paths as the search ranked them; question: first the "
                             "paths with a relation the question names (its label or line "
                             "template shares a word with the question: 'mentor', '原因'), "
                             "then the rest, each in search order")
    relation_templates: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description='Whole-line templates of some relations by language ("en" or "zh", the '
                    "question's), for layout edges: {source} and {target} where the "
                    "language puts them, e.g. "
                    '{"zh": {"mentor_of": "{target}的导师是{source}。"}}; other relations '
                    "use edge_template")


def localised(result: GraphSearchResult, language: str,
              relation_labels: dict[str, dict[str, str]] | None = None) -> GraphSearchResult:
    """``result`` with node names and relation labels in ``language`` where known (only
    Chinese has a script to tell its aliases by); English: ``result`` unchanged."""
    if language != "zh":
        return result
    names = {}
    for node in result.nodes:
        alias = next((a for a in node.get("aliases", []) if language_of(a) == "zh"),
                     None)
        if alias:
            names[node["id"]] = alias
    own_labels = (relation_labels or {}).get(language, {})
    if not names and not own_labels:
        return result
    labels = {**result.relation_labels, **own_labels}

    def name(node: str) -> str:
        return names.get(node, node)

    paths = [path.model_copy(update={
        "start": name(path.start),
        "steps": [step.model_copy(update={"source": name(step.source),
                                          "target": name(step.target)})
                  for step in path.steps]}) for path in result.paths]
    return result.model_copy(update={"paths": paths, "relation_labels": labels})


_BIGRAMS = Tokenizer(kind="bigram")


def _cues(text: str) -> set[str]:
    """The bigram tokenizer's tokens of ``text``: its words of four letters or more, by their
    first four ("mentors" and "mentor of" meet), and its CJK character pairs."""
    cues: set[str] = set()
    for token in _BIGRAMS.tokenize(text):
        if token.isascii():
            if token.isalpha() and len(token) >= 4:
                cues.add(token[:4])
        elif len(token) == 2:
            cues.add(token)
    return cues


def question_first(result: GraphSearchResult, question: str,
                   templates: dict[str, str] | None = None) -> GraphSearchResult:
    """``result`` with the paths holding a relation the question names first (by its label,
    line template or id), the others after, each group in its search order."""
    asked = _cues(question)
    if not asked:
        return result
    templates = templates or {}

    def named(relation: str) -> bool:
        text = " ".join((_label(result, relation), relation.replace("_", " "),
                         re.sub(r"\{\w+\}", " ", templates.get(relation, ""))))
        return bool(_cues(text) & asked)

    relevant = {s.relation for path in result.paths for s in path.steps if named(s.relation)}
    if not relevant:
        return result
    first: list[GraphPath] = []
    rest: list[GraphPath] = []
    for path in result.paths:
        (first if any(s.relation in relevant for s in path.steps) else rest).append(path)
    return result.model_copy(update={"paths": first + rest})


def _label(result: GraphSearchResult, relation: str) -> str:
    return result.relation_labels.get(relation) or relation.replace("_", " ")


def _seam(label: str, target: str) -> str:
    """``label`` without its last word when ``target`` starts with it ("serviced every" before
    "every 500 operating hours": the line reads "serviced every 500 operating hours")."""
    head, _, last = label.rpartition(" ")
    if head and target.lower().startswith(last.lower() + " "):
        return head
    return label


def _edge_line(template: str, source: str, relation: str, target: str,
               where: str = "param 'edge_template'") -> str:
    relation = _seam(relation, target)
    try:
        return template.format(source=source, relation=relation, target=target)
    except (KeyError, IndexError, ValueError) as exc:
        raise NodeConfigError(f"{where}: {template!r}: {exc}") from exc


def _chain(result: GraphSearchResult, path: GraphPath) -> str:
    parts = [path.start]
    for step in path.steps:
        label = _label(result, step.relation)
        if step.forward:
            parts.append(f"-[{_seam(label, step.target)}]-> {step.target}")
        else:
            parts.append(f"<-[{label}]- {step.source}")
    return " ".join(parts)


def render_paths(result: GraphSearchResult, *, layout: str = "edges",
                 edge_template: str = "{source} -[{relation}]-> {target}",
                 header: str = "Knowledge graph facts:", max_lines: int = 30,
                 relation_templates: dict[str, str] | None = None) -> str:
    """The context block (empty string when the search found no path).

    ``relation_templates``: whole-line templates by relation id (layout edges), for a
    language whose word order the ``source relation target`` line gets wrong.
    """
    own_lines = relation_templates or {}
    lines: list[str] = []
    if layout == "paths":
        for path in result.paths:
            if path.steps and (line := _chain(result, path)) not in lines:
                lines.append(line)
    else:
        for path in result.paths:
            for step in path.steps:
                label = _label(result, step.relation)
                if step.relation in own_lines:
                    line = _edge_line(own_lines[step.relation], step.source, label,
                                      step.target,
                                      f"param 'relation_templates' ({step.relation})")
                else:
                    line = _edge_line(edge_template, step.source, label, step.target)
                if line not in lines:
                    lines.append(line)
    lines = lines[:max_lines]
    if not lines:
        return ""
    return "\n".join(([header] if header else []) + lines)


class PathText(NodeType):
    type_id = "kg.path_text"
    key_params = ("layout",)
    title = "Graph paths to text"
    category = "Knowledge graph"
    description = ("Writes the graph search's paths as compact lines "
                   "('A -[depends on]-> B') and puts them before the text evidence.")
    Params = PathTextParams
    inputs = (
        InputPort("result", GraphSearchResult, description="From kg.search"),
        InputPort("evidence", list[ScoredChunk], required=False,
                  description="Text evidence to place after the graph facts"),
    )
    outputs = (
        OutputPort("text", str, "The context block"),
        OutputPort("evidence", list[ScoredChunk], "Graph facts chunk, then the evidence"),
    )

    def run(self, ctx: NodeContext, params: PathTextParams, result: GraphSearchResult,
            evidence: list[ScoredChunk] | None = None) -> dict[str, Any]:
        language = language_of(result.question) if result.question else "en"
        if params.names == "question" and result.question:
            result = localised(result, language, params.relation_labels)
        if params.order == "question" and result.question:
            result = question_first(result, result.question,
                                    params.relation_templates.get(language))
        text = render_paths(result, layout=params.layout, edge_template=params.edge_template,
                            header=params.header, max_lines=params.max_lines,
                            relation_templates=params.relation_templates.get(language))
        items = list(evidence or [])
        if text:
            top = max((i.score for i in items if i.higher_is_better), default=1.0)
            chunk = Chunk(chunk_id=f"kg:{ctx.node_id}", doc_id=params.doc_id, text=text,
                          end=len(text), source="knowledge graph",
                          metadata={"seeds": result.seeds, "paths": len(result.paths),
                                    "derived": "knowledge graph"})
            items.insert(0, ScoredChunk(chunk=chunk, score=float(top) + 1.0, rank=0,
                                        score_kind="graph", retriever=ctx.node_id))
        lines = len(text.splitlines()) - (1 if text and params.header else 0)
        ctx.note(lines=lines, evidence=len(items))
        return {"text": text, "evidence": items}
