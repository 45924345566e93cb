"""Count how the node API is used in practice. Run from the project folder:
``.venv/bin/python scripts/count_node_api.py``.

- ``current_resources()`` calls in the node library (a node should use ``ctx.resources``);
- the ContextVars of the project (listed by name);
- imports of node internals by the application: names ``modrag_studio/`` imports from a
  module of a node family (``from modrag_nodes.<family>.<module> import ...`` or
  ``from modrag_nodes.<family> import <module>``) instead of the family's public API
  (``modrag_nodes.<family>.api``), outside the composition root (``composition.py``); shown
  with and without the shared text library (``modrag_nodes.text``, public throughout), by
  module imported, beside the imports of the family APIs;
- production importers (``modrag_studio/``, ``nodes/``) of the engine facade
  (``modrag_studio.engine`` itself) and of the node-author module
  (``modrag_studio.engine.core.node``), and node-library imports of other engine modules;
- ``NodeContext(...)`` constructions outside the engine's own function that builds one.
"""

from __future__ import annotations

import ast
import pathlib
from collections import Counter

NODE_API = "modrag_studio.engine.core.node"
FACADE = "modrag_studio.engine"
CONTEXT_BUILDER = "modrag_studio/engine/core/node.py"  # where the one NodeContext is made


def _trees(*folders: str) -> list[tuple[str, ast.AST]]:
    return [(str(p), ast.parse(p.read_text(encoding="utf-8")))
            for folder in folders for p in sorted(pathlib.Path(folder).rglob("*.py"))]


def _called(node: ast.AST, name: str) -> bool:
    func = getattr(node, "func", None)
    return isinstance(node, ast.Call) and (
        (isinstance(func, ast.Name) and func.id == name)
        or (isinstance(func, ast.Attribute) and func.attr == name))


def _node_modules(node: ast.ImportFrom) -> list[str]:
    """The node-library modules an import statement reads: one per statement, or one per
    imported name that is a module itself (``from modrag_nodes.x import module``)."""
    folder = pathlib.Path("nodes", *node.module.split(".")[1:])
    submodules = [f"{node.module}.{a.name}" for a in node.names
                  if (folder / f"{a.name}.py").exists() or (folder / a.name).is_dir()]
    return submodules or [node.module]


def main() -> None:
    nodes, app = _trees("nodes"), _trees("modrag_studio")
    calls = [path for path, tree in nodes for n in ast.walk(tree)
             if _called(n, "current_resources")]
    print("current_resources() calls in nodes/:", len(calls))
    for path, count in sorted(Counter(calls).items()):
        print(f"  {path}: {count}")

    context_vars = [(path, n.args[0].value if n.args and isinstance(n.args[0], ast.Constant)
                     else "?") for path, tree in nodes + app for n in ast.walk(tree)
                    if _called(n, "ContextVar")]
    print("ContextVars:", len(context_vars))
    for path, name in context_vars:
        print(f"  {name} ({path})")

    imported = [(path, module) for path, tree in app if path != "modrag_studio/composition.py"
                for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                and n.module.startswith("modrag_nodes.") for module in _node_modules(n)]
    internal = [(p, m) for p, m in imported if m.count(".") >= 2 and not m.endswith(".api")]
    outside_text = [i for i in internal if not i[1].startswith("modrag_nodes.text.")]
    print("application imports of node internals:", len(internal),
          f"({len(outside_text)} outside modrag_nodes.text) in",
          len({p for p, _ in internal}), "modules")
    for module, count in Counter(m for _, m in outside_text).most_common():
        print(f"  {module}: {count}")
    print("application imports of the node families' APIs (modrag_nodes.<family>.api):",
          sum(1 for _, m in imported if m.endswith(".api")))

    def importers(trees: list[tuple[str, ast.AST]], module: str) -> list[str]:
        return [path for path, tree in trees for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module == module]

    print("production imports of the engine facade (modrag_studio.engine):",
          len(importers(nodes + app, FACADE)))
    print(f"node-library imports of the node-author module ({NODE_API}):",
          len(importers(nodes, NODE_API)))
    other = Counter(n.module for _, tree in nodes for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) and n.module
                    and n.module.startswith("modrag_studio.") and n.module != NODE_API)
    print("node-library imports of other engine modules:", sum(other.values()))
    for module, count in other.most_common():
        print(f"  {module}: {count}")

    made = [path for path, tree in nodes + app for n in ast.walk(tree)
            if _called(n, "NodeContext") and path != CONTEXT_BUILDER]
    print("NodeContext(...) built outside the engine's builder:", len(made))
    for path in made:
        print(f"  {path}")


if __name__ == "__main__":
    main()
