"""Rule extraction, tolerant parsing of model replies, and the LLM extractor with a fake model."""

from __future__ import annotations

import pytest

from modrag_nodes.kg.extract_llm import (
    LLMExtractParams,
    extract_with_llm,
    parse_extraction,
    parse_llm_json,
)
from modrag_nodes.kg.extract_rules import DictEntity, RuleExtractor, RuleParams, build_extractor
from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_studio.engine.core.datatypes import Chunk

from .conftest import DICTIONARY, corpus_chunks, topology_questions


def _triples(extractor: RuleExtractor, text: str) -> set[tuple[str, str, str]]:
    _, relations = extractor.extract(Chunk(chunk_id="c", doc_id="d", text=text))
    return {(r.source, r.relation, r.target) for r in relations}


@pytest.fixture(scope="module")
def rules() -> RuleExtractor:
    return build_extractor(RuleParams(dictionary=str(DICTIONARY)))[0]


def test_enumerated_objects_and_relative_clause(rules: RuleExtractor) -> None:
    found = _triples(rules, "The Order Service depends on the Inventory Service and the "
                            "Payment Gateway, which depends on the Warehouse DB.")
    assert found == {("Order Service", "depends_on", "Inventory Service"),
                     ("Order Service", "depends_on", "Payment Gateway"),
                     ("Payment Gateway", "depends_on", "Warehouse DB")}


def test_chinese_clauses_and_reverse_trigger(rules: RuleExtractor) -> None:
    found = _triples(rules, "王芳负责 CNC-A01，卢卡斯·伯格负责液压机 PR-300。李娜的导师是王芳。")
    assert found == {("Wang Fang", "responsible_for", "CNC-A01"),
                     ("Lukas Berg", "responsible_for", "PR-300"),
                     ("Wang Fang", "mentor_of", "Li Na")}


def test_clause_after_comma_is_not_an_object(rules: RuleExtractor) -> None:
    found = _triples(rules, "陈浩负责订单服务，他为仓储数据库增加了告警。")
    assert found == {("Chen Hao", "responsible_for", "Order Service")}


def test_identifiers_intervals_and_full_width(rules: RuleExtractor) -> None:
    entities, relations = rules.extract(Chunk(
        chunk_id="c1", doc_id="d",
        text="冷却泵 ＣＰ－１２ 的保养周期为每三个月。Contract HT-2031-0007 covers part ZX-99."))
    names = {e.name: e.type for e in entities}
    assert names["CP-12"] == "Pump"
    assert names["every 3 months"] == "Interval"
    assert names["HT-2031-0007"] == "Contract"
    assert names["ZX-99"] == "Identifier"
    assert ("CP-12", "serviced_every", "every 3 months") in {
        (r.source, r.relation, r.target) for r in relations}
    assert all(e.chunk_ids == ["c1"] for e in entities)


def test_dictionary_free_extraction_uses_default_triggers() -> None:
    extractor, _ = build_extractor(RuleParams(entities=[
        DictEntity(name="Billing", type="Service"), DictEntity(name="Ledger DB")]))
    assert _triples(extractor, "Billing relies on Ledger DB.") == {
        ("Billing", "depends_on", "Ledger DB")}


def test_demo_corpus_yields_every_expected_edge(rules: RuleExtractor) -> None:
    found: set[tuple[str, str, str]] = set()
    for chunk in corpus_chunks():
        _, relations = rules.extract(chunk)
        found |= {(r.source, r.relation, r.target) for r in relations}
    expected = {tuple(t) for q in topology_questions() for t in q["expected_path"]}
    assert expected - found == set()


@pytest.mark.parametrize("reply", [
    '```json\n{"entities": [{"name": "A", "type": "Service"},],\n'
    ' "relations": [{"source": "A", "relation": "depends on", "target": "B"},]}\n```',
    "Sure! {'entities': [{'name': 'A', 'type': 'Service'}], "
    "'relations': [['A', 'depends on', 'B']]} Hope this helps.",
    '{entities: [{name: "A", type: "Service"}], relations: [{subject: "A", '
    'predicate: "depends on", object: "B"}], done: True}',
    '{"entities": [{"name": "A", "type": "Service"}], "relations": [{"source": "A", '
    '"relation": "depends on", "target": "B"}, {"source": "B", "relat',
])
def test_messy_replies_parse(reply: str) -> None:
    entities, relations, _ = parse_extraction(reply)
    assert [(e.name, e.type) for e in entities] == [("A", "Service")]
    assert [(r.source, r.relation, r.target) for r in relations] == [("A", "depends on", "B")]


def test_invalid_items_are_counted_not_fatal() -> None:
    entities, relations, invalid = parse_extraction(
        '{"entities": [{"name": ""}, {"name": "B"}], "relations": [{"source": "B"}]}')
    assert [e.name for e in entities] == ["B"] and relations == [] and invalid == 2


def test_no_json_raises() -> None:
    with pytest.raises(ValueError):
        parse_llm_json("I cannot find any entities.")


def test_strings_with_colons_and_urls_survive() -> None:
    assert parse_llm_json('{"a": "http://x.y/z, b: c"}') == {"a": "http://x.y/z, b: c"}


class FakeKGModel:
    """Deterministic test backend: answers with messy JSON naming two services."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        self.calls += 1
        text = messages[-1].content
        if "Alpha" not in text:
            return ChatResult(text="nothing here", model="fake")
        return ChatResult(text="```json\n{'entities': [{'name': 'Alpha', 'type': 'Service'}, "
                               "{'name': 'Beta', 'type': 'Service'},], 'relations': "
                               "[{'source': 'Alpha', 'relation': 'Depends On', "
                               "'target': 'Beta'},]}\n```", model="fake")


@pytest.fixture
def fake_model():
    model = FakeKGModel()
    register_backend("fake-kg", lambda: model)
    yield model
    unregister_backend("fake-kg")


def test_llm_extractor_with_fake_backend(fake_model: FakeKGModel, tmp_path) -> None:
    from modrag_studio.engine.core.node import CancelToken, NodeContext

    ctx = NodeContext(node_id="x", type_id="kg.extract_llm", iteration=0, cancel=CancelToken(),
                      on_progress=lambda *_: None, on_stream=lambda _: None,
                      logger=__import__("logging").getLogger("t"), work_dir=tmp_path,
                      run_inputs={})
    chunks = [Chunk(chunk_id="c1", doc_id="d", text="Alpha depends on Beta."),
              Chunk(chunk_id="c2", doc_id="d", text="Nothing to see.")]
    spec = LLMSpec(backend="fake-kg")
    result, stats = extract_with_llm(chunks, spec, LLMExtractParams(), ctx)
    assert {(r.source, r.relation, r.target) for r in result.relations} == {
        ("Alpha", "depends_on", "Beta")}
    assert result.relation_labels["depends_on"] == "depends on"
    assert {e.name for e in result.entities} == {"Alpha", "Beta"}
    assert all(e.chunk_ids == ["c1"] for e in result.entities)
    assert stats["failed"] == 1 and set(result.chunk_hashes) == {"c1", "c2"}
    calls = fake_model.calls
    again, stats = extract_with_llm(chunks, spec, LLMExtractParams(), ctx)
    assert fake_model.calls == calls and stats["cached"] == 2
    assert again.relations == result.relations
