"""``modrag scorecard`` end to end: questions generated from a tiny folder (the canned
question writer of the generation tests), answered by the packaged SmolLM2, one
self-contained page written with every section, the set beside it; and a set given with
``--evalset`` whose significant change ``--save-variant`` stores in the graph file."""

from __future__ import annotations

import json
import re

import pytest

from modrag_studio import cli
from modrag_studio.engine.core.document import load
from tests.evaluation.scorecard_helpers import write_graph, write_two_document_set
from tests.evaluation.test_evalset_generate import BACKEND, canned  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow
SECTIONS = ("figures", "funnel", "worst", "change", "checks")


@pytest.fixture(autouse=True)
def _smollm2():
    pytest.importorskip("modrag_nodes.llm.embedded").packaged_gguf()


def _self_contained(page: str) -> bool:
    return not re.search(r"(src|href)=\"(?!#)|url\(|@import|https?://", page)


def test_the_scorecard_of_a_folder_is_one_page_with_every_section(tmp_path, canned, capsys):  # noqa: F811
    graph = write_graph(tmp_path)
    out = tmp_path / "card.html"
    code = cli.main(["scorecard", str(graph), "--input", f"corpus={tmp_path / 'corpus'}",
                     "--questions", "5", "--model", f"{BACKEND}:canned-1", "--out", str(out),
                     "--json", str(tmp_path / "card.json"), "--quiet"])
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert _self_contained(page)
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in page
    data = json.loads((tmp_path / "card.json").read_text(encoding="utf-8"))
    questions = (tmp_path / "card.questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert data["generation"]["questions"] == len(questions) == 5
    head = data["headline"]
    assert head["answerable"] + head["unanswerable"] == 5
    assert f"{head['facts_right']}/{head['answerable']}" in page
    assert data["suggestion"]["status"] == "not tested"  # too few questions to test a change
    assert "No change found significant" in page
    printed = capsys.readouterr().out
    assert "facts right:" in printed and f"wrote {out}" in printed


def test_a_significant_change_is_saved_as_a_variant_of_the_graph(tmp_path):
    graph = write_graph(tmp_path)
    evalset = write_two_document_set(tmp_path / "set.jsonl")
    out = tmp_path / "card.html"
    code = cli.main(["scorecard", str(graph), "--input", f"corpus={tmp_path / 'corpus'}",
                     "--evalset", str(evalset), "--out", str(out), "--save-variant",
                     "--quiet"])
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert "Change retrieve.top_k = 2" in page and _self_contained(page)
    variants = load(graph).variants
    assert [v.name for v in variants] == ["scorecard"]
    assert variants[0].params == {"retrieve": {"top_k": 2}}
    assert not (tmp_path / "card.questions.jsonl").exists()  # the given set is used as it is
