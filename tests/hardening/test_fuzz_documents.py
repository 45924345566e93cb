"""Fuzzing the graph loader, the validator and the server's request bodies with hypothesis.

Every generated input must end in a ``GraphLoadError`` naming the field or place, or in a
document whose problems each name a node; nothing is imported while loading or validating,
an accepted document survives save/load unchanged, and no request body gives a 5xx.

The default run keeps to a few hundred examples per test; ``-m soak`` runs the large batch
(``MODRAG_FUZZ_EXAMPLES``, default 4000 per test) whose counts the hardening note reports.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import (
    MAX_FILE_BYTES,
    GraphDocument,
    dumps,
    loads,
)
from modrag_studio.engine.core.errors import GraphLoadError
from modrag_studio.engine.core.validation import validate

REGISTRY = default_registry()
TYPE_IDS = sorted(t.type_id for t in REGISTRY)
PORTS = sorted({p.name for t in REGISTRY for p in (*t.inputs, *t.outputs)})
PARAM_NAMES = sorted({name for t in REGISTRY for name in t.Params.model_fields})
FAST = 150
SLOW = int(os.environ.get("MODRAG_FUZZ_EXAMPLES", "4000"))
COUNTS: Counter[str] = Counter()
_FUZZ = dict(deadline=5000, derandomize=False, database=None,
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                    HealthCheck.filter_too_much])

# strategies -------------------------------------------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["", " ", "..", "graph.input", "a.b", "x" * 300, "\u0000", "\ud800"]),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                         inner, max_size=4),
    max_leaves=8,
)
identifiers = st.one_of(
    st.sampled_from(["q", "load", "split", "answer", "n1", "n2", "_x-1", "1bad", "a b", ""]),
    st.text(alphabet="abcXYZ_-.019 é", min_size=1, max_size=12),
    st.text(max_size=70),
)


VALID_IDS = st.sampled_from(["q", "load", "split", "answer", "n1", "n2", "_x-1", "B_2"])
PLAUSIBLE = st.one_of(st.integers(-5, 5000), st.floats(-2, 2), st.booleans(),
                      st.text(max_size=40), st.sampled_from(["", "x" * 2000, "(", "[a-"]))


TYPES_CLEAN = st.one_of(*[st.sampled_from(TYPE_IDS)] * 8, st.sampled_from(["nope", "split.fixd"]))
TYPES_JUNK = st.one_of(*[st.sampled_from(TYPE_IDS)] * 8, st.text(max_size=20))


def maybe(junk: bool, value: st.SearchStrategy, other: st.SearchStrategy = json_values):
    """The plausible value; in a junk document, sometimes anything (wrong types)."""
    return st.one_of(value, value, other) if junk else value


@st.composite
def params_of(draw, junk: bool) -> dict[str, Any]:
    names = st.one_of(st.sampled_from(PARAM_NAMES), st.text(max_size=10)) if junk \
        else st.sampled_from(PARAM_NAMES)
    return draw(st.dictionaries(names, maybe(junk, PLAUSIBLE), max_size=4))


@st.composite
def node_dicts(draw, ids: list[str], junk: bool) -> dict[str, Any]:
    node: dict[str, Any] = {}
    if not junk or draw(st.integers(0, 9)):
        node["id"] = draw(maybe(junk, st.sampled_from(ids)))
    if not junk or draw(st.integers(0, 9)):
        node["type"] = draw(TYPES_JUNK if junk else TYPES_CLEAN)
    if draw(st.booleans()):
        node["version"] = draw(maybe(junk, st.integers(1, 3)))
    if draw(st.booleans()):
        node["params"] = draw(maybe(junk, params_of(junk)))
    if junk and not draw(st.integers(0, 12)):
        node[draw(st.text(max_size=6))] = draw(json_values)
    return node


@st.composite
def edge_dicts(draw, ids: list[str], junk: bool) -> dict[str, Any]:
    port = st.sampled_from(PORTS) if not junk else st.one_of(st.sampled_from(PORTS),
                                                             identifiers)
    endpoint = st.builds(lambda n, p: f"{n}.{p}", st.sampled_from(ids), port)
    edge: dict[str, Any] = {}
    if not junk or draw(st.integers(0, 12)):
        edge["from"] = draw(maybe(junk, endpoint))
    if not junk or draw(st.integers(0, 12)):
        edge["to"] = draw(maybe(junk, endpoint))
    if not draw(st.integers(0, 5)):
        edge["loop"] = draw(maybe(junk, st.fixed_dictionaries(
            {"max_iterations": st.integers(1 - junk, 100 + 20 * junk)})))
    return edge


@st.composite
def documents(draw) -> Any:
    """Junk documents (wrong types, missing and unknown fields) or well-formed ones whose
    graphs are wrong: unknown types, bad params, edges to missing ports, cycles, loops."""
    junk = draw(st.booleans())
    ids = draw(st.lists(identifiers if junk else VALID_IDS, min_size=1, max_size=5))
    doc: dict[str, Any] = {}
    if draw(st.booleans()):
        doc["schema_version"] = draw(maybe(junk, st.integers(1 - 2 * junk, 1 + 2 * junk)))
    if draw(st.booleans()):
        doc["metadata"] = draw(maybe(junk, st.fixed_dictionaries(
            {}, optional={"name": st.text(max_size=20), "description": st.text(max_size=40)})))
    doc["nodes"] = draw(maybe(junk, st.lists(node_dicts(ids, junk), max_size=6)))
    if not junk or draw(st.integers(0, 6)):
        doc["edges"] = draw(maybe(junk, st.lists(edge_dicts(ids, junk), max_size=7)))
    if not draw(st.integers(0, 4)):
        doc["layout"] = draw(maybe(junk, st.fixed_dictionaries({}, optional={
            "nodes": st.dictionaries(st.sampled_from(ids), st.fixed_dictionaries(
                {"x": maybe(junk, st.floats(-1e6, 1e6)), "y": st.integers(-100, 100)}))})))
    if junk and not draw(st.integers(0, 10)):
        doc[draw(st.text(max_size=8))] = draw(json_values)
    return doc if not junk or draw(st.integers(0, 20)) else draw(json_values)


@st.composite
def raw_texts(draw) -> str | bytes:
    """A document as text or bytes, sometimes damaged: cut, non-UTF-8, nested, huge."""
    text = json.dumps(draw(documents()), ensure_ascii=draw(st.booleans()))
    how = draw(st.sampled_from(["plain", "plain", "plain", "bytes", "cut", "bad-utf8",
                                "nested", "huge", "surrogate"]))
    if how == "bytes":
        return text.encode("utf-8", "surrogatepass")
    if how == "cut":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if how == "bad-utf8":
        data = bytearray(text.encode("utf-8", "surrogatepass"))
        data.insert(draw(st.integers(0, len(data))), draw(st.sampled_from([0x80, 0xC3, 0xFF])))
        return bytes(data)
    if how == "nested":
        depth = draw(st.sampled_from([10, 500, 990, 5000, 200_000]))
        inner = "[" * depth + "]" * depth if draw(st.booleans()) else \
            '{"a":' * depth + "1" + "}" * depth
        return ('{"nodes": [{"id": "n", "type": "debug.constant", "params": {"value": "x", '
                f'"deep": {inner}}}}}]}}')
    if how == "huge":
        size = draw(st.sampled_from([10_000, 200_000, 2_000_000]))
        field = draw(st.sampled_from(["id", "type", "title", "params"]))
        big = "x" * size
        node = {"id": "n", "type": "debug.constant",
                field: ({"value": big} if field == "params" else big)}
        return json.dumps({"nodes": [node]})
    return text


# the checks -------------------------------------------------------------------------------
_PLACE = re.compile(r"line \d+, column \d+|byte \d+|top level|larger than|nested (too|more)")


def check_loads_and_validate(raw: str | bytes) -> None:
    before = set(sys.modules)
    try:
        doc = loads(raw, source="fuzz.json")
    except GraphLoadError as exc:
        COUNTS["rejected"] += 1
        _check_rejection(raw, str(exc))
    else:
        COUNTS["accepted"] += 1
        problems = validate(doc, REGISTRY)
        ids = set(doc.node_ids()) | {e.source_node for e in doc.edges} | \
            {e.target_node for e in doc.edges}
        for problem in problems:
            assert problem.node_id in ids, problem
            assert str(problem).startswith(("warning: ", problem.node_id))
        COUNTS["with problems" if problems else "valid"] += 1
        assert loads(dumps(doc)) == doc  # a loaded graph is never lost by saving it
    assert set(sys.modules) == before, sorted(set(sys.modules) - before)


def _check_rejection(raw: str | bytes, message: str) -> None:
    assert message.startswith("fuzz.json: ") and len(message) > len("fuzz.json: ") + 5
    if _PLACE.search(message):
        return
    # A schema rejection: it names the first failing field path as pydantic reports it.
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    data = json.loads(text)
    if not isinstance(data, dict):
        pytest.fail(f"unexpected rejection message: {message}")
    try:
        GraphDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(document)"
        assert f"{where}: " in message, (where, message)
    else:
        pytest.fail(f"rejected a document the model accepts: {message}")


@settings(max_examples=FAST, **_FUZZ)
@given(raw_texts())
def test_fuzzed_documents_load_or_fail_with_a_named_place(raw):
    COUNTS["documents"] += 1
    check_loads_and_validate(raw)


@settings(max_examples=2 * FAST, **_FUZZ)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_loader(raw):
    COUNTS["bytes"] += 1
    check_loads_and_validate(raw)


@pytest.mark.soak
@pytest.mark.timeout(3600)
@settings(max_examples=SLOW, **_FUZZ)
@given(raw_texts())
def test_fuzzed_documents_many(raw):
    COUNTS["documents (slow)"] += 1
    check_loads_and_validate(raw)


def test_file_over_the_size_limit_is_refused_without_parsing():
    big = b'{"nodes": [' + b" " * MAX_FILE_BYTES + b"]}"
    with pytest.raises(GraphLoadError, match="larger than"):
        loads(big, source="big.json")


def test_a_deeply_nested_param_is_refused_at_load_not_at_save():
    """Found by fuzzing: params nested ~300 levels loaded, then saving raised ValueError."""
    inner = '{"a":' * 300 + "1" + "}" * 300
    text = ('{"nodes": [{"id": "n", "type": "debug.constant", "params": {"value": "x", '
            f'"deep": {inner}}}}}]}}')
    with pytest.raises(GraphLoadError, match=r"nodes\.0\.params\.deep\.a\.a.*nested more"):
        loads(text, source="deep.json")
    ok = '{"a":' * 40 + "1" + "}" * 40
    doc = loads(json.dumps({"nodes": [{"id": "n", "type": "debug.constant",
                                       "params": {"deep": json.loads(ok)}}]}))
    assert loads(dumps(doc)) == doc


def test_a_large_valid_chain_loads_and_validates():
    """2,000 nodes in a chain (about 300 KB): loads, validates clean, round-trips."""
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": "x"}}]
    nodes += [{"id": f"n{i}", "type": "debug.passthrough"} for i in range(1, 2000)]
    edges = [{"from": f"n{i}.value", "to": f"n{i + 1}.value"} for i in range(1999)]
    doc = loads(json.dumps({"nodes": nodes, "edges": edges}))
    assert validate(doc, REGISTRY) == []
    assert loads(dumps(doc)) == doc


def test_a_cycle_and_a_missing_port_are_named():
    doc = loads(json.dumps({
        "nodes": [{"id": "a", "type": "debug.passthrough"}, {"id": "b", "type": "text.upper"}],
        "edges": [{"from": "a.value", "to": "b.text"}, {"from": "b.text", "to": "a.value"},
                  {"from": "a.nope", "to": "b.text"}, {"from": "ghost.value", "to": "a.value"}],
    }))
    found = {(p.code, p.node_id) for p in validate(doc, REGISTRY)}
    assert {("cycle", "a"), ("cycle", "b"), ("missing-node", "ghost")} <= found
    assert any(code == "bad-connection" and node == "b" for code, node in found)


def test_type_names_in_a_file_are_never_imported():
    """A type id that looks like a module path stays a string: no import, no attribute access."""
    before = set(sys.modules)
    doc = loads(json.dumps({"nodes": [
        {"id": "evil", "type": "os.system", "params": {"__class__": "x"}},
        {"id": "evil2", "type": "antigravity"},
        {"id": "evil3", "type": "modrag_nodes.debug:Fail"},
    ]}))
    problems = validate(doc, REGISTRY)
    assert {p.node_id for p in problems if p.code == "unknown-type"} == {"evil", "evil2",
                                                                         "evil3"}
    assert set(sys.modules) == before


# server request bodies -------------------------------------------------------------------
@pytest.fixture(scope="module")
def api():
    from fastapi.testclient import TestClient

    from modrag_studio.server import ServerSettings, create_app
    from tests.server.conftest import echo_graph, make_registry

    app = create_app(echo_graph(), ServerSettings(max_body_bytes=50_000, run_timeout_s=20,
                                                allowed_hosts=["testserver"]),
                     registry=make_registry())
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({}, optional={"question": maybe(True, st.text(max_size=50)),
                                        "tone": maybe(True, st.text(max_size=20))})
    .map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.text(max_size=10), json_values, max_size=4)
    .map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    st.just(b'{"question": "' + b"x" * 60_000 + b'"}'),
)


def _post(api, path: str, body: bytes, trace: str, content_type: str):
    response = api.post(path, content=body, params={"trace": trace},
                        headers={"content-type": content_type})
    if path == "/run/stream" and response.status_code == 200:
        assert "event: result" in response.text
    return response


def test_a_form_body_that_is_not_utf8_is_a_422(api):
    """Found by fuzzing: FastAPI's default handler answered 500 (UnicodeDecodeError)."""
    response = api.post("/run", content=b"\xff\xfe{}",
                        headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body"]


@pytest.mark.parametrize("body", [b'{"question": "a\\ud800b"}', b'{"question": 1, "x\\ud800": 2}',
                                  b'{"question": NaN}', b'{"question": [Infinity, -Infinity]}'])
@pytest.mark.parametrize("path", ["/run", "/run/stream"])
def test_a_lone_surrogate_in_a_body_gives_valid_json(api, body, path):
    """Found by fuzzing: a \\ud800 escape or a NaN made the response unencodable (500)."""
    response = api.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code in (200, 422)
    response.content.decode("utf-8")  # valid UTF-8 on the wire
    if path == "/run" or response.status_code == 422:
        assert response.json()
    else:
        assert "A\\ud800B" in response.text and "event: result" in response.text


@settings(max_examples=FAST, **_FUZZ)
@given(body=bodies, path=st.sampled_from(["/run", "/run", "/run/stream"]),
       trace=st.sampled_from(["true", "false", "1", "maybe", ""]),
       content_type=st.sampled_from(["application/json", "application/json",
                                     "text/plain", "application/x-www-form-urlencoded"]))
def test_random_request_bodies_never_give_a_5xx(api, body, path, trace, content_type):
    COUNTS["requests"] += 1
    response = _post(api, path, body, trace, content_type)
    assert response.status_code < 500, (response.status_code, response.text[:300])


@pytest.mark.soak
@pytest.mark.timeout(3600)
@settings(max_examples=SLOW // 4, **_FUZZ)
@given(body=bodies, path=st.sampled_from(["/run", "/run/stream"]),
       trace=st.sampled_from(["true", "false"]),
       content_type=st.sampled_from(["application/json", "text/plain"]))
def test_random_request_bodies_many(api, body, path, trace, content_type):
    COUNTS["requests (slow)"] += 1
    response = _post(api, path, body, trace, content_type)
    assert response.status_code < 500, (response.status_code, response.text[:300])


def teardown_module() -> None:
    if COUNTS:
        print("\nfuzz examples run:", dict(COUNTS), file=sys.stderr)
