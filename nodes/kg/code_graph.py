"""``kg.code_graph``: the module import graph of a Python source tree, parsed with ``ast``.

Nodes are internal modules named by dotted path (``pkg.sub.mod``; a package is its
``__init__``), with their file path and line count. An edge ``a -[imports]-> b`` has as weight
the number of import statements in ``a`` that reach ``b``. Absolute and relative imports are
resolved; ``from pkg import name`` points at ``pkg.name`` when that is a module, else at
``pkg``; imports of anything outside the tree are dropped.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.build import BuildParams, build_graph, graph_file_writes, graph_path
from modrag_nodes.kg.contracts import Entity, GraphExtraction, KnowledgeGraph, Relation
from modrag_nodes.kg.extract_rules import resolve_dir
from modrag_nodes.kg.store import text_hash
from modrag_studio.engine.core.node import (
    Chunk,
    FolderPath,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
)

SKIP_DIRS = {"__pycache__", ".git", ".venv", "venv", "build", "dist", "node_modules"}


@dataclass
class Module:
    name: str
    path: Path
    rel: str
    is_package: bool
    source: str
    lines: int
    imports: dict[str, int] = field(default_factory=dict)
    _tree: ast.Module | None = None

    @property
    def tree(self) -> ast.Module:
        """The parsed source (None on a syntax error), parsed once."""
        if self._tree is None:
            self._tree = _parse(self.source, str(self.path))
        return self._tree


def _parse(source: str, filename: str, attempts: int = 3) -> ast.Module:
    """``ast.parse``, empty on a syntax error. CPython 3.11 counts the AST recursion depth in
    one per-interpreter variable, so a parse in another thread at the same moment can raise a
    spurious ``SystemError`` ("AST constructor recursion depth mismatch"): parse again."""
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=filename)
        except (SyntaxError, ValueError):
            break
        except SystemError:
            if attempt == attempts - 1:
                raise
    return ast.Module(body=[], type_ignores=[])


def discover(root: Path, package: str = "") -> dict[str, Module]:
    """Internal modules under ``root``. A root that is a package is named ``package`` or its
    folder name; otherwise its sub-folders and files are top-level names."""
    root = root.resolve()
    prefix: list[str] = []
    if (root / "__init__.py").is_file():
        prefix = (package or root.name).split(".")
    modules: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        rel_parts = path.relative_to(root).parts
        if any(p in SKIP_DIRS or p.startswith(".") for p in rel_parts[:-1]):
            continue
        if not _inside_packages(root, path) and len(rel_parts) > 1:
            continue
        parts = [*prefix, *rel_parts[:-1]]
        is_package = path.name == "__init__.py"
        if not is_package:
            parts.append(path.stem)
        if not parts or not all(p.isidentifier() for p in parts):
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        name = ".".join(parts)
        modules[name] = Module(name, path, path.relative_to(root).as_posix(), is_package,
                               source, source.count("\n") + (not source.endswith("\n")))
    return modules


def _inside_packages(root: Path, path: Path) -> bool:
    """True when every folder between ``root`` and the file is a package."""
    folder = path.parent
    while folder != root:
        if not (folder / "__init__.py").is_file():
            return False
        folder = folder.parent
    return True


def _internal(name: str, modules: dict[str, Module]) -> str | None:
    """The longest internal module that ``name`` is or lies in."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _base_package(module: Module, level: int) -> str | None:
    parts = module.name.split(".")
    if not module.is_package:
        parts = parts[:-1]
    if level > 1:
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


def resolve_imports(module: Module, modules: dict[str, Module]) -> dict[str, int]:
    """Internal targets of a module's import statements, counted once per statement."""
    tree = module.tree
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: set[str] = set()
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (found := _internal(alias.name, modules)) is not None:
                    targets.add(found)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _base_package(module, node.level)
                if base is None:
                    continue
                full = ".".join(p for p in (base, node.module or "") if p)
            else:
                full = node.module or ""
            for alias in node.names:
                sub = f"{full}.{alias.name}" if full else alias.name
                found = sub if sub in modules else _internal(full, modules) if full else None
                if found is not None:
                    targets.add(found)
        for target in targets - {module.name}:
            counts[target] = counts.get(target, 0) + 1
    return counts


def _signatures(module: Module, limit: int = 40) -> list[str]:
    lines: list[str] = []
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.append(f"def {node.name}({ast.unparse(node.args)})")
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            lines.append(f"class {node.name}({bases})" if bases else f"class {node.name}")
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    lines.append(f"    def {item.name}({ast.unparse(item.args)})")
    return lines[:limit]


