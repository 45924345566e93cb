"""A run told in plain words as one HTML file anyone can open: the question, the answer with
citations that open their passages, the pipeline drawn with each step's time and what it did,
the evidence with its scores, the grounding verdict and, when the expected evidence was
given, where it was lost. No server, no network: styles, script and drawing are inline.

``run_report`` builds the page from a finished run (``RunResult``); the studio's *File >
Export Run Report…* and ``modrag run --report-html FILE`` both call ``write_run_report``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Answer, ScoredChunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.formatting import duration
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.attribution import Attribution
from modrag_studio.engine.evidence.narration import narrate_node
from modrag_studio.engine.layout.titles import graph_titles
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import Trace
from modrag_studio.reporting.answer_view import (
    CitedPassage,
    GroundingVerdict,
    answer_of,
    answer_value,
    cited_passages,
    grounding_of,
    question_input,
)
from modrag_studio.reporting.narrate import story, story_steps
from modrag_studio.reporting.page import (
    Html,
    Page,
    badge,
    details,
    esc,
    join,
    paragraph,
    table,
    tag,
)
from modrag_studio.reporting.pipeline_svg import StepMark, pipeline_svg

_REF = re.compile(r"\[(\d{1,3})\]")
PREVIEW_CHARS = 320
VERDICT_WORDS = {
    "grounded": ("good", "Grounded: every number, name and identifier of the answer is "
                         "written in the evidence it cites."),
    "supported": ("good", "Supported: the check found the answer backed by the evidence."),
    "refused": ("warn", "Refused: the answers written were not backed by the documents, so "
                        "the pipeline said what no document states instead."),
    "ungrounded": ("bad", "Not grounded: the answer states something no evidence block says."),
    "unsupported": ("bad", "Not supported by the evidence."),
    "absent": ("warn", "The question asks about something no document mentions."),
}


def titles_of(doc: GraphDocument, registry: NodeRegistry) -> dict[str, str]:
    """Each node's title as the canvas draws it ("Input: question", "Vector retriever")."""
    types = {n.id: registry.get(n.type) if n.type in registry else None for n in doc.nodes}
    return graph_titles(doc, types.__getitem__)


def _question(trace: Trace, doc: GraphDocument, registry: NodeRegistry,
              answer: Answer | None) -> tuple[str, str]:
    """(the question input's name, the question) of the run ("" when it has none)."""
    ports = graph_interface(doc, registry).inputs
    name = question_input([p.name for p in ports]) or ""
    given = trace.inputs.get(name) if name else None
    default = next((p.default for p in ports if p.name == name), None)
    text = given if isinstance(given, str) else (answer.query if answer else "") or default
    return name, text or ""


def _answer_html(text: str, cited: list[CitedPassage]) -> Html:
    """The answer's text with each ``[n]`` that has a passage as a link that opens it."""
    known = {c.ref for c in cited if c.text}
    out, last = [], 0
    for match in _REF.finditer(text):
        out.append(esc(text[last:match.start()]))
        ref = match.group(1)
        out.append(tag("a", f"[{ref}]", href=f"#passage-{ref}", class_="cite",
                       title="show the passage") if ref in known else esc(match.group(0)))
        last = match.end()
    out.append(esc(text[last:]))
    return join(out)


def _passages(cited: list[CitedPassage]) -> Html:
    parts = []
    for c in cited:
        where = " — ".join(p for p in (c.source or c.doc_id, c.title) if p)
        score = f" · score {c.score:.4g}" if c.score is not None else ""
        head = f"[{c.ref}] {where}{score}" + ("" if c.valid else " (not in the evidence)")
        body = c.text or "The answer cites a block the evidence does not hold."
        parts.append(f'<details class="passage" id="passage-{esc(c.ref)}">'
                     f"{tag('summary', head)}{esc(body)}</details>")
    return Html("".join(parts))


