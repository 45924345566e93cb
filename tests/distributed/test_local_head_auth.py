"""The ``--ray local`` head node: Ray 2.60 lets its GCS server and raylet listen on every
interface (no option binds them to loopback), so it never starts without Ray's token
authentication."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from modrag_studio.distributed import local_cluster
from modrag_studio.distributed.ray_support import RayUnavailable


@pytest.mark.parametrize("mode", ["disabled", "none", ""])
def test_a_local_head_node_is_never_started_without_token_authentication(monkeypatch, mode):
    started: list[list[str]] = []

    def popen(command, *args, **kwargs):
        started.append(command)
        raise AssertionError("a head node was started")

    monkeypatch.setattr(local_cluster, "subprocess",
                        SimpleNamespace(Popen=popen, STDOUT=subprocess.STDOUT))
    monkeypatch.setenv("RAY_AUTH_MODE", mode)
    with pytest.raises(RayUnavailable, match="RAY_AUTH_MODE") as caught:
        local_cluster.start_head(num_cpus=1, attempts=1)
    assert "every interface" in str(caught.value)
    assert started == []
