"""The package map of docs/architecture.md, held against the code's own imports.

Every import counts (module level and inside functions). A package may import itself and
the packages its rule names; anything else, or any cycle between modules or between the node
library's families (its sub-packages), fails with the importing file and line. Imports made
only for type checking (``if TYPE_CHECKING:``) count for the loops of modules, and inside
the studio (``ui/``) for its sub-packages too: no import, even one that never runs, goes
round a loop of modules or back up between the studio's sub-packages or the layers of
evaluation/generation (``reading`` <- ``checks`` <- the rest).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"modrag_studio": ROOT / "modrag_studio", "modrag_nodes": ROOT / "nodes"}

ENGINE_BELOW_RUN = {"engine.core", "engine.compose", "engine.trust", "engine.cache"}
#: package -> the packages it may import (besides itself). Mirrors docs/architecture.md.
ALLOWED: dict[str, set[str]] = {
    "engine.core": set(),
    "engine.compose": {"engine.core"},
    "engine.trust": {"engine.core", "engine.compose"},
    "engine.cache": {"engine.core", "engine.trust"},
    "engine.run": {"engine.core", "engine.compose", "engine.trust", "engine.cache"},
    "engine.evidence": ENGINE_BELOW_RUN | {"engine.run"},
    "engine.history": ENGINE_BELOW_RUN | {"engine.run"},
    "engine.layout": {"engine.core", "engine.compose"},
    "engine.edit": {"engine.core", "engine.compose", "engine.layout"},
    "engine": {"engine.core", "engine.compose", "engine.trust", "engine.cache",
               "engine.run"},  # the facade
    "nodes": ENGINE_BELOW_RUN | {"engine.run", "engine.evidence"},
    "composition": {"engine.core", "engine.evidence", "nodes"},
    "evaluation": {"engine.*", "nodes", "composition"},
    "run_tracing": {"engine.*"},
    "reporting": {"engine.*", "composition"},
    "server": {"engine.*", "composition", "evaluation", "run_tracing", "reporting"},
    "distributed": {"engine.*", "nodes", "composition", "evaluation"},
    "commands": {"engine.*", "nodes", "composition", "evaluation", "server", "distributed",
                 "run_tracing", "reporting"},
    "cli": {"commands"},
    "ui": {"engine.*", "nodes", "composition", "evaluation", "distributed", "commands",
           "run_tracing", "reporting"},
    "__main__": {"ui"},
    "package": set(),  # modrag_studio/__init__.py
}
QT_MODULES = ("PySide6", "NodeGraphQt", "Qt", "shiboken6")
NODEGRAPHQT_ADAPTER = "ui.canvas.adapter"
MAX_MODULES_PER_FOLDER = 16
MAX_LINES = 600


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported name, dotted
    path: Path
    line: int


def _module_name(root: str, path: Path) -> str:
    parts = [root, *path.relative_to(SOURCES[root]).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(root, p): p for root, folder in SOURCES.items()
            for p in sorted(folder.rglob("*.py"))}


def _imports(module: str, path: Path, type_only: bool = False) -> list[Import]:
    """The imports of a module; ``if TYPE_CHECKING:`` blocks only with ``type_only``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                and not type_only):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [Import(module, name, path, node.lineno) for name in names]
    return found


MODULES = _modules()
IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path)]
#: every import, those made only for type checking included
TYPED_IMPORTS = [imp for module, path in MODULES.items()
                 for imp in _imports(module, path, type_only=True)]
#: the studio's imports, those made only for type checking included
STUDIO_IMPORTS = [imp for imp in TYPED_IMPORTS if imp.source.startswith("modrag_studio.ui")]


def _resolve(name: str) -> str | None:
    """The project module an imported name lives in (None outside the project)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def package_of(module: str) -> str:
    """The architecture package of a module: ``engine.run``, ``nodes``, ``ui``, ..."""
    root, _, rest = module.partition(".")
    if root == "modrag_nodes":
        return "nodes"
    parts = rest.split(".")
    if not rest:
        return "package"
    if parts[0] == "engine" and len(parts) > 1:
        return f"engine.{parts[1]}"
    return parts[0]


def _allowed(source: str, target: str) -> bool:
    if source == target:
        return True
    rules = ALLOWED[source]
    return target in rules or ("engine.*" in rules and target.startswith("engine"))


def test_every_package_has_a_rule():
    assert {package_of(m) for m in MODULES} <= set(ALLOWED)


def test_imports_follow_the_allowed_direction():
    wrong = []
    for imp in IMPORTS:
        target = _resolve(imp.target)
        if target is None:
            continue
        source_pkg, target_pkg = package_of(imp.source), package_of(target)
        if not _allowed(source_pkg, target_pkg):
            wrong.append(f"{imp.path.relative_to(ROOT)}:{imp.line}: {source_pkg} imports "
                         f"{target_pkg} ({imp.target})")
    assert wrong == []


def module_cycles(imports: list[Import], resolve=_resolve) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        target = resolve(imp.target)
        if target is not None and target != imp.source:
            graph[imp.source].add(target)
    return strongly_connected(graph)


def test_no_import_cycle_between_modules():
    assert module_cycles(IMPORTS) == []


def test_no_import_cycle_between_modules_even_for_type_checking():
    assert module_cycles(TYPED_IMPORTS) == []


def test_type_checking_imports_are_counted_only_when_asked(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                     "    from modrag_studio.ui.shell.run_features import RunFeatures\n",
                     encoding="utf-8")
    up = "modrag_studio.ui.shell.run_features.RunFeatures"
    assert up in [imp.target for imp in _imports("modrag_studio.ui.canvas.x", probe, True)]
    assert up not in [imp.target for imp in _imports("modrag_studio.ui.canvas.x", probe)]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of two or more modules that import each other, directly or around a loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: the graph has hundreds of modules
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def node_family(module: str) -> str | None:
    """The sub-package (or top-level module) of the node library a module belongs to:
    ``modrag_nodes.grounding.claims`` -> ``grounding``; None outside the library."""
    parts = module.split(".")
    return parts[1] if parts[0] == "modrag_nodes" and len(parts) > 1 else None


def studio_part(module: str) -> str | None:
    """The studio sub-package a module belongs to: ``modrag_studio.ui.canvas.view`` ->
    ``canvas``; None outside ``ui/``'s sub-packages."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["modrag_studio", "ui"] and len(parts) > 3 else None


