"""Seeding the node cache with a result computed elsewhere, under the key a local run
computes (no Ray needed: the index is built by one executor and seeded into another's cache)."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.distributed.cache_seed import CacheSeedError, seed_node_cache
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.run.executor import Executor
from tests.distributed.helpers import index_graph, write_corpus


@pytest.fixture
def corpus(tmp_path):
    return str(write_corpus(tmp_path / "beir") / "corpus.jsonl")


def test_a_seeded_bm25_index_is_what_a_later_local_run_takes_from_the_cache(tmp_path, corpus):
    doc = index_graph(None)
    inputs = {"corpus": corpus, "query": "coral samples"}
    built = Executor(default_registry(), cache=NodeCache(), work_dir=tmp_path).run(doc, inputs)
    assert built.ok and built.trace.last_visit("bm25_index").status == "done"
    index = built.output_of("bm25_index", "index")

    cache = NodeCache(disk_dir=tmp_path / "cache")
    keys = seed_node_cache(doc, {"corpus": corpus}, cache, {"bm25_index": {"index": index}})
    assert keys == {"bm25_index": built.trace.last_visit("bm25_index").cache_key}
    assert (tmp_path / "cache").exists()

    # A new process (a fresh cache object on the same folder) finds it on disk.
    later = Executor(default_registry(),
                     cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path).run(
        doc, inputs)
    visit = later.trace.last_visit("bm25_index")
    assert later.ok and visit.status == "cached", visit.cache_reason
    assert visit.cache_reason == "unchanged since the last run"
    assert {"load", "split"} <= set(later.trace.ran())  # upstream still runs: it was not seeded
    ranked = [s.chunk_id for s in later.outputs["bm25"]]
    assert ranked == [s.chunk_id for s in built.outputs["bm25"]]


def test_a_changed_corpus_does_not_hit_the_seeded_entry(tmp_path, corpus):
    doc = index_graph(None)
    built = Executor(default_registry(),
                     cache=NodeCache(), work_dir=tmp_path).run(doc, {"corpus": corpus})
    cache = NodeCache(disk_dir=tmp_path / "cache")
    seed_node_cache(doc, {"corpus": corpus}, cache,
                    {"bm25_index": {"index": built.output_of("bm25_index", "index")}})
    with open(corpus, "a", encoding="utf-8") as fh:
        fh.write('{"_id": "d99", "title": "New", "text": "A new document about kelp."}\n')
    later = Executor(default_registry(),
                     cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path).run(
        doc, {"corpus": corpus})
    assert later.trace.last_visit("bm25_index").status == "done"  # rebuilt, not stale


def test_seeding_names_the_node_when_its_upstream_cannot_be_reached(tmp_path):
    doc = index_graph(None)
    with pytest.raises(CacheSeedError, match="node 'bm25_index'.*'load'"):
        seed_node_cache(doc, {"corpus": str(tmp_path / "missing.jsonl")}, NodeCache(),
                        {"bm25_index": {"index": None}})
