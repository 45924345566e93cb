"""A Ray head node on 127.0.0.1 owned by this process (``--ray local`` and the tests).

It is ``ray start --head --block`` with every port chosen up front: a raylet that must wait for
its agents to report their ports gives up after a fixed delay, which a busy machine exceeds
(ray-project/ray#65983); with fixed ports it does not wait. It runs in a session of its own;
stopping it ends the processes of that session (never ``ray stop``, which would stop every Ray
node on the machine).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from modrag_studio.distributed.ray_support import RayUnavailable, require_ray
from modrag_studio.engine.core.errors import RunCancelled


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

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the head node started here: its ``ray start`` process and every process of
        its session (raylet, GCS, workers, and Ray Data's detached actors, which leave the
        process group but not the session). SIGTERM first, SIGKILL for what is left after
        ``timeout`` seconds; a second Ctrl-C during the stop does not interrupt it."""
        with _sigint_ignored():
            if self.process.poll() is None:
                self.process.terminate()  # 'ray start --block' stops its node's processes
            _signal_all(session_processes(self.process.pid), signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while session_processes(self.process.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            _signal_all(session_processes(self.process.pid), signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def session_processes(session_id: int) -> list[int]:
    """Pids of the live processes in session ``session_id`` (read from /proc; empty where
    there is no /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = entry.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == session_id and fields[0] not in ("Z", "X"):
            found.append(int(entry.parent.name))
    return found


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored for the block when this is the main thread (else nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def start_head(num_cpus: int | None = None, log_dir: Path | None = None,
               timeout: float = 180.0, attempts: int = 2,
               should_stop: Callable[[], bool] | None = None) -> LocalCluster:
    """Start a head node on 127.0.0.1 with free ports; returns once it accepts drivers.
    A node whose raylet still timed out waiting for an agent (a very busy machine) is
    started again, ``attempts`` times in all. ``should_stop()`` turning true (a cancelled
    job), Ctrl-C or any error while waiting stops the node before the call returns."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_head_once(num_cpus, log_dir, timeout, should_stop)
        except RayUnavailable:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def ensure_auth_token(env: dict[str, str]) -> None:
    """With Ray's token authentication on (``RAY_AUTH_MODE=token``), ``ray start`` refuses to
    start without a token; a new local cluster gets one in Ray's default file
    (``~/.ray/auth_token``), as ``ray.init()`` does for the clusters it starts. A token given
    by ``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH`` is left alone."""
    if env.get("RAY_AUTH_MODE", "").lower() != "token" or env.get("RAY_AUTH_TOKEN"):
        return
    given = env.get("RAY_AUTH_TOKEN_PATH")
    if given:
        if not Path(given).expanduser().is_file():
            raise RayUnavailable(f"RAY_AUTH_TOKEN_PATH names {given}, which does not exist")
        return
    default = Path.home() / ".ray" / "auth_token"
    if default.is_file():
        return
    # Ray's own generator is secrets.token_hex(32); importing Ray here would fix its
    # configuration in this process before the caller sets RAY_AUTH_MODE for its driver.
    default.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(default, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # private at once
    except FileExistsError:  # another process made it meanwhile
        return
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32))


def require_token_auth() -> None:
    """Ray 2.60's GCS server and raylet listen on every interface (``--node-ip-address
    127.0.0.1`` only sets the address they advertise; no option binds them to loopback):
    a head node started here runs with Ray's token authentication, and RayUnavailable says
    so when ``RAY_AUTH_MODE`` asks for anything else (unset: set to ``token``)."""
    mode = os.environ.setdefault("RAY_AUTH_MODE", "token")
    if mode.strip().lower() != "token":
        raise RayUnavailable(
            f"RAY_AUTH_MODE={mode!r}: a local Ray head node listens on every interface (Ray "
            "has no option to bind it to 127.0.0.1), so it runs only with token "
            "authentication; unset RAY_AUTH_MODE or set it to 'token'")


def _start_head_once(num_cpus: int | None, log_dir: Path | None, timeout: float,
                     should_stop: Callable[[], bool] | None) -> LocalCluster:
    require_token_auth()
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
    ensure_auth_token(env)
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    cluster = LocalCluster(f"127.0.0.1:{port}", process, log_path)
    try:
        _wait_until_started(cluster, timeout, should_stop)
    except BaseException:  # Ctrl-C or a cancel while starting: leave no node behind
        cluster.stop()
        raise
    return cluster


def _wait_until_started(cluster: LocalCluster, timeout: float,
                        should_stop: Callable[[], bool] | None) -> None:
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in cluster.log_path.read_text(errors="replace"):
        if should_stop is not None and should_stop():
            raise RunCancelled("cancelled while the local Ray head node was starting")
        if cluster.process.poll() is not None or time.monotonic() > deadline:
            tail = cluster.log_path.read_text(errors="replace").strip().splitlines()[-3:]
            raise RayUnavailable("the local Ray head node did not start: "
                                 + " / ".join(tail) + f" (log: {cluster.log_path})")
        time.sleep(0.5)
