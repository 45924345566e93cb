"""Load on `modrag serve`: N concurrent clients for T seconds against a loopback server.

The served graph: question input -> upper-case -> a streaming echo node standing in for a fast
LLM backend -> concat -> output. Prints requests per second, p50/p95 latency, errors, and the
server's overhead over the engine's own run time (from the trace).

Run: .venv/bin/python bench/bench_server_load.py [--clients 1 50] [--seconds 30] [--record]
(``--record``: the operator allows recording (``allow_record``) and every request asks for it
(``?record=true``); the user's own run history beside the server's cache holds runs of its own
before the load, and must hold exactly those after it)
(several counts run one after the other on one server; the server's CPU time per request is
the figure a loaded machine does not distort: the client shares the machine)
Loopback only; bounded in time and count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVER = """
import sys, uvicorn
from pathlib import Path
sys.path.insert(0, {root!r})
from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.protocol import HeaderTimeoutProtocol
from tests.server.conftest import echo_graph, make_registry
app = create_app(echo_graph(), ServerSettings(cache_dir=Path({cache_dir!r}), max_concurrent_runs=16,
                                             max_queued_runs=64, allow_record={record!r}),
                 registry=make_registry())
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", http=HeaderTimeoutProtocol)
"""


async def client_loop(http: httpx.AsyncClient, stop_at: float, index: int,
                      latencies: list[float], overheads: list[float], errors: list[str],
                      record: bool = False) -> None:
    n = 0
    params = {"trace": "true", **({"record": "true"} if record else {})}
    while time.perf_counter() < stop_at:
        n += 1
        question = f"client {index} question {n}"
        started = time.perf_counter()
        try:
            response = await http.post("/run", params=params, json={"question": question})
            elapsed = time.perf_counter() - started
            body = response.json()
            if response.status_code != 200 or body["status"] != "ok":
                errors.append(f"{response.status_code} {body.get('status')}")
                continue
            if body["outputs"]["answer"] != f"{question.upper()} / calm":
                errors.append("answer belongs to another request")
                continue
            if record and not body.get("recorded"):
                errors.append("asked to record, not recorded")
                continue
            latencies.append(elapsed)
            overheads.append(elapsed - body["trace"]["duration_s"])
        except httpx.HTTPError as exc:
            errors.append(type(exc).__name__)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(url: str, clients: int, seconds: float, pid: int | None = None,
               record: bool = False) -> dict:
    latencies: list[float] = []
    overheads: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    cpu_before = cpu_seconds(pid) if pid else 0.0
    client_before = time.process_time()
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        started = time.perf_counter()
        stop_at = started + seconds
        await asyncio.gather(*(client_loop(http, stop_at, i, latencies, overheads, errors,
                                           record) for i in range(clients)))
        wall = time.perf_counter() - started
    server_cpu = cpu_seconds(pid) - cpu_before if pid else 0.0
    client_cpu = time.process_time() - client_before
    ordered = sorted(latencies)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    print(f"clients={clients} seconds={seconds:.0f} requests={len(latencies)} "
          f"errors={len(errors)}")
    print(f"requests/s      {len(latencies) / wall:8.1f}")
    if server_cpu:  # the client shares the machine: the server's own cost per request
        print(f"requests per server CPU-second {len(latencies) / server_cpu:8.1f}  "
              f"(server CPU {server_cpu:.1f} s, this client's CPU {client_cpu:.1f} s, "
              f"in {wall:.1f} s)")
    print(f"latency p50 ms  {p(0.50):8.1f}")
    print(f"latency p95 ms  {p(0.95):8.1f}")
    engine = [lat - over for lat, over in zip(latencies, overheads, strict=True)]
    print(f"engine ms (median)          {statistics.median(engine) * 1000:8.2f}")
    print(f"server overhead ms (median) {statistics.median(overheads) * 1000:8.2f}  "
          "(latency minus engine run time, includes queueing under load)")
    if errors:
        print("first errors:", errors[:5])
    return {"clients": clients, "requests": len(latencies), "errors": len(errors),
            "per_cpu_s": len(latencies) / server_cpu if server_cpu else None}


def summary(rows: list[dict]) -> None:
    """Requests per server CPU-second at each count against one client's (the goal: within
    10% at 50 clients), and the errors (the goal: none below the queue limit)."""
    single = [r["per_cpu_s"] for r in rows if r["clients"] == 1 and r["per_cpu_s"]]
    if not single:
        return
    base = statistics.mean(single)
    print(f"summary: one client {base:.1f} requests per server CPU-second "
          f"(mean of {len(single)} runs)")
    for row in rows:
        if row["clients"] != 1 and row["per_cpu_s"]:
            print(f"summary: {row['clients']} clients {row['per_cpu_s']:.1f} "
                  f"= {row['per_cpu_s'] / base:.2f}x one client's, "
                  f"{row['errors']} errors in {row['requests']} requests")


def users_history(cache_dir: Path) -> tuple[list[str], list[str]]:
    """The user's own history beside the server's cache: 5 CLI runs of another graph;
    (their run ids, the run files)."""
    from modrag_studio.engine.core.document import from_json_dict
    from modrag_studio.engine.history.store import RunHistory
    from modrag_studio.engine.run.executor import RunResult
    from modrag_studio.engine.run.trace import Trace

    history = RunHistory(cache_dir / "history")
    doc = from_json_dict({"schema_version": 1, "nodes": [], "edges": []})
    for i in range(5):
        result = RunResult(trace=Trace(run_id=f"mine{i}", graph_name="notes",
                                       started_at=time.time(), duration_s=0.1))
        result.outputs = {"answer": f"my answer {i}"}
        history.record("/home/me/notes.json", doc, {"question": f"mine {i}"}, result,
                       origin="cli")
    return history_state(cache_dir)


def history_state(cache_dir: Path) -> tuple[list[str], list[str]]:
    from modrag_studio.engine.history.store import RunHistory

    runs = [r.run_id for r in RunHistory(cache_dir / "history").runs()]
    files = sorted(p.name for p in (cache_dir / "history" / "runs").iterdir())
    return runs, files


def check_histories(cache_dir: Path, before: tuple[list[str], list[str]]) -> None:
    from modrag_studio.engine.history.store import RunHistory

    after = history_state(cache_dir)
    served = RunHistory(cache_dir / "served-history").runs()
    print(f"user's history: {len(before[0])} runs before, {len(after[0])} after, "
          f"unchanged: {after == before}")
    print(f"served history: {len(served)} runs kept (the client's budget: 100), origins "
          f"{sorted({r.origin for r in served})}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, nargs="+", default=[50],
                        help="one run per count, one after the other on the same server")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--record", action="store_true",
                        help="the operator allows recording and every request asks for it")
    args = parser.parse_args()
    cache_dir = Path(tempfile.mkdtemp(prefix="bench-serve-")) / "cache"
    users = users_history(cache_dir) if args.record else None
    code = SERVER.format(root=str(ROOT), port=args.port, cache_dir=str(cache_dir),
                         record=args.record)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{args.port}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                httpx.get(url + "/graph", timeout=1)
                break
            except httpx.HTTPError:
                if time.time() > deadline or server.poll() is not None:
                    raise SystemExit("server did not start") from None
                time.sleep(0.2)
        rows = [asyncio.run(load(url, clients, min(args.seconds, 300), server.pid,
                                 args.record)) for clients in args.clients]
        summary(rows)
        if users is not None:
            check_histories(cache_dir, users)
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