def _grounding_html(verdict: GroundingVerdict | None) -> Html:
    if verdict is None:
        return paragraph("This pipeline has no grounding check: nothing compared the answer "
                         "with the evidence.", "muted")
    tone, words = VERDICT_WORDS.get(verdict.verdict, ("info", f"Verdict: {verdict.verdict}."))
    tries = (f" The answer was written {verdict.attempts} times: the check sent the earlier "
             "ones back." if verdict.attempts > 1 else "")
    parts = [paragraph(join([badge(verdict.verdict, tone), " ", words, tries]))]
    if verdict.reason:
        parts.append(paragraph(f"The check says: {verdict.reason}.", "muted"))
    if verdict.cut:
        said = " ".join(f"“{sentence}”" for sentence in verdict.cut)
        parts.append(paragraph(f"Cut from the model's answer (no evidence backs it): {said}",
                               "muted"))
    if verdict.claims:
        rows = [(c.get("claim", ""), c.get("kind", ""), c.get("where", c.get("verdict", "")))
                for c in verdict.claims]
        tones = ["lost" if c.get("verdict") in ("missing", "mismatch") else None
                 for c in verdict.claims]
        parts.append(table(["what the answer states", "kind", "where the evidence says it"],
                           rows, row_classes=tones))
    return join(parts)


def _sources(item: ScoredChunk) -> str:
    ranks = [f"{name} #{rank.rank}" for name, rank in item.sources.items()]
    return ", ".join(ranks) or item.retriever or "—"


def _evidence_html(answer: Answer | None, cited: list[CitedPassage]) -> Html:
    if answer is None or not answer.evidence:
        return paragraph("The answer came with no evidence blocks.", "muted")
    cited_chunks = {c.chunk_id for c in cited if c.chunk_id}
    rows, ids, tones = [], [], []
    for block, item in enumerate(answer.evidence, start=1):
        text = " ".join(item.chunk.text.split())
        shown = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
        hit = item.chunk_id in cited_chunks
        rows.append((f"[{block}]", item.chunk.source and Path(item.chunk.source).name
                     or item.doc_id, shown, f"{item.score:.4g}", item.score_kind,
                     _sources(item), "cited" if hit else ""))
        ids.append(f"block-{block}")
        tones.append("hit" if hit else None)
    return table(["block", "document", "passage", "score", "score kind", "found by", ""],
                 rows, numeric=(3,), row_ids=ids, row_classes=tones)


def _marks(trace: Trace, sentences: dict[str, str], lost: str | None) -> dict[str, StepMark]:
    marks: dict[str, StepMark] = {}
    for visit in trace.visits:
        node = visit.node_id.split("/", 1)[0]  # a subgraph's inner nodes count for it
        was = marks.get(node, StepMark())
        marks[node] = StepMark(
            status=visit.status if not was.status or visit.status != "skipped" else was.status,
            seconds=was.seconds + (visit.duration_s if visit.status == "done" else 0.0),
            tooltip=sentences.get(node, ""), visits=was.visits + 1,
            highlight="#a3261b" if node == lost else "")
    return marks


def _steps_html(trace: Trace, titles: dict[str, str], registry: NodeRegistry,
                attribution: Attribution | None) -> tuple[Html, dict[str, str]]:
    steps = story(trace, titles, registry)
    key = set(story_steps(steps, registry))
    items, seen, sentences = [], set(), {}
    for index, (visit, sentence) in enumerate(steps):
        node = visit.node_id.split("/", 1)[0]
        sentences.setdefault(node, sentence)
        anchor = f"step-{node}" if node not in seen else None
        seen.add(node)
        timing = duration(visit.duration_s) if visit.status == "done" else \
            {"cached": "reused"}.get(visit.status, visit.status)
        evidence = narrate_node(attribution, visit.node_id) if attribution else ""
        text = join([tag("strong", sentence) if index in key else sentence,
                     Html("<br>" + tag("span", evidence, class_="muted")) if evidence else ""])
        items.append(tag("li", join([tag("span", text), tag("span", timing, class_="time")]),
                         id=anchor))
    return tag("ol", join(items), class_="steps"), sentences


