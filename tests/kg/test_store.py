"""Alias merging, persistence, incremental update and degree statistics of the graph store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_nodes.kg.aliases import AliasTable, initials, normalize
from modrag_nodes.kg.build import build_graph
from modrag_nodes.kg.contracts import Entity, GraphExtraction, Relation
from modrag_nodes.kg.extract_rules import RuleParams, build_extractor, extract_all
from modrag_nodes.kg.store import KGStore, load_store
from modrag_studio.engine.core.datatypes import Chunk

from .conftest import DICTIONARY


def test_normalize_folds_case_width_and_separators() -> None:
    assert normalize("ＣＮＣ－Ａ０１") == normalize("cnc a01") == normalize("CNC-A01")
    assert normalize("The Order-Service") == normalize("order service")
    assert normalize("托马斯·雷耶斯") == normalize("托马斯雷耶斯")
    assert initials("Norvale Precision Manufacturing") == "NPM"
    assert initials("Order Service") is None


def test_alias_table_drops_ambiguous_aliases() -> None:
    table = AliasTable()
    table.add("spec", "a.spec")
    table.add("spec", "b.spec")
    table.add("Order Service", "Order Service")
    assert table.lookup("spec") is None and normalize("spec") in table.ambiguous
    assert table.lookup("ORDER service") == "Order Service"


def test_entities_merge_on_aliases_across_languages() -> None:
    store = KGStore()
    store.add_entity(Entity(name="Order Service", type="Service", aliases=["订单服务"],
                            chunk_ids=["c1"]))
    store.add_entity(Entity(name="订单服务", chunk_ids=["c2"]))
    store.add_entity(Entity(name="ORDER-SERVICE", chunk_ids=["c3"]))
    store.add_entity(Entity(name="Norvale Precision Manufacturing", type="Organization"))
    store.add_relation(Relation(source="NPM", relation="runs", target="订单服务",
                                chunk_ids=["c4"]))
    assert sorted(store.graph.nodes) == ["Norvale Precision Manufacturing", "Order Service"]
    assert store.graph.nodes["Order Service"]["chunk_ids"] == ["c1", "c2", "c3"]
    assert store.graph.has_edge("Norvale Precision Manufacturing", "Order Service", "runs")


def _chunks(texts: dict[str, str]) -> list[Chunk]:
    return [Chunk(chunk_id=k, doc_id=k.split("#")[0], text=v) for k, v in texts.items()]


@pytest.fixture(scope="module")
def rules():
    return build_extractor(RuleParams(dictionary=str(DICTIONARY)))


def _build(rules, texts: dict[str, str], path: Path, **kw) -> tuple[KGStore, dict]:
    extraction = extract_all(rules[0], _chunks(texts), rules[1])
    _, counts = build_graph(extraction, path, **kw)
    return KGStore.load(path), counts


def test_incremental_update_replaces_changed_and_removed_chunks(rules, tmp_path: Path) -> None:
    path = tmp_path / "g.kg.json"
    texts = {"a#0": "The Order Service depends on the Inventory Service.",
             "a#1": "The Shipping Service depends on the Carrier Bridge.",
             "b#0": "Zhang Min is the mentor of Wang Fang."}
    store, counts = _build(rules, texts, path)
    assert counts["new_chunks"] == 3
    assert store.graph.has_edge("Order Service", "Inventory Service", "depends_on")

    texts["a#0"] = "The Order Service depends on the Payment Gateway."
    del texts["b#0"]
    store, counts = _build(rules, texts, path)
    assert (counts["changed_chunks"], counts["removed_chunks"], counts["unchanged_chunks"]) == (
        1, 1, 1)
    assert not store.graph.has_edge("Order Service", "Inventory Service", "depends_on")
    assert store.graph.has_edge("Order Service", "Payment Gateway", "depends_on")
    assert store.graph.has_edge("Shipping Service", "Carrier Bridge", "depends_on")
    assert "Inventory Service" not in store.graph and "Zhang Min" not in store.graph
    assert set(store.chunk_hashes) == {"a#0", "a#1"}
    fresh, _ = _build(rules, texts, tmp_path / "fresh.kg.json")
    assert store.to_dict()["graph"] == fresh.to_dict()["graph"]


def test_edge_supported_by_two_chunks_survives_removing_one(rules, tmp_path: Path) -> None:
    path = tmp_path / "g.kg.json"
    texts = {"en#0": "The Order Service depends on the Inventory Service.",
             "zh#0": "订单服务依赖库存服务。"}
    store, _ = _build(rules, texts, path)
    edge = store.graph.edges["Order Service", "Inventory Service", "depends_on"]
    assert edge["chunk_ids"] == ["en#0", "zh#0"] and edge["weight"] == 2.0
    store, _ = _build(rules, {"zh#0": texts["zh#0"]}, path)
    edge = store.graph.edges["Order Service", "Inventory Service", "depends_on"]
    assert edge["chunk_ids"] == ["zh#0"] and edge["weight"] == 1.0


def test_changed_rules_force_a_rebuild(rules, tmp_path: Path) -> None:
    path = tmp_path / "g.kg.json"
    texts = {"a#0": "The Order Service depends on the Inventory Service."}
    _build(rules, texts, path)
    other = build_extractor(RuleParams(dictionary=str(DICTIONARY), intervals=False))
    extraction = extract_all(other[0], _chunks(texts), other[1])
    _, counts = build_graph(extraction, path)
    assert counts["reason"].startswith("rebuilt") and counts["new_chunks"] == 1


def test_saved_file_loads_back_equal(corpus_store: KGStore, tmp_path: Path) -> None:
    path = tmp_path / "copy.kg.json"
    corpus_store.save(path)
    loaded = KGStore.load(path)
    assert loaded.to_dict() == corpus_store.to_dict()
    assert sorted(loaded.graph.nodes(data=True)) == sorted(corpus_store.graph.nodes(data=True))
    assert sorted(loaded.graph.edges(keys=True, data=True), key=repr) == sorted(
        corpus_store.graph.edges(keys=True, data=True), key=repr)
    assert loaded.aliases.to_dict() == corpus_store.aliases.to_dict()
    data = json.loads(path.read_text("utf-8"))
    assert data["format"] == "modrag-kg/1" and data["graph"]["multigraph"] is True
    assert load_store(path) is load_store(path)


def test_wrong_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"format": "other"}', "utf-8")
    with pytest.raises(ValueError, match="not a knowledge graph file"):
        KGStore.load(path)


def test_degree_statistics(corpus_store: KGStore) -> None:
    stats = corpus_store.stats()
    assert stats["nodes"] == corpus_store.graph.number_of_nodes() > 30
    assert stats["max_degree"] == stats["top_degree"][0]["degree"]
    degrees = dict(corpus_store.graph.degree())
    assert stats["max_degree"] == max(degrees.values())
    assert stats["node_types"]["Service"] == 11
    assert stats["relations"]["depends_on"] >= 10


def test_extraction_aliases_reach_the_store(tmp_path: Path) -> None:
    extraction = GraphExtraction(
        entities=[Entity(name="Warehouse DB", type="Database", chunk_ids=["c"])],
        aliases={"WH-DB-01": "Warehouse DB"}, chunk_hashes={"c": "h"}, extractor="t")
    store = KGStore()
    store.update(extraction)
    assert store.resolve("wh db 01") == "Warehouse DB"
