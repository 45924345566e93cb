"""One Ray head node for every Ray test of the session (starting and stopping a node costs
tens of seconds on a busy machine), and the small BEIR corpus they index."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.distributed.helpers import write_corpus


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
