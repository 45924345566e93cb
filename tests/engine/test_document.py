import json
import sys

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import GraphLoadError, validate
from modrag_studio.engine.core.document import (
    SCHEMA_VERSION,
    GraphDocument,
    dumps,
    json_schema,
    load,
    loads,
    save,
)
from tests.engine.helpers import chain_graph


def test_round_trip_is_equal(tmp_path):
    doc = chain_graph()
    data = doc.model_dump(by_alias=True)
    data["layout"] = {"nodes": {"q": {"x": 10, "y": 20}}, "notes": [{"id": "n1", "text": "hi"}]}
    doc = GraphDocument.model_validate(data)
    path = tmp_path / "g.json"
    save(doc, path)
    assert load(path) == doc
    assert loads(dumps(doc)) == doc


def test_keys_written_in_stable_order():
    doc = chain_graph()
    doc.nodes[3].params = {"separator": "", "b": 1, "a": 2}
    data = json.loads(dumps(doc))
    assert list(data) == ["schema_version", "metadata", "nodes", "edges"]
    assert list(data["nodes"][3]["params"]) == ["a", "b", "separator"]
    assert list(data["nodes"][0]) == ["id", "type", "version", "params"]
    assert list(data["edges"][0]) == ["from", "to"]
    assert dumps(loads(dumps(doc))) == dumps(doc)


def test_save_is_atomic_and_keeps_previous_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "g.json"
    save(chain_graph(), path)
    before = path.read_text()

    def broken_replace(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", broken_replace)
    with pytest.raises(OSError):
        save(chain_graph().model_copy(update={"nodes": []}), path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "invalid JSON at line 1"),
        ("[]", "JSON object at the top level"),
        ('{"nodes": [{"id": "a"}]}', "nodes.0.type"),
        ('{"nodes": [], "edges": [{"from": "a", "to": "b.x"}]}', "edges.0.from"),
        ('{"schema_version": 99}', "newer than this ModRAG Studio supports"),
        ('{"nodes": [], "surprise": 1}', "surprise"),
    ],
)
def test_malformed_files_name_the_place(text, fragment):
    with pytest.raises(GraphLoadError) as info:
        loads(text, source="bad.json")
    assert fragment in str(info.value)
    assert "bad.json" in str(info.value)


def test_non_utf8_and_missing_file(tmp_path):
    with pytest.raises(GraphLoadError, match="not UTF-8"):
        loads(b'{"metadata": {"name": "\xff"}}')
    with pytest.raises(GraphLoadError, match="cannot read"):
        load(tmp_path / "missing.json")


def test_loading_never_imports_code_named_in_the_file():
    registry = default_registry()  # registering the node library imports what it needs
    before = set(sys.modules)
    doc = loads(
        json.dumps(
            {
                "nodes": [
                    {"id": "a", "type": "os.system", "params": {"command": "touch /tmp/pwned"}},
                    {"id": "b", "type": "antigravity:fly", "params": {}},
                    {"id": "c", "type": "json_not_a_module_xyz", "params": {}},
                ]
            }
        )
    )
    problems = validate(doc, registry)
    assert {p.code for p in problems} == {"unknown-type"}
    assert {p.node_id for p in problems} == {"a", "b", "c"}
    assert "antigravity" not in sys.modules
    assert "json_not_a_module_xyz" not in sys.modules
    assert set(sys.modules) - before == set()


def test_renamed_type_maps_through_alias():
    from modrag_studio.engine import NodeRegistry
    from modrag_studio.engine.core.node import NodeType
    from modrag_studio.engine.core.ports import OutputPort

    class NewName(NodeType):
        type_id = "text.new_name"
        aliases = ("text.old_name",)
        outputs = (OutputPort("value", str),)

    registry = NodeRegistry()
    registry.register(NewName)
    doc = loads('{"nodes": [{"id": "a", "type": "text.old_name"}]}')
    problems = validate(doc, registry)
    assert [p.code for p in problems] == ["renamed-type"]
    assert problems[0].severity == "warning"
    assert "text.new_name" in problems[0].message
    assert registry.get("text.old_name") is NewName


def test_unknown_type_suggests_close_names():
    doc = loads('{"nodes": [{"id": "a", "type": "text.uper"}]}')
    problems = validate(doc, default_registry())
    assert problems[0].code == "unknown-type"
    assert "text.upper" in problems[0].message


def test_schema_resource_is_current(root):
    stored = json.loads((root / "resources" / "graph.schema.json").read_text())
    assert stored == json_schema(), "run: modrag schema > resources/graph.schema.json"
    assert stored["properties"]["schema_version"]["default"] == SCHEMA_VERSION
