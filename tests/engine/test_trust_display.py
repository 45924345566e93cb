"""Lists that cannot lie: what ``modrag validate`` prints is rendered through a terminal
emulator and checked as a person would see it. Escape sequences, carriage returns and
bidirectional characters in a graph's params and names are shown escaped, so they cannot erase
the line that names a secret read or make a refused graph look clean."""

from __future__ import annotations

import pytest

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, load, save
from modrag_studio.engine.core.formatting import shown
from modrag_studio.engine.trust.gate import disclosure, refusal

pyte = pytest.importorskip("pyte")

CLEAN = "reaches: nothing outside its folder; no host but this machine; no environment variable"
#: up one line and erase it, three times, then the clean graph's line over what was there
ERASE = "\x1b[1A\x1b[2K" * 3 + "\r" + CLEAN + "\x1b[8m"
RLO = "\u202e"  # right-to-left override: "txt.terces" reads as "secret.txt"


def faking_graph(secret: str) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": f"clean{ERASE}"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "prompt", "type": "prompt.build", "params": {"template_file": secret}},
            {"id": "load", "type": "load.files", "params": {"path": f"../x{ERASE}"}},
            {"id": "emb", "type": "embed.model",
             "params": {"kind": "ollama", "model": "m",
                        "host": f"http://{RLO}elpmaxe.live:11434"}},
        ],
        "edges": [{"from": "q.value", "to": "prompt.query"}],
    })


def screen_of(text: str, columns: int = 200, rows: int = 40) -> list[str]:
    """What a terminal shows after ``text`` is written to it (new lines as a tty makes them)."""
    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    stream.feed(text.replace("\n", "\r\n"))
    return [line.rstrip() for line in screen.display]


@pytest.fixture
def received(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    path = tmp_path / "downloads" / "g.json"
    save(faking_graph(str(secret)), path)
    return path, secret


def test_validate_shows_the_secret_read_whatever_the_params_hold(received, capsys):
    path, secret = received
    assert main(["validate", str(path)]) in (0, 2)
    out = capsys.readouterr().out
    assert "\x1b" not in out and RLO not in out and "\r" not in out
    lines = screen_of(out)
    assert any(f"reads {secret}  (prompt.template_file)" in line for line in lines), lines
    assert not any(line.startswith(CLEAN) for line in lines), lines
    assert any("contacts \\u202eelpmaxe.live" in line for line in lines), lines
    assert sum("\\x1b[1A\\x1b[2K" in line for line in lines) == 1  # the load.path line


def test_the_refusal_shows_them_escaped_too(received, capsys):
    path, secret = received
    assert main(["run", str(path), "--input", "question=hi"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and RLO not in err
    assert any(f"reads {secret}" in line for line in screen_of(err))


def test_a_file_name_is_shown_escaped(received):
    path, _ = received
    found = disclosure(load(path), default_registry(), path)
    named = path.with_name("a\x1b[2Kb.json")
    assert "a\\x1b[2Kb.json was not made or run here" in refusal(named, found, "trust it")


@pytest.mark.parametrize("text,expected", [
    ("plain/é/中文 path", "plain/é/中文 path"),
    ("a\x1b[2Kb", "a\\x1b[2Kb"), ("line\r\nnext", "line\\x0d\\x0anext"),
    (f"{RLO}abc\u2066", "\\u202eabc\\u2066"), ("zero\u200bwidth", "zero\\u200bwidth"),
])
def test_control_and_bidirectional_characters_are_escaped(text, expected):
    assert shown(text) == expected