def family_cycles(imports: list[Import], resolve=_resolve, family=node_family) -> list[str]:
    """Each loop between families (node families, or with ``family=studio_part`` the
    studio's sub-packages), as the imports that make it (file:line)."""
    graph: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for imp in imports:
        target = resolve(imp.target)
        source_family, target_family = family(imp.source), family(target or "")
        if source_family and target_family and source_family != target_family:
            graph[source_family].add(target_family)
            where[source_family, target_family].append(
                f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.target}")
    found = []
    for group in strongly_connected(graph):
        found += [f"{{{', '.join(group)}}}: {line}" for a in group for b in group
                  for line in where.get((a, b), [])]
    return found


def test_no_import_cycle_between_node_families():
    """The folder test sees nodes/ as one package; inside it, the families (grounding,
    retrieval, llm, ...) import one way too."""
    assert family_cycles(IMPORTS) == []


def test_no_import_cycle_between_studio_sub_packages():
    """The folder test sees ui/ as one package; inside it, jobs, panels, canvas, inspection,
    run, evaluate, present, history, subgraphs and shell import one way too, type-only
    imports included."""
    assert family_cycles(STUDIO_IMPORTS, family=studio_part) == []


def test_the_studio_cycle_finder_sees_a_loop_the_code_once_had():
    here = ROOT / "modrag_studio" / "ui" / "x.py"
    back = Import("modrag_studio.ui.inspection.overlays", "modrag_studio.ui.canvas.elide_id",
                  here, 1)
    loop = [Import("modrag_studio.ui.canvas.subgraph_view",
                   "modrag_studio.ui.inspection.overlays", here, 2), back]
    assert family_cycles(loop, lambda name: name, studio_part) == [
        "{canvas, inspection}: modrag_studio/ui/x.py:2: modrag_studio.ui.inspection.overlays",
        "{canvas, inspection}: modrag_studio/ui/x.py:1: modrag_studio.ui.canvas.elide_id"]
    assert family_cycles([back], lambda name: name, studio_part) == []


def test_the_family_cycle_finder_names_the_imports():
    here = ROOT / "nodes" / "x.py"
    imports = [Import("modrag_nodes.a.m", "modrag_nodes.b.n.f", here, 3),
               Import("modrag_nodes.b.n", "modrag_nodes.a.m.g", here, 7),
               Import("modrag_nodes.c.k", "modrag_nodes.a.m.g", here, 9)]
    module_of = lambda name: name.rpartition(".")[0]  # noqa: E731
    assert family_cycles(imports, module_of) == ["{a, b}: nodes/x.py:3: modrag_nodes.b.n.f",
                                                 "{a, b}: nodes/x.py:7: modrag_nodes.a.m.g"]


def test_the_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


GENERATION = "modrag_studio.evaluation.generation"
#: evaluation/generation's sub-packages, lowest first; the rest of generation sits above them
GENERATION_LAYERS = ("reading", "checks")


def generation_layer(module: str) -> int | None:
    """How high a module sits in ``evaluation/generation``: 0 in ``reading``, 1 in ``checks``,
    2 elsewhere in generation; None outside it."""
    if module != GENERATION and not module.startswith(f"{GENERATION}."):
        return None
    sub = module.removeprefix(GENERATION).lstrip(".").partition(".")[0]
    return GENERATION_LAYERS.index(sub) if sub in GENERATION_LAYERS else len(GENERATION_LAYERS)


def imports_up(imports: list[Import], resolve=_resolve) -> list[str]:
    """Imports (file:line) from a lower layer of generation to a higher one."""
    wrong = []
    for imp in imports:
        source, target = generation_layer(imp.source), generation_layer(resolve(imp.target) or "")
        if source is not None and target is not None and target > source:
            wrong.append(f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.target}")
    return wrong


