"""The module graph of a Python tree: relative imports, submodules, and this project's own
source checked against ``ast`` directly."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from modrag_nodes.kg.build import build_graph
from modrag_nodes.kg.code_graph import code_extraction
from modrag_nodes.kg.linking import link_entities
from modrag_nodes.kg.search import SearchParams, search
from modrag_nodes.kg.store import load_store

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "modrag_studio.engine.run.executor"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


def test_relative_absolute_and_submodule_imports(tmp_path: Path) -> None:
    _write(tmp_path / "pkg", {
        "__init__.py": '"""The package."""\nfrom .core import run\n',
        "core.py": "import os\nfrom . import util\nfrom .sub import deep\n\ndef run(x: int):\n"
                   "    return util.helper(x)\n",
        "util.py": "import pkg.core\nimport pkg.core as again\n\ndef helper(x):\n    return x\n",
        "sub/__init__.py": "",
        "sub/deep.py": "from ..util import helper\nfrom ... import nowhere\nimport json\n",
        "sub/util.py": "from pkg import sub\n",
        "notes/readme.py": "import pkg\n",
    })
    extraction, chunks = code_extraction(tmp_path / "pkg")
    edges = {(r.source, r.target): r.weight for r in extraction.relations}
    assert edges == {
        ("pkg", "pkg.core"): 1.0,
        ("pkg.core", "pkg.util"): 1.0,
        ("pkg.core", "pkg.sub.deep"): 1.0,
        ("pkg.util", "pkg.core"): 2.0,
        ("pkg.sub.deep", "pkg.util"): 1.0,
        ("pkg.sub.util", "pkg.sub"): 1.0,
    }
    modules = {e.name: e for e in extraction.entities}
    assert set(modules) == {"pkg", "pkg.core", "pkg.util", "pkg.sub", "pkg.sub.deep",
                            "pkg.sub.util"}
    assert modules["pkg.util"].attributes == {"path": "util.py", "lines": 5}
    assert modules["pkg"].type == "package"
    core = next(c for c in chunks if c.chunk_id == "code:pkg.core")
    assert "def run(x: int)" in core.text


def _importers_by_ast(package_root: Path, target: str) -> set[str]:
    """Modules of the package importing ``target``, found with ast independently."""
    found = set()
    for path in package_root.rglob("*.py"):
        rel = path.relative_to(package_root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base]) if base else ".".join(anchor)
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            if target in names and name != target:
                found.add(name)
    return found


def test_what_depends_on_the_executor_module(tmp_path: Path) -> None:
    # a snapshot, so both readings see the same files
    package_root = tmp_path / "src" / "modrag_studio"
    shutil.copytree(ROOT / "modrag_studio", package_root,
                    ignore=shutil.ignore_patterns("__pycache__"))
    extraction, _ = code_extraction(package_root)
    handle, _ = build_graph(extraction, tmp_path / "code.kg.json", mode="rebuild")
    store = load_store(handle.path)
    question = "What depends on the executor module?"
    links = link_entities(question, store)
    assert links.nodes == [EXECUTOR]
    result, _ = search(store, question, links, SearchParams(
        max_hops=1, direction="auto", relation_types=["imports"], per_hop_limit=1000,
        max_paths=1000, hub_degree_cap=1000))
    importers = {p.steps[0].source for p in result.paths}
    expected = _importers_by_ast(package_root, EXECUTOR)
    assert expected and importers == expected
    node = store.graph.nodes[EXECUTOR]
    assert node["path"] == "engine/run/executor.py"
    assert node["lines"] == len((package_root / "engine/run/executor.py").read_text().splitlines())
