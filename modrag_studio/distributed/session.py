"""A Ray connection for the length of a ``with`` block: a local head node or a cluster."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from modrag_studio.distributed.local_cluster import start_head
from modrag_studio.distributed.ray_support import RayUnavailable, require_ray

if TYPE_CHECKING:
    from modrag_studio.engine.core.node import CancelToken


@contextmanager
def ray_session(address: str, *, cancel: CancelToken | None = None,
                on_status: Callable[[str], None] | None = None) -> Iterator[Any]:
    """Connected to Ray for the ``with`` block: ``local`` starts a head node on 127.0.0.1
    owned by this process (as ``ray.init(address="local")`` would, but with fixed ports, see
    ``local_cluster``) and stops it afterwards, also on Ctrl-C or a cancel; ``auto`` or
    ``HOST:PORT`` join a running cluster. A process already connected (tests) keeps its
    connection. ``on_status`` hears when a head node is started and stopped."""
    if address == "local":
        # The head node started below uses Ray's token authentication; the driver must know
        # before Ray is imported.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    say = on_status or (lambda text: None)
    cluster = None
    target = address
    try:
        if address == "local":
            cpus = os.environ.get("MODRAG_RAY_CPUS")
            say("starting a local Ray head node on 127.0.0.1")
            cluster = start_head(num_cpus=int(cpus) if cpus else None,
                                 should_stop=None if cancel is None else lambda: cancel.cancelled)
            target = cluster.address
            say(f"started a local Ray head node at {cluster.address} (session "
                f"{cluster.process.pid}, log {cluster.log_path})")
        env = {k: v for k in _FORWARDED_ENV if (v := os.environ.get(k)) is not None}
        try:
            ray.init(address=target, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING,
                     runtime_env={"env_vars": env} if env and cluster is None else None)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise RayUnavailable(f"--ray {address}: cannot join the Ray cluster: "
                                 f"{str(exc).splitlines()[0]}; use 'local', 'auto' or the "
                                 "head node's HOST:PORT") from exc
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if cluster is not None:
            cluster.stop()
            say(f"stopped the local Ray head node at {cluster.address}")


#: Settings a worker must see like the driver (offline models, model folders).
_FORWARDED_ENV = ("MODRAG_MODEL_DIR", "MODRAG_CACHE_DIR", "MODRAG_DATA_DIR", "HF_HUB_OFFLINE",
                  "TRANSFORMERS_OFFLINE", "HF_HOME", "OLLAMA_HOST")
