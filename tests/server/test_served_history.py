"""``/run?record=true``: off unless the operator allows it, kept in the server's own history
(never the user's), each client within its own budget."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.history.store import RunHistory
from modrag_studio.server import ServerSettings
from tests.engine.test_run_history import _fake_result
from tests.server.conftest import echo_graph, serve


def _users_history(cache: Path) -> tuple[RunHistory, list[str]]:
    """The user's own history with 3 CLI runs of another graph."""
    history = RunHistory(cache / "history", max_runs=3)
    doc = from_json_dict({"schema_version": 1, "nodes": [], "edges": []})
    ids = [history.record("/home/me/notes.json", doc, {"question": f"mine {i}"},
                          _fake_result(i), origin="cli").run_id for i in range(3)]
    return history, ids


def _streamed(http: httpx.Client, question: str, **params: str) -> httpx.Response:
    with http.stream("POST", "/run/stream", params=params,
                     json={"question": question}) as response:
        response.read()
    return response


def test_recording_is_refused_unless_the_operator_allows_it(tmp_path):
    with serve(echo_graph(), ServerSettings(cache_dir=tmp_path)) as url, \
            httpx.Client(base_url=url, timeout=30) as http:
        refused = http.post("/run", params={"record": "true"}, json={"question": "keep me"})
        streamed = _streamed(http, "keep me", record="true")
        plain = http.post("/run", json={"question": "not kept"})
    for response in (refused, streamed):
        assert response.status_code == 403
        assert "--allow-record" in response.json()["detail"]
    assert plain.status_code == 200 and plain.json()["recorded"] is None
    assert not (tmp_path / "history").exists() and not (tmp_path / "served-history").exists()


def test_recorded_runs_go_to_the_servers_history_and_the_users_is_untouched(tmp_path):
    users, mine = _users_history(tmp_path)
    settings = ServerSettings(cache_dir=tmp_path, allow_record=True)
    with serve(echo_graph(), settings) as url, httpx.Client(base_url=url, timeout=30) as http:
        kept = [http.post("/run", params={"record": "true"},
                          json={"question": f"client {i}"}).json() for i in range(4)]
        streamed = _streamed(http, "streamed", record="true")
    assert [r.run_id for r in users.runs()] == mine[::-1]  # the user's runs all stay
    served = RunHistory(tmp_path / "served-history").runs()
    result = json.loads(streamed.text.split("event: result\ndata: ", 1)[1].split("\n", 1)[0])
    assert [(r.run_id, r.question, r.origin, r.answer) for r in served] == [
        (result["recorded"], "streamed", "server 127.0.0.1", "STREAMED / calm"),
        *[(k["recorded"], f"client {i}", "server 127.0.0.1", f"CLIENT {i} / calm")
          for i, k in reversed(list(enumerate(kept)))]]


def test_a_client_fills_only_its_own_budget(tmp_path):
    settings = ServerSettings(cache_dir=tmp_path, allow_record=True, record_runs_per_client=3)
    with serve(echo_graph(), settings) as url:
        # two clients on two loopback addresses
        quiet = httpx.Client(base_url=url, timeout=30,
                             transport=httpx.HTTPTransport(local_address="127.0.0.2"))
        busy = httpx.Client(base_url=url, timeout=30)
        with quiet, busy:
            for i in range(2):
                assert quiet.post("/run", params={"record": "true"},
                                  json={"question": f"quiet {i}"}).status_code == 200
            for i in range(8):
                assert busy.post("/run", params={"record": "true"},
                                 json={"question": f"busy {i}"}).status_code == 200
    served = RunHistory(tmp_path / "served-history").runs()
    by_client = {origin: [r.question for r in served if r.origin == origin]
                 for origin in {r.origin for r in served}}
    assert by_client == {"server 127.0.0.2": ["quiet 1", "quiet 0"],
                         "server 127.0.0.1": ["busy 7", "busy 6", "busy 5"]}


def test_modrag_serve_allow_record_and_its_budget_reach_the_settings(tmp_path):
    from modrag_studio.cli import build_parser
    from modrag_studio.commands.serve_command import settings_from_args

    args = build_parser().parse_args([
        "serve", "g.json", "--cache-dir", str(tmp_path), "--allow-record",
        "--record-runs-per-client", "7", "--history-dir", str(tmp_path / "mine")])
    settings = settings_from_args(args)
    assert settings.allow_record and settings.record_runs_per_client == 7
    assert settings.history_dir == tmp_path / "mine"
    default = settings_from_args(build_parser().parse_args(["serve", "g.json"]))
    assert not default.allow_record


def test_modrag_cache_lists_the_served_history_by_its_folder(tmp_path, capsys):
    from modrag_studio.cli import main

    doc = from_json_dict({"schema_version": 1, "nodes": [], "edges": []})
    RunHistory(tmp_path / "served-history").record("g", doc, {"question": "served q"},
                                                   _fake_result(1), origin="server 10.0.0.9")
    assert main(["cache", "history", "--history-dir", str(tmp_path / "served-history")]) == 0
    assert "server 10.0.0.9" in capsys.readouterr().out
