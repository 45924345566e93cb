"""Entity linking, multi-hop search (hop and neighbour limits, hubs, filters), path text,
centrality rerank, and the topology acceptance figure on the demo corpus."""

from __future__ import annotations

import numpy as np
import pytest

from modrag_nodes.kg import linking
from modrag_nodes.kg.centrality import centrality, rerank
from modrag_nodes.kg.contracts import Entity, Relation
from modrag_nodes.kg.linking import link_entities
from modrag_nodes.kg.path_text import localised, question_first, render_paths
from modrag_nodes.kg.search import SearchParams, graph_search, infer_direction, search
from modrag_nodes.kg.store import KGStore
from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk
from modrag_studio.engine.core.errors import NodeConfigError

from .conftest import topology_questions


def _store(edges: list[tuple[str, str, str]]) -> KGStore:
    store = KGStore()
    for i, (source, relation, target) in enumerate(edges):
        store.add_relation(Relation(source=source, relation=relation, target=target,
                                    chunk_ids=[f"c{i}"]))
        store.chunks[f"c{i}"] = Chunk(chunk_id=f"c{i}", doc_id="d",
                                      text=f"{source} {relation} {target}").model_dump()
    return store


def _reached(store: KGStore, seed: str, **kw) -> set[str]:
    _, reached, _ = graph_search(store, {seed: 1.0}, **kw)
    return set(reached) - {seed}


def test_hop_limit() -> None:
    store = _store([("A", "r", "B"), ("B", "r", "C"), ("C", "r", "D")])
    assert _reached(store, "A", max_hops=1) == {"B"}
    assert _reached(store, "A", max_hops=2) == {"B", "C"}
    assert _reached(store, "A", max_hops=3) == {"B", "C", "D"}


def test_per_hop_neighbour_limit_prefers_less_connected_nodes() -> None:
    edges = [("S", "r", f"N{i}") for i in range(20)] + [("N0", "r", f"X{i}") for i in range(5)]
    store = _store(edges)
    reached = _reached(store, "S", max_hops=1, per_hop_limit=5)
    assert len(reached) == 5 and "N0" not in reached


def test_hub_is_reached_but_not_expanded() -> None:
    edges = [("A", "r", "Hub")] + [(f"L{i}", "r", "Hub") for i in range(40)]
    store = _store(edges)
    paths, reached, capped = graph_search(store, {"A": 1.0}, max_hops=2, hub_degree_cap=10,
                                          per_hop_limit=100)
    assert set(reached) == {"A", "Hub"} and capped == ["Hub"]
    _, reached, capped = graph_search(store, {"A": 1.0}, max_hops=2, hub_degree_cap=100,
                                      per_hop_limit=100)
    assert len(reached) == 42 and capped == []


def test_hub_penalty_ranks_paths_through_hubs_lower() -> None:
    edges = [("A", "r", "Hub"), ("A", "r", "Quiet")] + [(f"L{i}", "r", "Hub") for i in range(9)]
    store = _store(edges)
    paths, _, _ = graph_search(store, {"A": 1.0}, max_hops=1, hub_penalty=1.0)
    assert [p.end for p in paths] == ["Quiet", "Hub"]
    paths, _, _ = graph_search(store, {"A": 1.0}, max_hops=1, hub_penalty=0.0)
    assert paths[0].score == paths[1].score


def test_direction_and_relation_filters() -> None:
    store = _store([("A", "depends_on", "B"), ("C", "depends_on", "A"), ("A", "owns", "D")])
    assert _reached(store, "A", max_hops=1, direction="out") == {"B", "D"}
    assert _reached(store, "A", max_hops=1, direction="in") == {"C"}
    assert _reached(store, "A", max_hops=1, relation_types=["depends_on"]) == {"B", "C"}
    assert infer_direction("What depends on the executor module?") == "in"
    assert infer_direction("What does the Order Service depend on?") == "out"
    assert infer_direction("哪些服务依赖仓储数据库？") == "in"


def test_chunks_on_paths_are_scored_for_fusion(corpus_store: KGStore) -> None:
    result, _ = search(corpus_store, "Which services depend on the Inventory Service?", None,
                       SearchParams(top_k=5))
    assert result.seeds == ["Inventory Service"]
    assert len(result.chunks) == 5
    assert all(c.score_kind == "graph" for c in result.chunks)
    assert [c.score for c in result.chunks] == sorted((c.score for c in result.chunks),
                                                      reverse=True)
    assert "depends on the Inventory Service" in result.chunks[0].chunk.text or \
        "依赖库存服务" in result.chunks[0].chunk.text


def test_linking_methods_and_unlinked_mentions(corpus_store: KGStore) -> None:
    links = link_entities("Does the Ordr Service call Acme Billing or cnc a01 or 订单服务?",
                          corpus_store)
    found = {x.node: x.method for x in links.links}
    assert found["Order Service"] in ("fuzzy", "alias")
    assert found["CNC-A01"] == "alias"
    assert "Acme Billing" in links.unlinked
    assert all(0 < x.confidence <= 1 for x in links.links)
    exact = link_entities("Why does CNC-A01 vibrate?", corpus_store)
    assert [(x.node, x.method, x.confidence) for x in exact.links] == [
        ("CNC-A01", "exact", 1.0)]


