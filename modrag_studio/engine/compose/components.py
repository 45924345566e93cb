"""Component files (``*.subgraph.json``): a graph document with a ``boundary``, used as a
subgraph. An instance holds a copy of the version it was linked to and that version's
content hash; a run checks the file still has that version. Loading never runs code."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from modrag_studio.engine.core.document import (
    SUBGRAPH_TYPE,
    ComponentLink,
    GraphDocument,
    NodeSpec,
    SubgraphSpec,
    dumps,
    load,
    save,
)
from modrag_studio.engine.core.errors import GraphLoadError
from modrag_studio.engine.core.validation import Problem

COMPONENT_SUFFIX = ".subgraph.json"


def content_hash(doc: GraphDocument) -> str:
    """The hash of what runs: the document without its layout, in its canonical form."""
    return doc.memo("content_hash", lambda: hashlib.sha256(
        dumps(doc.without_layout()).encode("utf-8")).hexdigest())


_FILE_HASHES: dict[tuple[str, int, int, int], str] = {}  # (path, inode, size, mtime) -> hash


def file_hash(path: Path) -> str:
    """The content hash of the component file at ``path`` (read again when it changed)."""
    info = path.stat()
    key = (str(path), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _FILE_HASHES:
        if len(_FILE_HASHES) > 256:
            _FILE_HASHES.clear()
        _FILE_HASHES[key] = content_hash(load_component(path))
    return _FILE_HASHES[key]


def load_component(path: str | os.PathLike[str]) -> GraphDocument:
    """A component file; raises GraphLoadError when it is not one (no boundary)."""
    doc = load(path)
    if doc.boundary is None or not (doc.boundary.inputs or doc.boundary.outputs):
        raise GraphLoadError(f"{path}: not a component: it declares no boundary (ports)")
    return doc


def save_component(doc: GraphDocument, path: str | os.PathLike[str]) -> None:
    """Write ``doc`` (atomically) as a component file."""
    if not str(path).endswith(COMPONENT_SUFFIX):
        raise ValueError(f"a component file is named *{COMPONENT_SUFFIX}: {path}")
    save(doc, path)


def link_path(link: ComponentLink, base_dir: Path | None) -> Path | None:
    """Where the linked file is (None: a relative link in a graph never saved)."""
    path = Path(link.path).expanduser()
    if path.is_absolute():
        return path
    return base_dir / path if base_dir is not None else None


def stored_path(path: Path, base_dir: Path | None) -> str:
    """``path`` as a link stores it: relative to the graph's folder when it has one."""
    path = path.resolve()
    if base_dir is not None:
        try:
            return os.path.relpath(path, base_dir.resolve()).replace(os.sep, "/")
        except ValueError:  # another drive
            pass
    return str(path)


def instance(path: Path, node_id: str, base_dir: Path | None,
             title: str | None = None) -> NodeSpec:
    """A new subgraph node linked to the component file at ``path``."""
    doc = load_component(path)
    return NodeSpec(id=node_id, type=SUBGRAPH_TYPE, title=title or doc.metadata.name,
                    subgraph=SubgraphSpec(graph=_portable(doc), link=ComponentLink(
                        path=stored_path(path, base_dir), sha256=content_hash(doc))))


def _portable(doc: GraphDocument) -> GraphDocument:
    return GraphDocument.model_validate(doc.model_dump(by_alias=True))  # no source path kept


def link_problem(spec: NodeSpec, base_dir: Path | None) -> Problem | None:
    """Why a linked instance cannot run as it is: its file missing, unreadable, or holding
    another version than the one pinned (None when it is fine or detached)."""
    sub = spec.subgraph
    if sub is None or sub.link is None:
        return None
    link, name = sub.link, f"subgraph '{spec.id}'"
    if content_hash(sub.graph) != link.sha256:
        return Problem("component-edited", f"{name}: its copy of component {link.path} is not "
                       f"the version it pins ({link.sha256[:12]}); update it from the file or "
                       "detach it", node_id=spec.id, field="subgraph")
    path = link_path(link, base_dir)
    if path is None:
        return Problem("component-unresolved", f"{name}: component {link.path} is relative and "
                       "the graph was never saved; save the graph beside it or detach the "
                       "instance", node_id=spec.id, field="subgraph")
    if not path.exists():
        return Problem("component-missing", f"{name}: component file {path} is missing; "
                       "restore it or detach the instance (it keeps its nodes)",
                       node_id=spec.id, field="subgraph")
    try:
        current = file_hash(path)
    except GraphLoadError as exc:
        return Problem("component-invalid", f"{name}: {exc}", node_id=spec.id,
                       field="subgraph")
    if current != link.sha256:
        return Problem("component-changed", f"{name}: component file {path} changed since the "
                       f"instance was linked (pinned {link.sha256[:12]}, file {current[:12]}); "
                       "update the instance to the new version or detach it",
                       node_id=spec.id, field="subgraph")
    return None


def updated(spec: NodeSpec, base_dir: Path | None) -> NodeSpec:
    """``spec`` following the current version of its component file."""
    sub = spec.subgraph
    if sub is None or sub.link is None:
        raise ValueError(f"node '{spec.id}' is not linked to a component")
    path = link_path(sub.link, base_dir)
    if path is None:
        raise GraphLoadError(f"subgraph '{spec.id}': {sub.link.path} is relative and the graph "
                             "was never saved")
    doc = load_component(path)
    return spec.model_copy(update={"subgraph": SubgraphSpec(
        graph=_portable(doc), link=ComponentLink(path=sub.link.path, sha256=content_hash(doc)))})


def detached(spec: NodeSpec) -> NodeSpec:
    """``spec`` keeping its nodes, no longer following a component file."""
    if spec.subgraph is None:
        raise ValueError(f"node '{spec.id}' is not a subgraph")
    return spec.model_copy(update={"subgraph": spec.subgraph.model_copy(update={"link": None})})


def as_component(spec: NodeSpec) -> GraphDocument:
    """The component document a subgraph node holds (to save as a file)."""
    if spec.subgraph is None:
        raise ValueError(f"node '{spec.id}' is not a subgraph")
    return spec.subgraph.graph


@dataclass(frozen=True)
class ComponentInfo:
    """A component file found in a components folder."""

    path: Path
    name: str
    description: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    error: str | None = None


def find_components(folders: list[Path]) -> list[ComponentInfo]:
    """The component files in ``folders`` (not recursive), by name; a broken file is listed
    with its error (never run)."""
    found: list[ComponentInfo] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(f"*{COMPONENT_SUFFIX}")):
            try:
                doc = load_component(path)
            except GraphLoadError as exc:
                found.append(ComponentInfo(path, path.name, "", (), (), str(exc)))
                continue
            assert doc.boundary is not None
            found.append(ComponentInfo(
                path, doc.metadata.name, doc.metadata.description,
                tuple(b.name for b in doc.boundary.inputs),
                tuple(b.name for b in doc.boundary.outputs)))
    return found
