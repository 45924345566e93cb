"""The property of ``test_trust_property`` for the other entry points a test can drive
headless: ``modrag eval`` (a tiny evaluation set), ``modrag tune`` (a search space whose
values reach outside the folder, a budget of 2), ``modrag index`` (BM25 over the loaded
documents), ``modrag mcp`` (its tools called in-process, as a client's ``tools/call`` does)
and ``modrag serve`` (one ``POST /run`` in-process; it lists what it reaches, never asks).
What each reads, writes and contacts is in the list it decided on (or listed). Offline, as
there. Tune decides on its trials, then stops: these graphs have no ranking for it to
score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import uvicorn
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from modrag_studio.cli import main
from modrag_studio.engine.core.document import GraphDocument, save
from modrag_studio.engine.trust import gate
from modrag_studio.engine.trust.reach import Reach
from tests.engine.test_trust_property import (
    _WATCH,
    INSIDE,
    OUTSIDE,
    PLACES,
    _install_hook,
    assert_touched_in_list,
    build_graph,
    offline_resolver,
    picks_strategy,
    sandbox,
)

__all__ = ["sandbox"]  # the fixture, shared with the first property test

SPACES = {"prompt": "prompt.template_file", "load": "load.path", "code": "code.folder",
          "llm": "llm.host"}
PLACE_OF = {"prompt": "template_file", "load": "path", "code": "folder", "llm": "host"}


def _command(entry: str, path: Path, root: Path, ids: list[str]) -> list[str]:
    evalset = root / "graphs" / "set.jsonl"
    evalset.write_text('{"id": "q1", "question": "hi", "reference_answer": "hi"}\n'
                       '{"id": "q2", "question": "ho", "reference_answer": "ho"}\n')
    output = next((f"{n}.value" for n in ("a_out", "p_out", "c_out", "l_out", "k_out")
                   if n in ids), "q.value")
    node = next((n for n in SPACES if n in ids), None)
    space = ([] if node is None else
             ["--space", f"{SPACES[node]}=" + ",".join(v for v in PLACES[PLACE_OF[node]] if v)])
    return {"eval": ["eval", str(path), "--evalset", str(evalset)],
            "index": ["index", str(path), "--quiet"],
            "tune": ["tune", str(path), "--evalset", str(evalset), "--output", output,
                     "--budget", "2", "--held-out", "0.5", "--min-held-out", "1", *space,
                     "--no-save"],
            "mcp": ["mcp", str(path)], "serve": ["serve", str(path)]}[entry]


def _with_index(doc: GraphDocument) -> GraphDocument:
    data = doc.model_dump(mode="json", by_alias=True)
    data["nodes"] += [{"id": "split", "type": "split.recursive", "params": {}},
                      {"id": "bm25", "type": "bm25.index", "params": {}}]
    data["edges"] += [{"from": "load.documents", "to": "split.documents"},
                      {"from": "split.chunks", "to": "bm25.chunks"}]
    return GraphDocument.model_validate(data)


def _post_a_question(app: Any, **_: Any) -> None:
    """``uvicorn.run`` for ``modrag serve``: one client's ``POST /run``, in-process."""
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.post("/run", json={"question": "hi"})


async def _call_each_tool(tools: list[Any]) -> None:
    from modrag_studio.server.mcp_tools import call_tool

    async def report(*_: Any) -> None:
        return None

    for tool in tools:
        await call_tool(tool, {"question": "hi"}, report)


@example(parts={"load", "prompt", "llm"}, picks=INSIDE, variants=[OUTSIDE], entry="tune")
@example(parts={"component", "code"}, picks={**OUTSIDE, "folder": 0}, variants=[INSIDE],
         entry="index")
@example(parts={"load", "prompt"}, picks=OUTSIDE, variants=[INSIDE], entry="mcp")
@example(parts={"load", "prompt", "llm"}, picks=OUTSIDE, variants=[INSIDE], entry="serve")
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(parts=st.sets(st.sampled_from(["prompt", "llm", "load", "code", "component"]),
                     min_size=1),
       picks=picks_strategy, variants=st.lists(picks_strategy, min_size=1, max_size=2),
       entry=st.sampled_from(["eval", "tune", "index", "mcp", "serve"]))
def test_eval_tune_index_and_mcp_touch_only_what_they_listed(sandbox, monkeypatch, parts,
                                                             picks, variants, entry):
    _install_hook()
    root = sandbox
    for name in ("config", "cache", "data"):
        monkeypatch.setenv(f"MODRAG_{name.upper()}_DIR", str(root / name))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    (root / "config" / "trusted_graphs.json").unlink(missing_ok=True)
    doc = build_graph(root, parts | ({"load"} if entry == "index" else set()), picks,
                      variants)
    if entry == "index":  # a store to index: BM25 over the loaded documents
        doc = _with_index(doc)
    path = root / "graphs" / "g.json"
    save(doc, path)
    command = _command(entry, path, root, list(doc.node_ids()))
    decided: list[Reach] = []
    accept = gate.accept
    monkeypatch.setattr(gate, "accept", lambda p, found: (decided.append(found),
                                                          accept(p, found))[1])
    from modrag_studio.server import mcp_transport

    monkeypatch.setattr(mcp_transport, "build_server", lambda tools: tools)
    monkeypatch.setattr(mcp_transport, "serve_stdio", _call_each_tool)
    monkeypatch.setattr(uvicorn, "run", _post_a_question)
    from modrag_studio.engine.trust import reach as reach_module

    listed_at_start = reach_module.reach  # serve lists what it reaches, asks nothing

    def reach_listed(*args: Any, **kwargs: Any) -> Reach:
        found = listed_at_start(*args, **kwargs)
        decided.append(found)
        return found

    if entry == "serve":
        monkeypatch.setattr(reach_module, "reach", reach_listed)
    resolved = offline_resolver(monkeypatch)
    _WATCH.update(on=True, paths=[], hosts=[])
    try:
        code = main({"mcp": [*command, "--trust"], "serve": command}.get(
            entry, [*command, "--trust", "--cache-dir", str(root / "cache")]))
    finally:
        _WATCH["on"] = False
    assert code in (0, 1, 2), (command, code)
    listed = decided[0] if decided else Reach()
    assert_touched_in_list(command, listed, resolved, root)

