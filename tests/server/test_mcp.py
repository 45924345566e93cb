"""``modrag mcp``: graphs as MCP tools, checked with the MCP SDK's own client over stdio (the
command as a subprocess) and over streamable HTTP (a server on a free loopback port)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from modrag_nodes.llm.client import unregister_backend  # noqa: E402
from modrag_studio.cli import main  # noqa: E402
from modrag_studio.server import ServerSettings  # noqa: E402
from tests.server.conftest import free_port  # noqa: E402
from tests.server.mcp_helpers import (  # noqa: E402
    BACKEND,
    MARKS_ENV,
    install,
    write_graphs,
    write_sitecustomize,
)

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How often is LP-07 serviced?"


@pytest.fixture
def graphs(tmp_path, monkeypatch):
    install()
    monkeypatch.setenv(MARKS_ENV, str(tmp_path / "marks.txt"))
    faq, shout = write_graphs(tmp_path)
    yield tmp_path, faq, shout
    unregister_backend(BACKEND)


def marks(folder: Path) -> list[str]:
    path = folder / "marks.txt"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def wait_for_mark(folder: Path, what: str, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while what not in marks(folder):
        assert time.time() < deadline, f"no '{what}' mark; marks: {marks(folder)}"
        time.sleep(0.05)


@asynccontextmanager
async def stdio_session(folder: Path, *args: str):
    """``python -m modrag_studio.cli mcp ...`` with the scripted backend (a sitecustomize)."""
    site = write_sitecustomize(folder / "site")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", ""), str(ROOT)])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "modrag_studio.cli", "mcp", *args,
                                      "--cache-dir", str(folder / "mcp-cache")],
        env={"PYTHONPATH": path, MARKS_ENV: str(folder / "marks.txt"),
             "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, cwd=str(folder))
    with open(folder / "server-stderr.txt", "w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=60) as session:
            await session.initialize()
            yield session


@contextmanager
def http_server(docs: list[Path], settings: ServerSettings) -> Iterator[str]:
    """The MCP app of ``modrag mcp --transport http`` under uvicorn on a free port."""
    import uvicorn

    from modrag_studio.commands.common import load_or_exit
    from modrag_studio.server.mcp_tools import plan_tools
    from modrag_studio.server.mcp_transport import build_server, http_app

    tools = plan_tools([load_or_exit(str(p)) for p in docs], settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(http_app(build_server(tools), settings),
                                           host="127.0.0.1", port=port, log_level="warning",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.time() + 20
    while True:  # until it answers
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            assert time.time() < deadline, "the MCP HTTP server did not start"
            time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@asynccontextmanager
async def http_session(url: str):
    async with streamable_http_client(url) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=60) as session:
        await session.initialize()
        yield session


def modrag_run_outputs(faq: Path, folder: Path, capsys) -> dict:
    capsys.readouterr()
    code = main(["run", str(faq), "-i", f"question={QUESTION}", "--json", "-q",
                 "--cache-dir", str(folder / "run-cache")])
    out, err = capsys.readouterr()
    assert code == 0, err
    # a client reads a chunk's source relative to the corpus folder, not the server's path
    return json.loads(out.replace(f"{folder / 'corpus'}/", ""))["outputs"]


async def check_tools_and_answer(session: ClientSession, expected_outputs: dict) -> None:
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert sorted(listed) == ["plant_faq", "shout"]
    faq = listed["plant_faq"]
    assert "machines, with citations" in faq.description
    assert sorted(faq.input_schema["properties"]) == ["question"]  # the corpus path is fixed
    assert faq.input_schema["required"] == ["question"]
    assert faq.input_schema["properties"]["question"]["description"] == "what to ask"
    assert sorted(listed["shout"].input_schema["properties"]) == ["text"]
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    result = await session.call_tool("plant_faq", {"question": QUESTION},
                                     progress_callback=on_progress)
    assert not result.is_error, result.content
    answer = expected_outputs["answer"]
    assert result.content[0].text.splitlines()[0] == answer["text"]
    assert "[1] maint.md (maint.md#0)" in result.content[0].text
    structured = result.structured_content
    assert structured["answer"] == answer["text"] == "LP-07 is serviced every 500 hours [1]."
    assert structured["citations"] == answer["citations"]
    assert structured["citations"][0]["doc_id"] == "maint.md"
    assert structured["outputs"] == expected_outputs  # what `modrag run --json` prints
    assert structured["status"] == "ok"
    assert len(progress) >= 5 and [p[0] for p in progress] == sorted(p[0] for p in progress)
    assert any("parse" in (p[2] or "") for p in progress)
    loud = await session.call_tool("shout", {"text": "hello"})
    assert loud.content[0].text == "HELLO" and loud.structured_content["answer"] == "HELLO"


async def check_bad_arguments(session: ClientSession) -> None:
    cases = [({"question": QUESTION, "surprise": "x"}, "input 'surprise' is not an input"),
             ({"question": 3}, "input 'question': Input should be a valid string"),
             ({}, "input 'question': Field required"),
             ({"question": QUESTION, "corpus": "/etc"},
              "input 'corpus' is not an input of this tool (fixed by the server)")]
    for arguments, message in cases:
        result = await session.call_tool("plant_faq", arguments)
        assert result.is_error, arguments
        assert message in result.content[0].text, result.content[0].text
        assert "takes: question" in result.content[0].text


async def check_failed_run(session: ClientSession) -> None:
    result = await session.call_tool("plant_faq", {"question": "please explode"})
    assert result.is_error
    assert "node 'generate' (llm.generate) failed" in result.content[0].text
    assert "the scripted model exploded" in result.content[0].text
    assert result.structured_content["status"] == "failed"


async def check_cancel(session: ClientSession, folder: Path) -> None:
    """A slow call cancelled by the client stops its run (the backend sees the cancel)."""
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()

        async def slow_call() -> None:
            with scope:
                await session.call_tool("plant_faq", {"question": "answer slowly"})
            assert scope.cancelled_caught

        group.start_soon(slow_call)
        await anyio.to_thread.run_sync(wait_for_mark, folder, "started")
        started = time.monotonic()
        scope.cancel()
    await anyio.to_thread.run_sync(wait_for_mark, folder, "cancelled", 10.0)
    assert "finished" not in marks(folder)
    assert time.monotonic() - started < 10  # the slow answer takes 30 s
    after = await session.call_tool("shout", {"text": "still here"})  # the server goes on
    assert after.content[0].text == "STILL HERE"


def test_stdio_lists_tools_and_answers_as_modrag_run(graphs, capsys):
    folder, faq, shout = graphs
    expected = modrag_run_outputs(faq, folder, capsys)

    async def scenario() -> None:
        async with stdio_session(folder, str(faq), str(shout)) as session:
            await check_tools_and_answer(session, expected)

    anyio.run(scenario)


def test_stdio_bad_arguments_are_errors_naming_the_input(graphs):
    folder, faq, shout = graphs

    async def scenario() -> None:
        async with stdio_session(folder, str(faq), str(shout)) as session:
            await check_bad_arguments(session)

    anyio.run(scenario)


def test_stdio_cancelled_call_stops_its_run(graphs):
    folder, faq, shout = graphs

    async def scenario() -> None:
        async with stdio_session(folder, str(faq), str(shout)) as session:
            await check_cancel(session, folder)

    anyio.run(scenario)


def test_http_lists_tools_answers_reports_errors_and_cancels(graphs, capsys):
    folder, faq, shout = graphs
    expected = modrag_run_outputs(faq, folder, capsys)
    settings = ServerSettings(cache_dir=folder / "http-cache")

    async def scenario(url: str) -> None:
        async with http_session(url) as session:
            await check_tools_and_answer(session, expected)
            await check_bad_arguments(session)
            await check_failed_run(session)
            await check_cancel(session, folder)

    with http_server([faq, shout], settings) as url:
        anyio.run(scenario, url)


def test_http_exposed_path_input_stays_inside_the_data_root(graphs):
    folder, faq, _ = graphs
    settings = ServerSettings(cache_dir=folder / "http-cache", expose_inputs=["corpus"],
                              data_root=folder / "corpus")

    async def scenario(url: str) -> None:
        async with http_session(url) as session:
            tool = (await session.list_tools()).tools[0]
            assert sorted(tool.input_schema["properties"]) == ["corpus", "question"]
            outside = await session.call_tool("plant_faq", {"question": QUESTION,
                                                            "corpus": "/etc"})
            assert outside.is_error
            assert "input 'corpus': '/etc' is outside the server's data root" in \
                outside.content[0].text
            escape = await session.call_tool("plant_faq", {"question": QUESTION,
                                                           "corpus": "../"})
            assert escape.is_error and "input 'corpus'" in escape.content[0].text
            inside = await session.call_tool("plant_faq", {"question": QUESTION,
                                                           "corpus": "."})
            assert not inside.is_error
            assert inside.structured_content["citations"][0]["doc_id"] == "maint.md"

    with http_server([faq], settings) as url:
        anyio.run(scenario, url)


def test_http_guard_wants_the_api_key_and_a_bound_host(graphs):
    folder, faq, _ = graphs
    settings = ServerSettings(cache_dir=folder / "http-cache", api_key="sesame")
    with http_server([faq], settings) as url:
        assert httpx.post(url, json={}).status_code == 401
        assert httpx.post(url, json={}, headers={"Host": "evil.example",
                                                 "X-API-Key": "sesame"}).status_code == 421

        async def scenario() -> None:
            client = create_mcp_http_client(headers={"Authorization": "Bearer sesame"})
            async with client, streamable_http_client(url, http_client=client) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=60) as session:
                await session.initialize()
                assert [t.name for t in (await session.list_tools()).tools] == ["plant_faq"]

        anyio.run(scenario)


def test_command_refuses_what_serve_refuses(graphs, capsys):
    folder, faq, shout = graphs
    assert main(["mcp", str(faq), "--expose-input", "nowhere"]) == 2
    assert "no graph has an input 'nowhere'" in capsys.readouterr().err
    assert main(["mcp", str(faq), "--expose-input", "corpus"]) == 2
    assert "needs --data-root" in capsys.readouterr().err
    assert main(["mcp", str(faq), "--transport", "http", "--host", "0.0.0.0"]) == 2
    assert "needs an API key" in capsys.readouterr().err


def test_missing_extra_is_named(graphs, capsys, monkeypatch):
    folder, faq, _ = graphs
    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)
    assert main(["mcp", str(faq)]) == 2
    err = capsys.readouterr().err
    assert "needs the optional 'mcp' extra: pip install 'modrag-studio[mcp]'" in err


def test_stdio_with_otlp_exports_each_call_as_a_trace(graphs):
    """``modrag mcp --otlp URL``: a tool call's run arrives as spans at a receiver."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    got: list[bytes] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            got.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    folder, faq, shout = graphs

    async def scenario() -> None:
        async with stdio_session(folder, str(shout), "--otlp",
                                 f"http://127.0.0.1:{receiver.server_address[1]}",
                                 "--otlp-content") as session:
            result = await session.call_tool("shout", {"text": "traced"})
            assert result.content[0].text == "TRACED"

    try:
        anyio.run(scenario)  # the command ends with the session: it sends what it holds
        deadline = time.time() + 20
        while not got and time.time() < deadline:
            time.sleep(0.05)
    finally:
        receiver.shutdown()
    spans = [s for body in got for r in ExportTraceServiceRequest.FromString(body).resource_spans
             for ss in r.scope_spans for s in ss.spans]
    roots = [s for s in spans if not s.parent_span_id]
    assert [s.name for s in roots] == ["shout"]
    values = {a.key: a.value.string_value for a in roots[0].attributes}
    assert "traced" in values["input.value"] and values["output.value"] == "TRACED"
    assert len(spans) > 1 and {s.trace_id for s in spans} == {roots[0].trace_id}
