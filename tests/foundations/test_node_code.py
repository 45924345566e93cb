"""Cache keys know the node's code: an edited plug-in re-runs, and the trace says why."""

from __future__ import annotations

import importlib
import shutil
import sys
import textwrap

from modrag_nodes.graph_io import GraphOutput
from modrag_studio.engine.cache.code_identity import _imported_modules, code_identity
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from tests.engine.helpers import edge, graph, node

PLUGIN = '''
from typing import Any

from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import OutputPort


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


HELPER_NODE = '''
from typing import Any

from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import OutputPort


class Shout(NodeType):
    type_id = "plug.shout"
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        from shout_plugin_pkg.wording import shout  # a lazy import counts too

        return {"text": shout("hello")}
'''


def _install_with_helper(folder, ending: str):
    """A plug-in whose node module is unchanged while its helper module changes."""
    package = folder / "shout_plugin_pkg"
    package.mkdir(exist_ok=True)
    shutil.rmtree(package / "__pycache__", ignore_errors=True)
    (package / "__init__.py").write_text("")
    (package / "nodes.py").write_text(textwrap.dedent(HELPER_NODE))
    (package / "wording.py").write_text(f"def shout(text):\n    return text.upper() + {ending!r}\n")
    for name in ("shout_plugin_pkg", "shout_plugin_pkg.nodes", "shout_plugin_pkg.wording"):
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    code_identity.cache_clear()  # a new process: identities are computed once per class
    _imported_modules.cache_clear()
    module = importlib.import_module("shout_plugin_pkg.nodes")
    registry = NodeRegistry()
    registry.register(GraphOutput)
    registry.register(module.Shout)
    return registry


def test_editing_a_helper_module_of_a_node_invalidates_its_cache_entry(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache_dir, work = tmp_path / "cache", tmp_path / "work"
    doc = graph([node("s", "plug.shout"), node("out", "graph.output", name="text")],
                [edge("s.text", "out.value")], name="helper-demo")

    def run(registry):
        return Executor(registry, NodeCache(disk_dir=cache_dir), work_dir=work).run(doc)

    try:
        first = run(_install_with_helper(tmp_path, "!"))
        assert first.outputs == {"text": "HELLO!"}
        assert run(_install_with_helper(tmp_path, "!")).trace.last_visit("s").status == "cached"

        edited = run(_install_with_helper(tmp_path, "?!"))
        visit = edited.trace.last_visit("s")
        assert visit.status == "done"
        assert visit.cache_reason == "node code changed"
        assert edited.outputs == {"text": "HELLO?!"}
    finally:
        for name in ("shout_plugin_pkg", "shout_plugin_pkg.nodes", "shout_plugin_pkg.wording"):
            sys.modules.pop(name, None)


def test_the_helper_scan_finds_imports_nested_anywhere(tmp_path, monkeypatch):
    """Imports in functions, methods, ``if``/``try``/``with``/loops, ``except`` and ``match``
    clauses all count; the scan walks statements only."""
    package = tmp_path / "scanpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    helpers = [f"h{i}" for i in range(9)]
    for name in helpers:
        (package / f"{name}.py").write_text("VALUE = 1\n")
    (package / "main.py").write_text(textwrap.dedent('''
        import scanpkg.h0
        def f():
            from scanpkg import h1
        class C:
            def m(self):
                if True:
                    import scanpkg.h2
                else:
                    import scanpkg.h3
        try:
            pass
        except ImportError:
            from scanpkg.h4 import VALUE
        finally:
            import scanpkg.h5
        with open(__file__):
            for _ in ():
                import scanpkg.h6
        match 1:
            case 1:
                import scanpkg.h7
        while False:
            from scanpkg.h8 import VALUE as V
        text = "import scanpkg.not_a_module"
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _imported_modules("scanpkg.main", "scanpkg")
    assert sorted(found) == [f"scanpkg.{name}" for name in helpers]