def _lost_html(attribution: Attribution) -> Html:
    rows = [(n.node_id, n.noun or n.kind, n.status.replace("_", " "), n.text)
            for n in attribution.nodes]
    tones = ["lost" if n.node_id == attribution.first_loss else None for n in attribution.nodes]
    expected = ", ".join(attribution.expected)
    return join([paragraph(f"Expected evidence: {expected}."),
                 paragraph(tag("strong", attribution.narration or attribution.verdict)),
                 table(["step", "what it is", "the evidence", "where"], rows,
                       row_classes=tones)])


def run_report(doc: GraphDocument, result: RunResult, *, registry: NodeRegistry | None = None,
               attribution: Attribution | None = None,
               titles: dict[str, str] | None = None) -> Page:
    """The page telling ``result`` (a run of ``doc``); ``attribution``: where the expected
    evidence went (``modrag run --expect``, the studio's evidence debugger)."""
    registry = registry or default_registry()
    titles = titles or titles_of(doc, registry)
    trace = result.trace
    answer = answer_value(result.outputs)
    cited = cited_passages(answer) if answer else []
    name, question = _question(trace, doc, registry, answer)
    when = datetime.fromtimestamp(trace.started_at, UTC).strftime("%Y-%m-%d %H:%M UTC") \
        if trace.started_at else ""
    status = {"ok": "finished", "failed": "failed", "cancelled": "was stopped"}.get(
        trace.status, trace.status)
    page = Page(title=f"How “{doc.metadata.name}” answered",
                lead=f"A run of the pipeline {doc.metadata.name}"
                     + (f" on {when}" if when else "")
                     + f": it {status} in {duration(trace.duration_s)}.",
                footer=f"ModRAG Studio run report · run {trace.run_id}")
    if question:
        page.add("The question", paragraph(question, "question"),
                 lead=f"What the pipeline was asked (its input “{name}”).", anchor="question")
    page.add("The answer", _answer_body(result, answer, cited),
             lead="Click a citation such as [1] to read the passage it points at.",
             anchor="answer")
    page.add("Is it backed by the documents?",
             _grounding_html(grounding_of(trace, answer)), anchor="grounding")
    steps, sentences = _steps_html(trace, titles, registry, attribution)
    lost = attribution.first_loss if attribution else None
    page.add("How the pipeline got there",
             join([pipeline_svg(doc, titles, _marks(trace, sentences, lost)), steps]),
             lead="Each box is a step with the time it took; click one to read what it did. "
                  "The key steps are in bold.", anchor="pipeline")
    page.add("The evidence the answer was given", _evidence_html(answer, cited),
             lead="The passages put before the language model, best first, with the "
                  "retrievers' scores; the cited ones are shaded.", anchor="evidence")
    if attribution is not None:
        page.add("Where the expected evidence went", _lost_html(attribution), anchor="lost",
                 lead="Followed step by step; the step that lost it is marked in red.")
    if doc.metadata.description:
        page.add("About this pipeline", details("What the pipeline does (its author's "
                                                "description)", paragraph(
                                                    doc.metadata.description)), anchor="about")
    return page


def _answer_body(result: RunResult, answer: Answer | None, cited: list[CitedPassage]) -> Html:
    if answer is not None:
        return join([tag("div", _answer_html(answer.text, cited), class_="answer"),
                     _passages(cited)])
    _, text = answer_of(result.outputs)
    if text is None:
        failed = result.trace.failure_summary("the run gave no answer")
        return paragraph(failed if result.status != "ok" else "The run gave no answer.",
                         "muted")
    return tag("div", text, class_="answer")


def write_run_report(path: str | Path, doc: GraphDocument, result: RunResult,
                     **options: Any) -> Path:
    """Write the report of ``result`` to ``path`` (atomically); options as ``run_report``."""
    return run_report(doc, result, **options).write(path)
