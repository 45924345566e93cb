import json

import pytest

from modrag_studio.cli import main
from modrag_studio.engine.core.document import save
from tests.engine.helpers import chain_graph, graph, node


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "g.json"
    save(chain_graph(), path)
    return path


def test_run_prints_outputs_and_writes_trace(graph_file, tmp_path, capsys):
    trace = tmp_path / "trace.json"
    code = main(["run", str(graph_file), "--input", "question=hey", "--json",
                 "--trace-out", str(trace), "--cache-dir", str(tmp_path / "c")])
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out) == {"status": "ok", "outputs": {"answer": "HEY!"}}
    assert "done" in captured.err and "up (text.upper)" in captured.err
    data = json.loads(trace.read_text())
    assert [v["node_id"] for v in data["visits"]] == ["q", "suffix", "up", "join", "out"]


def test_set_overrides_a_param(graph_file, tmp_path, capsys):
    code = main(["run", str(graph_file), "-i", "question=a", "--set", "suffix.value=?", "-q",
                 "--no-cache"])
    assert code == 0
    assert capsys.readouterr().out.strip().splitlines() == ["== answer ==", "A?"]


def test_exit_codes(graph_file, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    save(graph([node("u", "text.upper")], []), bad)
    assert main(["validate", str(graph_file)]) == 0
    assert main(["validate", str(bad)]) == 2
    assert "u.text: required input 'text'" in capsys.readouterr().out
    assert main(["run", str(bad)]) == 2
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    assert main(["run", str(broken)]) == 2
    assert "invalid JSON at line 1" in capsys.readouterr().err
    failing = tmp_path / "fail.json"
    save(graph([node("f", "debug.fail", message="kaput")], []), failing)
    assert main(["run", str(failing), "--no-cache", "-q"]) == 1
    assert "node 'f' (debug.fail) failed: RuntimeError: kaput" in capsys.readouterr().err
    assert main(["run", str(graph_file), "-i", "nope=1"]) == 2
    assert main(["run", str(graph_file), "--set", "ghost.x=1"]) == 2


def test_validate_json_and_nodes_and_schema(graph_file, capsys):
    assert main(["validate", "--json", str(graph_file)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["nodes", "--json"]) == 0
    types = {t["type"]: t for t in json.loads(capsys.readouterr().out)}
    assert types["text.concat"]["inputs"][0]["multiple"] is True
    assert types["debug.sleep"]["params"]["properties"]["seconds"]["default"] == 1.0
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "ModRAG Studio graph document"


def test_a_missing_input_is_told_in_the_words_of_each_front_end(graph_file, tmp_path, capsys):
    """The engine says what is missing; the command line adds how to give it there."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, load

    result = Executor(default_registry(), work_dir=tmp_path / "w").run(load(graph_file))
    message = result.trace.last_visit("q").error.message
    assert message == "graph input 'question' was not given and has no default"
    assert "--input" not in message  # the studio shows this text: no command-line advice
    assert main(["run", str(graph_file), "--cache-dir", str(tmp_path / "c")]) == 1
    assert "(give it with --input question=...)" in capsys.readouterr().err
