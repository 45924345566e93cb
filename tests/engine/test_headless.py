"""The engine and node library run with Qt made unimportable (as on a server)."""

import subprocess
import sys
import textwrap


def test_engine_and_nodes_run_without_qt(root):
    script = textwrap.dedent(
        """
        import sys

        class BlockQt:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"PySide6", "PyQt5", "PyQt6", "NodeGraphQt", "Qt"}:
                    raise ImportError(f"{name} is blocked in this test")
                return None

        sys.meta_path.insert(0, BlockQt())
        from modrag_studio.engine import Executor, NodeCache, loads
        from modrag_studio.composition import default_registry
        registry = default_registry()
        import modrag_nodes
        for module in modrag_nodes.iter_node_modules():
            __import__(module)
        doc = loads('''{"nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "u", "type": "text.upper"},
            {"id": "o", "type": "graph.output", "params": {"name": "answer"}}],
          "edges": [{"from": "q.value", "to": "u.text"}, {"from": "u.text", "to": "o.value"}]}''')
        result = Executor(registry, cache=NodeCache()).run(doc, {"question": "ok"})
        qt = sorted(m for m in sys.modules if m.split(".")[0] in {"PySide6", "NodeGraphQt", "Qt"})
        print(result.outputs["answer"], len(registry), qt)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answer, count, qt_modules = done.stdout.split(maxsplit=2)
    assert answer == "OK"
    assert int(count) >= 10
    assert qt_modules.strip() == "[]"


def test_no_qt_import_in_engine_or_nodes_source(root):
    offenders = []
    for folder in ("modrag_studio/engine", "nodes", "modrag_studio/commands"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if any(f"import {m}" in text or f"from {m}" in text
                   for m in ("PySide6", "NodeGraphQt", "PyQt", "Qt ")):
                offenders.append(str(path.relative_to(root)))
    assert offenders == []


def test_every_builtin_node_module_imports_and_registers():
    from modrag_nodes import register_builtin_nodes
    from modrag_studio.engine.core.registry import NodeRegistry

    registry = NodeRegistry()
    register_builtin_nodes(registry)
    assert registry.load_errors == []
    for node_type in registry:
        assert node_type.description, f"{node_type.type_id} has no description"
        node_type.Params.model_json_schema()
        assert node_type.category


def test_registering_the_node_library_imports_no_numerics_or_backends(root):
    """Registration runs at every studio and command start: numpy alone cost about 0.25 s of
    the studio's launch, torch, Chroma or llama.cpp far more."""
    heavy = ("numpy", "scipy", "torch", "sentence_transformers", "chromadb", "lancedb",
             "xllamacpp", "ollama", "bm25s", "pyarrow")
    script = ("import sys\n"
              "from modrag_studio.composition import default_registry\n"
              "registry = default_registry()\n"
              "assert not registry.load_errors, registry.load_errors\n"
              f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