def module_chunk(module: Module) -> Chunk:
    """One chunk per module: its name, docstring and signatures (for vector search)."""
    doc = ast.get_docstring(module.tree) or ""
    text = "\n".join([f"module {module.name} ({module.rel}, {module.lines} lines)", doc.strip(),
                      *_signatures(module)]).strip()
    return Chunk(chunk_id=f"code:{module.name}", doc_id=module.name, text=text,
                 source=str(module.path), end=len(text),
                 metadata={"module": module.name, "path": module.rel, "lines": module.lines})


def code_extraction(root: Path, package: str = "") -> tuple[GraphExtraction, list[Chunk]]:
    """Modules, import edges and module chunks of a source tree."""
    modules = discover(root, package)
    extraction = GraphExtraction(extractor="code-imports/1",
                                 relation_labels={"imports": "imports"})
    chunks: list[Chunk] = []
    shorts = Counter(m.name.rsplit(".", 1)[-1] for m in modules.values())
    for module in modules.values():
        chunk = module_chunk(module)
        chunks.append(chunk)
        short = module.name.rsplit(".", 1)[-1]
        # a short name two modules share ("variants") would merge them into one node
        aliases = [module.rel, short, f"{short} module"] if shorts[short] == 1 else [module.rel]
        extraction.entities.append(Entity(
            name=module.name, type="package" if module.is_package else "module",
            aliases=aliases, chunk_ids=[chunk.chunk_id],
            attributes={"path": module.rel, "lines": module.lines}))
        extraction.chunk_hashes[chunk.chunk_id] = text_hash(module.source)
        extraction.chunks[chunk.chunk_id] = chunk.model_dump(mode="json")
    for module in modules.values():
        for target, count in sorted(resolve_imports(module, modules).items()):
            extraction.relations.append(Relation(
                source=module.name, relation="imports", target=target,
                chunk_ids=[f"code:{module.name}"], weight=float(count)))
    return extraction, chunks


class CodeGraphParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: FolderPath = Field("", description="Source folder (a package or a folder of packages); "
                                      "the 'path' input overrides it")
    package: str = Field("", description="Import name of the folder when it differs from "
                                         "the folder name (e.g. modrag_nodes for nodes/)")
    folder: FolderPath = Field("", description="Folder of the graph file (empty: <data dir>/kg)")
    name: str = Field("code", pattern=r"^[A-Za-z0-9_\-]{1,64}$",
                      description="Graph file name without .kg.json")


class CodeGraph(NodeType):
    type_id = "kg.code_graph"
    store_role = "graph"
    title = "Code module graph"
    category = "Knowledge graph"
    description = ("Parses a Python source tree with ast: internal modules (dotted names, file, "
                   "line count) and weighted 'imports' edges; also one chunk per module.")
    Params = CodeGraphParams
    inputs = (InputPort("path", str, required=False, description="Source folder"),)
    outputs = (
        OutputPort("graph", KnowledgeGraph, "The module graph file"),
        OutputPort("chunks", list[Chunk], "One chunk per module (docstring and signatures)"),
    )

    def store_writes(self, params: CodeGraphParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        return graph_file_writes(BuildParams(folder=params.folder, name=params.name), outside)

    def fingerprint(self, params: CodeGraphParams, inputs: Any, run_inputs: Any) -> str | None:
        value = inputs.get("path") or params.path
        try:
            root = resolve_dir(value, "path")
        except NodeConfigError:
            return None
        stamps = [(str(p), p.stat().st_mtime_ns, p.stat().st_size)
                  for p in sorted(root.rglob("*.py"))]
        return text_hash(repr(stamps))

    def run(self, ctx: NodeContext, params: CodeGraphParams, path: str | None = None
            ) -> dict[str, Any]:
        value = path or params.path
        if not value:
            raise NodeConfigError("param 'path': give the source folder to parse")
        root = resolve_dir(value, "path")
        extraction, chunks = code_extraction(root, params.package)
        if not chunks:
            raise NodeConfigError(f"param 'path': no Python modules found under {root}")
        build = BuildParams(folder=params.folder, name=params.name, mode="rebuild")
        handle, _ = build_graph(extraction, graph_path(build, ctx.work_dir), mode="rebuild",
                                 resources=ctx.resources)
        ctx.note(root=str(root), modules=len(chunks), edges=handle.summary["edges"],
                 top_degree=handle.summary["top_degree"][:5])
        return {"graph": handle, "chunks": chunks}
