"""A Ray head node on 127.0.0.1 owned by this process (``--ray local`` and the tests).

It is ``ray start --head --block`` with every port chosen up front: a raylet that must wait for
its agents to report their ports gives up after a fixed delay, which a busy machine exceeds
(ray-project/ray#65983); with fixed ports it does not wait. Stopping it terminates the
``ray start`` process, which stops the node's processes (never ``ray stop``, which would stop
every Ray node on the machine).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from modrag_studio.distributed import RayUnavailable, require_ray


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class LocalCluster:
    address: str
    process: subprocess.Popen
    log_path: Path

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the head node started here (its ``ray start`` process and children)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()  # 'ray start --block' stops its node's processes
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever is left of this node
        self.process.wait(timeout=10)


def start_head(num_cpus: int | None = None, log_dir: Path | None = None,
               timeout: float = 180.0, attempts: int = 2) -> LocalCluster:
    """Start a head node on 127.0.0.1 with free ports; returns once it accepts drivers.
    A node whose raylet still timed out waiting for an agent (a very busy machine) is
    started again, ``attempts`` times in all."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_head_once(num_cpus, log_dir, timeout)
        except RayUnavailable:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def _start_head_once(num_cpus: int | None, log_dir: Path | None,
                     timeout: float) -> LocalCluster:
    require_ray()
    port, grpc, export, listen, runtime_env, client = free_ports(6)
    ray_cli = Path(sys.executable).with_name("ray")
    command = [str(ray_cli) if ray_cli.is_file() else "ray", "start", "--head", "--block",
               "--node-ip-address", "127.0.0.1", "--port", str(port),
               "--dashboard-agent-grpc-port", str(grpc), "--metrics-export-port", str(export),
               "--dashboard-agent-listen-port", str(listen),
               "--runtime-env-agent-port", str(runtime_env), "--ray-client-server-port",
               str(client), "--include-dashboard", "false", "--disable-usage-stats"]
    if num_cpus is not None:
        command += ["--num-cpus", str(num_cpus)]
    folder = log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / f"modrag-ray-head-{port}.log"
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # let Ray's processes reuse compiled modules
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    cluster = LocalCluster(f"127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in log_path.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            cluster.stop()
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            raise RayUnavailable("the local Ray head node did not start: "
                                 + " / ".join(tail) + f" (log: {log_path})")
        time.sleep(0.5)
    return cluster
