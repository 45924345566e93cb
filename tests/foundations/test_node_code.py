"""Cache keys know the node's code: an edited plug-in re-runs, and the trace says why."""

from __future__ import annotations

import importlib
import shutil
import sys
import textwrap

from modrag_nodes.graph_io import GraphOutput
from modrag_studio.engine.cache import NodeCache
from modrag_studio.engine.executor import Executor
from modrag_studio.engine.registry import NodeRegistry
from tests.engine.helpers import edge, graph, node

PLUGIN = '''
from typing import Any

from modrag_studio.engine.node import NodeContext, NodeType
from modrag_studio.engine.ports import OutputPort


class Greet(NodeType):
    type_id = "plug.greet"
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        return {{"text": {value!r}}}


def register(registry):
    registry.register(Greet)
'''


def _install(folder, value: str):
    """(Re)write the plug-in package and import it afresh; returns its registry."""
    package = folder / "greet_plugin_pkg"
    package.mkdir(exist_ok=True)
    shutil.rmtree(package / "__pycache__", ignore_errors=True)
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(value=value)))
    sys.modules.pop("greet_plugin_pkg", None)
    importlib.invalidate_caches()
    module = importlib.import_module("greet_plugin_pkg")
    registry = NodeRegistry()
    registry.register(GraphOutput)
    module.register(registry)
    return registry


def _run(registry, cache_dir, work_dir):
    doc = graph([node("g", "plug.greet"), node("out", "graph.output", name="text")],
                [edge("g.text", "out.value")], name="plugin-demo")
    executor = Executor(registry, NodeCache(disk_dir=cache_dir), work_dir=work_dir)
    return executor.run(doc)


def test_changed_node_code_re_runs_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache_dir, work = tmp_path / "cache", tmp_path / "work"
    try:
        first = _run(_install(tmp_path, "hello from v1"), cache_dir, work)
        assert first.outputs == {"text": "hello from v1"}
        again = _run(_install(tmp_path, "hello from v1"), cache_dir, work)  # same code
        assert again.trace.last_visit("g").status == "cached"

        changed = _run(_install(tmp_path, "hello from version two"), cache_dir, work)
        visit = changed.trace.last_visit("g")
        assert visit.status == "done"
        assert visit.cache_reason == "node code changed"
        assert changed.outputs == {"text": "hello from version two"}
        assert visit.cache_key != first.trace.last_visit("g").cache_key
    finally:
        sys.modules.pop("greet_plugin_pkg", None)
