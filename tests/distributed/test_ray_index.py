"""``modrag index --ray`` and ``modrag eval --ray`` on a real Ray head node (127.0.0.1, free
ports) and a real Chroma server: the same collection, BM25 results and metrics as a local run,
also when an embedding actor is killed mid-job."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from modrag_nodes.vectorstore import chroma_store
from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.distributed.plan import embedder_of_plan, ingest_plan
from modrag_studio.distributed.ray_index import RayIndexOptions, index_on_ray
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import save
from modrag_studio.engine.run.executor import Executor
from tests.dense.test_chroma_server import chroma_server  # noqa: F401  (fixture)
from tests.distributed.helpers import (
    TOPICS,
    assert_same_records,
    collection_records,
    index_graph,
)

pytest.importorskip("ray")  # the Ray tests skip where the distributed extra is absent
pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]


def _store(port: int, collection: str) -> dict:
    return {"backend": "http", "host": "127.0.0.1", "port": port, "collection": collection}


def _ray_index(port: int, corpus: Path, collection: str, options: RayIndexOptions):
    doc = index_graph(_store(port, collection))
    plan = ingest_plan(doc)
    summary = index_on_ray(plan, corpus / "corpus.jsonl", embedder_of_plan(doc, plan, {}),
                           options)
    client = chroma_store.client_for(("chroma-http", "127.0.0.1", port, False))
    return doc, summary, collection_records(chroma_store.get_collection(client, collection))


def test_ray_index_gives_the_local_collection_and_bm25(ray_cluster, chroma_server, corpus,  # noqa: F811
                                                        local_reference, tmp_path):
    expected, local_bm25 = local_reference
    doc, summary, got = _ray_index(chroma_server, corpus, "ray20",
                                   RayIndexOptions(embed_actors=2, block_lines=5,
                                                   embed_batch=8))
    assert_same_records(got, expected)
    assert summary.stages["read"] == [4, 20]  # 20 JSONL lines in blocks of 5
    assert summary.stages["write"][1] == summary.embedded == len(expected)
    for topic in TOPICS:
        query = f"what changed about the {topic}"
        ours = [(summary.bm25.chunks[i].chunk_id, round(s, 9))
                for i, s in summary.bm25.search(query, 10)]
        theirs = [(local_bm25.chunks[i].chunk_id, round(s, 9))
                  for i, s in local_bm25.search(query, 10)]
        assert ours == theirs
    # The collection is stamped like store.chroma stamps it: a local run embeds nothing.
    run = Executor(default_registry(), cache=NodeCache(), work_dir=tmp_path).run(
        doc, {"corpus": str(corpus / "corpus.jsonl"), "query": "coral samples"})
    assert run.ok and run.trace.last_visit("store").details["embedded"] == 0
    assert run.outputs["dense"][0].chunk.doc_id == "d2"


def test_a_killed_embedding_actor_still_gives_the_exact_collection(
        ray_cluster, chroma_server, corpus, local_reference, tmp_path):  # noqa: F811
    expected, _ = local_reference
    pids = tmp_path / "pids"
    killed: list[int] = []

    def kill_first_actor() -> None:
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            lines = pids.read_text().split() if pids.exists() else []
            if lines:
                os.kill(int(lines[0]), signal.SIGKILL)
                killed.append(int(lines[0]))
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_actor, daemon=True)
    killer.start()
    _, summary, got = _ray_index(chroma_server, corpus, "killed20",
                                 RayIndexOptions(embed_actors=1, block_lines=5, embed_batch=2,
                                                 pid_file=str(pids)))
    killer.join(timeout=5)
    assert killed, "the embedding actor never took a block"
    assert len(set(pids.read_text().split())) >= 2  # a replacement actor took blocks
    assert_same_records(got, expected)  # nothing missing, nothing twice
    assert summary.chunks == len(expected)


def test_eval_with_ray_reports_what_a_local_eval_reports(ray_cluster, corpus, tmp_path,
                                                         capsys):
    graph = tmp_path / "g.json"
    save(index_graph(None), graph)
    reports = {}
    for mode, extra in (("local", []), ("ray", ["--ray", "--ray-actors", "2"])):
        path = tmp_path / f"{mode}.json"
        code = main(["eval", str(graph), "--dataset", str(corpus), "--output", "bm25.results",
                     "--report", str(path), "--cache-dir", str(tmp_path / mode), *extra])
        assert code == 0, capsys.readouterr().err
        reports[mode] = json.loads(path.read_text())
        reports[mode].pop("seconds")
    assert reports["ray"] == reports["local"]
    assert reports["local"]["dataset"]["queries"] == 12
    assert reports["local"]["nodes"]["bm25.results"]["ndcg@10"] > 0.5


def test_index_command_with_ray_prints_the_stages_and_seeds_the_bm25_cache(
        ray_cluster, corpus, tmp_path, capsys):
    graph = tmp_path / "g.json"
    save(index_graph(None), graph)
    cache = str(tmp_path / "cache")
    corpus_file = str(corpus / "corpus.jsonl")
    code = main(["index", str(graph), "--input", f"corpus={corpus_file}", "--ray",
                 "--block-lines", "10", "--json", "--cache-dir", cache])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["documents"] == 20 and summary["stages"]["read"] == [2, 20]
    assert summary["bm25_chunks"] == summary["chunks"] == summary["stages"]["split"][1]
    # A later local run of the graph takes the index built on Ray from the node cache.
    trace = tmp_path / "trace.json"
    code = main(["run", str(graph), "--input", f"corpus={corpus_file}", "--input",
                 "query=coral samples", "--cache-dir", cache, "--trace-out", str(trace),
                 "--json"])
    assert code == 0, capsys.readouterr().err
    visits = {v["node_id"]: v for v in json.loads(trace.read_text())["visits"]}
    assert visits["bm25_index"]["status"] == "cached", visits["bm25_index"]
    assert visits["bm25_index"]["cache_key"] == summary["bm25_cache_key"]
    assert visits["split"]["status"] == "done"  # only the seeded node came from the cache
    assert json.loads(capsys.readouterr().out)["outputs"]["bm25"][0]["chunk"]["doc_id"] == "d2"
