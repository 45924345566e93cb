"""For random graphs with random stored variants, component links and writers, what a run
actually reads, writes and contacts (seen by an audit hook and the resolver) is always in the
list the entry point decided on: ``modrag run`` (with and without ``--set``) and ``modrag
compare --variant`` (a stored variant, a command-line one), each given ``--trust`` so they run.

Offline: remote hosts are names the resolver refuses; the one loopback server is a port
nobody listens on."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.compose import components
from modrag_studio.engine.compose.inline import collapse
from modrag_studio.engine.core.document import GraphDocument, VariantSpec, load, save
from modrag_studio.engine.trust import gate
from modrag_studio.engine.trust.reach import Reach, is_loopback_host, reach
from tests.engine.helpers import chain_graph

#: what the hook records while a run is watched (one run at a time)
_WATCH: dict[str, Any] = {"on": False, "paths": [], "hosts": []}
_HOOKED = threading.Event()

PLACES = {  # param -> values a graph or a change may give it (inside and outside its folder)
    "template_file": ["t.txt", "../secret/key.txt"],
    "path": ["docs", "../secret/docs"],
    "code_path": ["src", "../secret/src"],
    "folder": ["", "kgdir", "../secret/kg"],
    "host": ["http://127.0.0.1:9", "http://remote.example:11434",
             "http://other.invalid:11434"],
    "link": ["components/shout.subgraph.json", "../secret/shout.subgraph.json"],
}
NODE_PARAMS = {"prompt": ("template_file",), "load": ("path",), "code": ("code_path", "folder"),
               "llm": ("host",)}


def _hook(event: str, args: tuple) -> None:
    if not _WATCH["on"]:
        return
    if event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], str):
        _WATCH["paths"].append(args[0])
    elif event == "socket.connect" and len(args) > 1 and isinstance(args[1], tuple):
        _WATCH["hosts"].append(str(args[1][0]))


def _install_hook() -> None:
    if not _HOOKED.is_set():  # an audit hook cannot be removed: one for the whole session
        sys.addaudithook(_hook)
        _HOOKED.set()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """graphs/ (the graph's folder: docs, a template, sources, a component) and secret/
    beside it holding the same kinds of things."""
    root = tmp_path_factory.mktemp("trust-property")
    for folder in (root / "graphs", root / "secret"):
        (folder / "docs").mkdir(parents=True)
        (folder / "docs" / "a.md").write_text("# A\n\nSome notes.\n")
        (folder / "src" / "pkg").mkdir(parents=True)
        (folder / "src" / "pkg" / "__init__.py").write_text("")
        (folder / "src" / "pkg" / "mod.py").write_text("import pkg\n\ndef f():\n    pass\n")
    (root / "graphs" / "t.txt").write_text("Answer {question}")
    (root / "secret" / "key.txt").write_text("PRIVATE {question}")
    inner = collapse(chain_graph(), ["up", "suffix", "join"], "shout").node("shout")
    for target in (root / "graphs" / "components", root / "secret"):
        components.save_component(inner.subgraph.graph, target / "shout.subgraph.json")
    return root


def _value(param: str, index: int) -> Any:
    values = PLACES[param]
    return values[index % len(values)]


def _params(node_id: str, picks: dict[str, int]) -> dict[str, Any]:
    """The params of ``node_id`` for the chosen places."""
    names = {"template_file": "template_file", "path": "path", "code_path": "path",
             "folder": "folder", "host": "host"}
    return {names[p]: _value(p, picks[p]) for p in NODE_PARAMS[node_id] if p in picks}


def build_graph(root: Path, parts: set[str], picks: dict[str, int],
                variants: list[dict[str, int]]) -> GraphDocument:
    nodes: list[dict[str, Any]] = [{"id": "q", "type": "graph.input",
                                    "params": {"name": "question"}}]
    edges: list[dict[str, str]] = []
    if "prompt" in parts:
        nodes += [{"id": "prompt", "type": "prompt.build", "params": _params("prompt", picks)},
                  {"id": "p_out", "type": "graph.output", "params": {"name": "prompt"}}]
        edges += [{"from": "q.value", "to": "prompt.query"},
                  {"from": "prompt.prompt", "to": "p_out.value"}]
        if "llm" in parts:
            nodes += [{"id": "llm", "type": "llm.model", "params": {
                "backend": "ollama", "model": "m", "retries": 0, "timeout_s": 2,
                **_params("llm", picks)}},
                {"id": "gen", "type": "llm.generate"},
                {"id": "a_out", "type": "graph.output", "params": {"name": "answer"}}]
            edges += [{"from": "prompt.prompt", "to": "gen.prompt"},
                      {"from": "llm.llm", "to": "gen.llm"},
                      {"from": "gen.answer", "to": "a_out.value"}]
    if "load" in parts:
        nodes += [{"id": "load", "type": "load.files", "params": {**_params("load", picks),
                                                                  "glob": "*.md"}},
                  {"id": "l_out", "type": "graph.output", "params": {"name": "documents"}}]
        edges.append({"from": "load.documents", "to": "l_out.value"})
    if "code" in parts:
        nodes += [{"id": "code", "type": "kg.code_graph",
                   "params": {**_params("code", picks), "name": "g"}},
                  {"id": "k_out", "type": "graph.output", "params": {"name": "kg"}}]
        edges.append({"from": "code.graph", "to": "k_out.value"})
    doc = GraphDocument.model_validate({"metadata": {"name": "random"}, "nodes": nodes,
                                        "edges": edges})
    if "component" in parts:
        doc = _with_component(doc, root, picks)
    ids = set(doc.node_ids())
    stored = []
    for number, changes in enumerate(variants):
        params: dict[str, dict[str, Any]] = {}
        for node_id in NODE_PARAMS:
            if node_id in ids and (own := _params(node_id, changes)):
                params[node_id] = own
        if params:
            stored.append({"name": f"v{number}", "params": params})
    return doc.model_copy(update={"variants": [VariantSpec.model_validate(v)
                                               for v in stored] or None})


def _with_component(doc: GraphDocument, root: Path, picks: dict[str, int]) -> GraphDocument:
    """The text chain of the component linked from ``link``, fed by the question."""
    chain = collapse(chain_graph(), ["up", "suffix", "join"], "shout")
    link = root / "graphs" / _value("link", picks.get("link", 0))
    spec = components.instance(link.resolve(), "shout", root / "graphs")
    data = json.loads(json.dumps(doc.model_dump(mode="json", by_alias=True)))
    data["nodes"].append(json.loads(spec.model_dump_json(by_alias=True)))
    data["nodes"].append({"id": "c_out", "type": "graph.output", "params": {"name": "shout"}})
    ports = {e.target_port for e in chain.edges if e.target_node == "shout"}
    data["edges"] += [{"from": "q.value", "to": f"shout.{port}"} for port in ports]
    data["edges"] += [{"from": f"shout.{e.source_port}", "to": "c_out.value"}
                      for e in chain.edges if e.source_node == "shout"][:1]
    return GraphDocument.model_validate(data)


def covered(path: Path, listed: Reach, root: Path) -> bool:
    """Whether a path the run touched is in the list: a listed file or folder (or inside one),
    or beside a file the list says is written (its temporary copy)."""
    files = [Path(f) for _, f in listed.files]
    writes = [Path(word) for _, what in listed.writes for word in what.split()
              if word.startswith(str(root))]
    return any(path == f or f in path.parents for f in files) or any(
        path == w or path.parent == w.parent or w in path.parents for w in writes)


def untouchable(path: Path, root: Path) -> bool:
    """Places outside the graph's folder every run may use: the cache and the config."""
    return root not in path.parents or any(
        part in path.parents or path == part
        for part in (root / "graphs", root / "cache", root / "config"))


def assert_touched_in_list(command: list[str], listed: Reach, resolved: list[str],
                           root: Path) -> tuple[set[Path], set[str]]:
    """Every path the watched run touched and every host it named is in the list it was
    decided on; returns what it touched (resolved paths) and the hosts."""
    touched = {Path(p) if Path(p).is_absolute() else Path.cwd() / p for p in _WATCH["paths"]}
    touched = {Path(str(p.resolve())) for p in touched}
    missing = sorted(str(p) for p in touched
                     if not untouchable(p, root) and not covered(p, listed, root))
    assert not missing, (command, missing, listed.lines())
    hosts = {h.lower() for h in [*resolved, *_WATCH["hosts"]] if not is_loopback_host(h)}
    assert hosts <= {h for _, h in listed.hosts}, (command, hosts, listed.lines())
    return touched, hosts


picks_strategy = st.fixed_dictionaries({name: st.integers(0, 2) for name in PLACES})


INSIDE = {name: 0 for name in PLACES}
OUTSIDE = {name: 1 for name in PLACES}


def offline_resolver(monkeypatch) -> list[str]:
    """Host names resolve on loopback only (others fail as offline); the names looked up
    while the watch is on are collected in the list returned."""
    resolved: list[str] = []
    real_resolve = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        if _WATCH["on"]:
            resolved.append(str(host))
        if not is_loopback_host(str(host)):
            raise OSError("offline: no resolver")
        return real_resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return resolved


@example(parts={"load", "prompt", "llm"}, picks=INSIDE, variants=[OUTSIDE],
         entry="compare-stored", change=("load", 0))  # a stored variant reaching out (M1)
@example(parts={"component", "code"}, picks={**OUTSIDE, "folder": 0}, variants=[INSIDE],
         entry="run", change=("code", 0))  # a link outside (L8), the shared kg file (M4)
@settings(max_examples=24, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(parts=st.sets(st.sampled_from(["prompt", "llm", "load", "code", "component"]),
                     min_size=1),
       picks=picks_strategy, variants=st.lists(picks_strategy, min_size=1, max_size=2),
       entry=st.sampled_from(["run", "run-set", "compare-stored", "compare-change"]),
       change=st.tuples(st.sampled_from(sorted(NODE_PARAMS)), st.integers(0, 2)))
def test_what_a_run_touches_is_in_the_list_it_was_decided_on(sandbox, monkeypatch, parts,
                                                            picks, variants, entry, change):
    _install_hook()
    root = sandbox
    for name in ("config", "cache", "data"):
        monkeypatch.setenv(f"MODRAG_{name.upper()}_DIR", str(root / name))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    trusted = root / "config" / "trusted_graphs.json"
    trusted.unlink(missing_ok=True)
    doc = build_graph(root, parts, picks, variants)
    path = root / "graphs" / "g.json"
    save(doc, path)
    node_id, index = change
    if node_id not in doc.node_ids():
        node_id = doc.node_ids()[-1] if "prompt" not in doc.node_ids() else "prompt"
    param = next(iter(NODE_PARAMS.get(node_id, ("template_file",))))
    real_param = {"code_path": "path"}.get(param, param)
    change_text = f"{node_id}.{real_param}={_value(param, index)}"
    if node_id not in NODE_PARAMS:
        change_text = ""
    stored = [v.name for v in doc.variants or []]
    command = {"run": ["run", str(path)],
               "run-set": ["run", str(path), *(["--set", change_text] if change_text else [])],
               "compare-stored": (["compare", str(path), "--variant", stored[0]] if stored
                                  else ["run", str(path)]),
               "compare-change": (["compare", str(path), "--variant", f"x:{change_text}"]
                                  if change_text else ["run", str(path)])}[entry]
    decided: list[Reach] = []
    accept = gate.accept
    monkeypatch.setattr(gate, "accept", lambda p, found: (decided.append(found),
                                                          accept(p, found))[1])
    resolved = offline_resolver(monkeypatch)
    _WATCH.update(on=True, paths=[], hosts=[])
    try:
        main([*command, "--trust", "--input", "question=hi", "--cache-dir",
              str(root / "cache")])
    finally:
        _WATCH["on"] = False
    listed = decided[0] if decided else Reach()
    touched, hosts = assert_touched_in_list(command, listed, resolved, root)
    if entry in ("run", "compare-stored"):  # nothing but the file runs: validate lists it all
        shown = reach(load(path), default_registry(), path)
        assert not [p for p in touched if not untouchable(p, root)
                    and not covered(p, shown, root)], (command, shown.lines())
        assert hosts <= {h for _, h in shown.hosts}, (command, hosts, shown.lines())
