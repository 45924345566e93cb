"""The run report: one HTML file that loads nothing from outside, tells the question, the
answer with citations that open their passages, the steps, the evidence, the verdict and,
with expected evidence, where it was lost; written by ``modrag run --report-html``."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from modrag_nodes.llm.client import register_backend, unregister_backend
from modrag_studio.cli import main
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.evidence.attribution import attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.run.executor import Executor
from modrag_studio.reporting.answer_view import answer_value, grounding_of
from modrag_studio.reporting.page import Page, table
from modrag_studio.reporting.run_report import run_report
from tests.server.conftest import make_registry
from tests.server.openai_helpers import (
    BACKEND,
    GOOD,
    WRONG,
    StreamingScripted,
    grounded_chat_graph,
)

HOSTILE = "How often is LP-07 serviced? <img src=x onerror=alert(1)>"
LOADING = {"src", "href", "xlink:href", "action", "formaction", "poster", "srcset", "data",
           "background", "manifest", "ping"}


class Outside(HTMLParser):
    """Every attribute and tag through which a page could load or open something."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("link", "img", "iframe", "object", "embed", "base", "video", "audio",
                   "source", "form", "meta") and not (tag == "meta" and all(
                       name in ("charset", "name", "content") for name, _ in attrs)):
            self.tags.append(tag)
        self.links += [value or "" for name, value in attrs if name in LOADING]


def outside_references(page: str) -> list[str]:
    """What in ``page`` would reach beyond the file (empty for a self-contained page)."""
    parser = Outside()
    parser.feed(page)
    found = [link for link in parser.links if not link.startswith("#")] + parser.tags
    found += re.findall(r"url\s*\(|@import|(?:src|href)\s*=\s*[\"']?\s*(?:https?|file|//)",
                        page, flags=re.I)
    return found


@pytest.fixture
def graph(tmp_path):
    register_backend(BACKEND, StreamingScripted)
    yield GraphDocument.model_validate(grounded_chat_graph(tmp_path))
    unregister_backend(BACKEND)


def run(doc: GraphDocument, question: str):
    return Executor(make_registry()).run(doc, {"question": question})


def test_the_page_loads_nothing_from_outside_the_file(graph):
    page = run_report(graph, run(graph, HOSTILE), registry=make_registry()).render()
    assert outside_references(page) == []
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert outside_references('<link rel="stylesheet" href="https://cdn.example/x.css">'
                              '<p style="background:url(a.png)">') == [
        "https://cdn.example/x.css", "link", 'href="https', "url("]  # the check finds them


def test_the_answer_links_each_citation_to_its_passage(graph):
    result = run(graph, "How often is LP-07 serviced?")
    page = run_report(graph, result, registry=make_registry()).render()
    assert "LP-07 is serviced every 500 operating hours " in page
    assert '<a href="#passage-1" class="cite" title="show the passage">[1]</a>' in page
    passage = re.search(r'<details class="passage" id="passage-1">(.*?)</details>', page, re.S)
    assert passage and "The lubrication pump LP-07 is serviced every 500" in passage.group(1)
    assert '<span class="badge good">grounded</span>' in page
    assert '<li id="step-generate">' in page and 'href="#step-generate"' in page  # box -> step
    assert "<svg" in page and '<tr id="block-1" class="hit">' in page


def test_a_refusal_says_so_and_names_the_claim_no_document_states(graph):
    page = run_report(graph, run(graph, "How often is LP-07 serviced, wrongly?"),
                      registry=make_registry()).render()
    assert '<span class="badge warn">refused</span>' in page
    assert "The answer was written 2 times" in page
    assert '<tr class="lost"><td>700</td>' in page


def test_a_sentence_the_check_cut_is_shown_apart_from_the_answer(graph):
    result = run(graph, "How often is LP-07 serviced, and more?")
    verdict = grounding_of(result.trace, answer_value(result.outputs))
    assert verdict is not None and verdict.verdict == "grounded"
    assert verdict.cut == [WRONG]
    assert answer_value(result.outputs).text == GOOD
    page = run_report(graph, result, registry=make_registry()).render()
    cut = re.search(r"Cut from the model(?:'|&#x27;)s answer "
                    r"\(no evidence backs it\): “([^”]*)”", page)
    assert cut and cut.group(1) == "LP-07 is serviced every 700 operating hours [1]."


def test_where_the_evidence_was_lost_when_it_was_expected(graph):
    result = run(graph, "How often is LP-07 serviced?")
    found = attribute(result, graph, ExpectedEvidence.parse(["doc:press.md"]))
    page = run_report(graph, result, registry=make_registry(), attribution=found).render()
    assert "Where the expected evidence went" in page
    assert found.first_loss == "retrieve"
    assert '<tr class="lost"><td>retrieve</td>' in page
    assert outside_references(page) == []


def test_the_layout_serves_other_pages():
    page = Page("Scorecard", lead="three metrics")
    page.add("Metrics", table(["metric", "value"], [("nDCG@10", "0.66"), ("<b>", 1)],
                              numeric=(1,)), anchor="metrics")
    html = page.render()
    assert '<nav><a href="#metrics">Metrics</a></nav>' in html
    assert '<td class="num">0.66</td>' in html and "&lt;b&gt;" in html
    assert outside_references(html) == []


def test_modrag_run_writes_the_report(graph, tmp_path, capsys):
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(graph.model_dump(mode="json", by_alias=True)), encoding="utf-8")
    report = tmp_path / "report.html"
    code = main(["run", str(path), "--input", "question=How often is LP-07 serviced?",
                 "--report-html", str(report), "--expect", "doc:maint.md", "-q",
                 "--cache-dir", str(tmp_path / "cache")])
    assert code == 0 and f"run report written to {report}" in capsys.readouterr().err
    page = report.read_text(encoding="utf-8")
    assert "every 500 operating hours" in page and "Where the expected evidence went" in page
    folder = tmp_path / "a folder.html"
    folder.mkdir()
    assert main(["run", str(path), "--report-html", str(folder), "-q",
                 "--input", "question=LP-07?", "--cache-dir", str(tmp_path / "cache")]) == 2
    assert f"error: --report-html {folder}: cannot write the report" in \
        capsys.readouterr().err



def test_a_list_of_untyped_values_is_told_as_items():
    from modrag_studio.engine.run.trace import NodeVisit, ValueSummary
    from modrag_studio.reporting.narrate import describe_output

    visit = NodeVisit(node_id="graph", type_id="kg.search")
    assert describe_output(visit, ValueSummary(type="list[Any]", count=0)) == \
        "produced a list of 0 items"