def test_generation_imports_run_down_from_the_top_to_checks_to_reading():
    """Inside evaluation/generation the rest imports ``checks`` and ``reading``, ``checks``
    imports ``reading``, and ``reading`` nothing else of generation, type-only imports
    included."""
    assert imports_up(TYPED_IMPORTS) == []


def test_the_layer_finder_names_an_import_up():
    here = ROOT / "modrag_studio" / "x.py"
    imports = [Import(f"{GENERATION}.reading.terms", f"{GENERATION}.checks.verify.f", here, 4),
               Import(f"{GENERATION}.checks.verify", f"{GENERATION}.reading.terms.g", here, 5),
               Import(f"{GENERATION}.reading.content", f"{GENERATION}.report.R", here, 6),
               Import(f"{GENERATION}.report", "modrag_studio.evaluation.evalset.E", here, 7),
               Import(f"{GENERATION}.reading.subjects", f"{GENERATION}.reading.terms.k", here, 8)]
    module_of = lambda name: name.rpartition(".")[0]  # noqa: E731
    assert imports_up(imports, module_of) == [
        f"modrag_studio/x.py:4: {GENERATION}.checks.verify.f",
        f"modrag_studio/x.py:6: {GENERATION}.report.R"]


#: node-library packages whose every module is public (a shared library, not a node family)
SHARED_NODE_LIBRARIES = {"text"}
#: the application's imports, those made only for type checking included
APPLICATION_IMPORTS = [imp for module, path in MODULES.items()
                       if module.startswith("modrag_studio.")
                       for imp in _imports(module, path, type_only=True)]


def family_internals(imports: list[Import], resolve=_resolve) -> list[str]:
    """Imports of a node family's own modules (file:line) instead of its ``api`` module."""
    wrong = []
    for imp in imports:
        parts = (resolve(imp.target) or "").split(".")
        if (parts[0] == "modrag_nodes" and len(parts) > 2
                and parts[1] not in SHARED_NODE_LIBRARIES and parts[2] != "api"):
            wrong.append(f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.target}")
    return wrong


def test_the_application_reaches_node_families_only_through_their_api():
    """Evaluation, commands, the studio, ... import ``modrag_nodes.<family>.api``, never a
    family's own modules (docs/writing-nodes.md); the text library is public throughout."""
    assert family_internals(APPLICATION_IMPORTS) == []


def test_the_internals_finder_names_the_import_and_lets_the_api_and_text_pass():
    here = ROOT / "modrag_studio" / "x.py"
    imports = [Import("modrag_studio.a", "modrag_nodes.vectorstore.chroma_store", here, 1),
               Import("modrag_studio.a", "modrag_nodes.vectorstore.api.VectorIndex", here, 2),
               Import("modrag_studio.a", "modrag_nodes.text.words.words", here, 3)]
    assert family_internals(imports) == [
        "modrag_studio/x.py:1: modrag_nodes.vectorstore.chroma_store"]


def test_every_name_of_a_family_api_resolves():
    import importlib

    apis = sorted(m for m in MODULES if m.startswith("modrag_nodes.") and m.endswith(".api"))
    assert len(apis) >= 8
    missing = []
    for name in apis:
        api = importlib.import_module(name)
        missing += [f"{name}.{attr}" for attr in api.__all__ if not hasattr(api, attr)]
        with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
            api.not_exported  # noqa: B018
    assert missing == []


def test_qt_only_in_the_studio_and_nodegraphqt_only_in_its_adapter():
    wrong = []
    for imp in IMPORTS:
        top = imp.target.split(".")[0]
        if top not in QT_MODULES:
            continue
        pkg = package_of(imp.source)
        if pkg != "ui" or (top == "NodeGraphQt" and not imp.source.endswith(NODEGRAPHQT_ADAPTER)):
            wrong.append(f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.target}")
    assert wrong == []


def test_the_engine_never_imports_the_node_library_or_the_application():
    wrong = [f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.target}" for imp in IMPORTS
             if package_of(imp.source).startswith("engine")
             and (imp.target.startswith("modrag_nodes")
                  or imp.target.startswith("modrag_studio.composition"))]
    assert wrong == []


@pytest.mark.parametrize("root", sorted(SOURCES))
def test_folders_stay_small(root):
    big = {}
    for folder in [SOURCES[root], *sorted(p for p in SOURCES[root].rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            big[str(folder.relative_to(ROOT))] = len(modules)
    assert big == {}


def test_modules_stay_small():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_one_state_vocabulary():
    """The trace's visit states are the states the canvas knows, colours and all."""
    from typing import get_args

    from modrag_studio.engine.run.run_state import NodeStatus
    from modrag_studio.engine.run.trace import NODE_STATES, VISIT_STATES, VisitStatus

    assert get_args(VisitStatus) == VISIT_STATES and ("idle", *VISIT_STATES) == NODE_STATES
    assert set(get_args(NodeStatus)) - {"pending"} <= set(VISIT_STATES)
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "modrag_studio" / "ui").rglob("*.py")]
    assert not any('"queued", "running", "done"' in text for text in sources)  # no second list
