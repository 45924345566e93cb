"""One Ray head node for every Ray test of the session (starting and stopping a node costs
tens of seconds on a busy machine), the small BEIR corpus they index, and one local run of it
that every Ray run is compared with."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from tests.distributed.helpers import collection_records, index_graph, write_corpus

# Ray reads its auth mode when it is imported: set it before a test module's skip guard
# (``pytest.importorskip("ray")``) imports Ray.
os.environ.setdefault("RAY_AUTH_MODE", "token")


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory) -> Iterator[str]:
    """This process connected to a head node on 127.0.0.1 (free ports) for the whole session;
    MODRAG_TEST_RAY_ADDRESS names a running head node on this machine to use instead.
    ``ray_session`` (the commands' connection) reuses the connection, so in-process
    ``modrag index --ray`` / ``modrag eval --ray`` start no node of their own."""
    os.environ.setdefault("RAY_AUTH_MODE", "token")  # before Ray is imported
    import ray

    from modrag_studio.distributed.local_cluster import start_head

    given = os.environ.get("MODRAG_TEST_RAY_ADDRESS")
    cluster = None if given else start_head(num_cpus=4,
                                            log_dir=tmp_path_factory.mktemp("ray-head"))
    try:
        ray.init(address=given or cluster.address, log_to_driver=False)
        yield given or cluster.address
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.stop()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("beir"))


@pytest.fixture(scope="session")
def local_reference(corpus, tmp_path_factory) -> tuple[dict, object]:
    """The local (executor) run of the corpus into a Chroma folder: its records (id ->
    document, metadata, embedding) and its BM25 index."""
    from modrag_nodes.vectorstore import chroma_store
    from modrag_studio.distributed.plan import index_locally, ingest_plan
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor

    folder = tmp_path_factory.mktemp("reference")
    chroma_store.forget_clients()
    doc = index_graph({"path": str(folder / "chroma"), "collection": "c20"})
    executor = Executor(default_registry(), cache=NodeCache(), work_dir=folder / "work")
    results = index_locally(doc, ingest_plan(doc), {"corpus": str(corpus / "corpus.jsonl")},
                            executor)
    assert all(r.ok for r in results.values())
    client = chroma_store.client_for(("chroma-persistent", str((folder / "chroma").resolve())))
    records = collection_records(chroma_store.get_collection(client, "c20"))
    return records, results["bm25_index"].output_of("bm25_index", "index")