def test_embedding_linking(corpus_store: KGStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from modrag_nodes.embedding.spec import EmbedderSpec

    def fake_embed(spec, texts, *, role="passage", ctx=None):
        synonyms = ("stock", "inventory")
        return np.array([[float(any(k in t.lower() for k in synonyms)), 0.1] for t in texts])

    monkeypatch.setattr(linking, "embed_texts", fake_embed)
    links = link_entities("Who runs Stock Keeping?", corpus_store,
                          embedder=EmbedderSpec(model="fake"), embedding_threshold=0.5)
    assert [(x.node, x.method) for x in links.links] == [("Inventory Service", "embedding")]
    assert links.unlinked == []


def test_path_text_block(corpus_store: KGStore) -> None:
    result, _ = search(corpus_store, "Why does CNC-A01 vibrate?", None, SearchParams())
    text = render_paths(result)
    assert text.startswith("Knowledge graph facts:")
    assert "CNC-A01 -[has fault]-> spindle vibration" in text
    assert "spindle vibration -[caused by]-> SKF-6205" in text
    chains = render_paths(result, layout="paths", header="")
    assert "CNC-A01 -[has fault]-> spindle vibration -[caused by]-> SKF-6205" in chains


def test_path_text_in_the_questions_language(corpus_store: KGStore) -> None:
    """A Chinese question gets the facts under the entities' Chinese aliases and the
    relations' Chinese labels; an English one, or a name with no Chinese alias, stays."""
    result, _ = search(corpus_store, "订单服务负责人的导师是谁？", None, SearchParams())
    labels = {"zh": {"mentor_of": "指导", "responsible_for": "负责"}}
    text = render_paths(localised(result, "zh", labels),
                        edge_template="{source}{relation}{target}。")
    assert "英格丽·霍尔姆指导陈浩。" in text and "陈浩负责订单服务。" in text
    assert "Ingrid Holm" not in text
    assert localised(result, "en", labels) is result
    english = render_paths(result)
    assert "Ingrid Holm -[mentor of]-> Chen Hao" in english
    interval, _ = search(corpus_store, "How often is LP-07 serviced?", None, SearchParams())
    lines = render_paths(interval, edge_template="{source} {relation} {target}.")
    assert "LP-07 serviced every 500 operating hours." in lines.splitlines()



def test_relation_templates_write_a_relation_in_the_languages_word_order(
        corpus_store: KGStore) -> None:
    """A whole-line template puts source and target where the language does ("陈浩的导师是
    英格丽·霍尔姆。", not "英格丽·霍尔姆指导陈浩。"); relations without one keep the edge
    template, and a template naming an unknown field is an error naming it."""
    result, _ = search(corpus_store, "订单服务负责人的导师是谁？", None, SearchParams())
    zh = localised(result, "zh", {"zh": {"mentor_of": "指导", "depends_on": "依赖"}})
    text = render_paths(zh, edge_template="{source} {relation} {target}.",
                        relation_templates={"mentor_of": "{target}的导师是{source}。"})
    lines = text.splitlines()
    assert "陈浩的导师是英格丽·霍尔姆。" in lines
    assert not any("指导" in line for line in lines)
    assert any(line.endswith(".") and " 依赖 " in line for line in lines)
    with pytest.raises(NodeConfigError, match=r"relation_templates.*mentor_of.*owner"):
        render_paths(zh, relation_templates={"mentor_of": "{owner} mentors {target}"})
def test_question_order_puts_the_paths_of_the_relations_the_question_names_first(
        corpus_store: KGStore) -> None:
    """"根本原因" names caused_by ("原因是"): its paths come first, so the cause two hops away
    is within the line limit; a question naming no relation keeps the search order."""
    result, _ = search(corpus_store, "CNC-A01 主轴振动的根本原因是什么？", None, SearchParams())
    zh = localised(result, "zh", {"zh": {"caused_by": "原因是", "has_part": "配有"}})
    first = question_first(zh, "CNC-A01 主轴振动的根本原因是什么？")
    relations = [{s.relation for s in p.steps} for p in first.paths]
    named = [i for i, r in enumerate(relations) if "caused_by" in r]
    assert named and named == list(range(len(named)))  # all of them, first
    assert sorted(map(id, first.paths)) == sorted(map(id, zh.paths))  # none lost
    assert render_paths(first, max_lines=3).count("原因是") >= 2
    assert question_first(zh, "CNC-A01?") is zh
    english, _ = search(corpus_store, "Who mentors the owner of CNC-A01?", None, SearchParams())
    ordered = question_first(english, "Who mentors the owner of CNC-A01?")
    assert "mentor_of" in {s.relation for s in ordered.paths[0].steps}


def test_centrality_rerank_blends_scores() -> None:
    store = _store([("Hub", "r", f"N{i}") for i in range(6)] + [("X", "r", "Y")])
    central = centrality(store, "degree")
    assert central["Hub"] == 1.0
    items = [ScoredChunk(chunk=Chunk(chunk_id=c, doc_id="d", text=""), score=s)
             for c, s in (("c6", 0.9), ("c0", 0.8))]
    assert [i.chunk_id for i in rerank(items, store, weight=0.0)] == ["c6", "c0"]
    assert [i.chunk_id for i in rerank(items, store, weight=0.8, method="degree")] == [
        "c0", "c6"]


def test_topology_set_relation_questions(corpus_store: KGStore) -> None:
    """Acceptance: expected entities and path found for at least 90% of relation questions."""
    questions = [q for q in topology_questions() if q["kind"] == "relation"]
    assert len(questions) >= 20
    hits = 0
    for q in questions:
        result, _ = search(corpus_store, q["question"], None, SearchParams())
        nodes = {n["id"] for n in result.nodes}
        hits += all(tuple(t) in result.triples() for t in q["expected_path"]) and all(
            e in nodes for e in q["expected_entities"])
    assert hits / len(questions) >= 0.9


def test_entity_attributes_survive(tmp_path) -> None:
    store = KGStore()
    store.add_entity(Entity(name="m", type="module", attributes={"lines": 3}))
    store.save(tmp_path / "m.kg.json")
    assert KGStore.load(tmp_path / "m.kg.json").graph.nodes["m"]["lines"] == 3
