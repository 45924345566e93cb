"""The graph document: the JSON file a user saves, diffs, and ships to a server."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from modrag_studio.engine.core.errors import GraphLoadError

SCHEMA_VERSION = 1
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_NESTING = 64  # levels of JSON nesting a document may use (params included)
_SEGMENT = r"[A-Za-z_][A-Za-z0-9_\-]{0,63}"
#: a node id; ``outer/inner`` names a node inside a subgraph once the graph is expanded
_ID_PATTERN = rf"^{_SEGMENT}(/{_SEGMENT}){{0,7}}$"
_ENDPOINT_PATTERN = rf"^{_SEGMENT}(/{_SEGMENT}){{0,7}}\.[A-Za-z_][A-Za-z0-9_]{{0,63}}$"
_PORT_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
SUBGRAPH_TYPE = "graph.subgraph"  # the type id of a node holding a subgraph


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NodeSpec(_Strict):
    """One node: a stable id, a registered type id, that type's version, and its params."""

    id: str = Field(pattern=_ID_PATTERN)
    type: str = Field(min_length=1, max_length=200)
    version: int = Field(1, ge=1)
    title: str | None = Field(None, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)
    bypass: bool = Field(False, description="Disabled: each input passes to the output of a "
                         "compatible type and the node does not run (saved only when true)")
    subgraph: SubgraphSpec | None = Field(None, description="For type 'graph.subgraph': the "
                                          "inner graph (and the component file it is linked to)")


class LoopSpec(_Strict):
    max_iterations: int = Field(ge=1, le=100)


class EdgeSpec(_Strict):
    """``from``/``to`` are ``node_id.port``. An edge with ``loop`` goes back to an earlier node."""

    source: str = Field(alias="from", pattern=_ENDPOINT_PATTERN)
    target: str = Field(alias="to", pattern=_ENDPOINT_PATTERN)
    loop: LoopSpec | None = None

    @cached_property
    def source_node(self) -> str:
        return self.source.split(".", 1)[0]

    @cached_property
    def source_port(self) -> str:
        return self.source.split(".", 1)[1]

    @cached_property
    def target_node(self) -> str:
        return self.target.split(".", 1)[0]

    @cached_property
    def target_port(self) -> str:
        return self.target.split(".", 1)[1]


class NodeLayout(_Strict):
    x: float = 0.0
    y: float = 0.0
    color: str | None = None
    collapsed: bool = False


class GroupLayout(_Strict):
    id: str
    title: str = ""
    x: float = 0.0
    y: float = 0.0
    width: float = 400.0
    height: float = 300.0
    color: str | None = None


class NoteLayout(_Strict):
    id: str
    text: str = ""
    x: float = 0.0
    y: float = 0.0
    width: float = 240.0
    height: float = 120.0


class Layout(_Strict):
    """Canvas-only information; the executor never reads it."""

    nodes: dict[str, NodeLayout] = Field(default_factory=dict)
    groups: list[GroupLayout] = Field(default_factory=list)
    notes: list[NoteLayout] = Field(default_factory=list)


class BoundaryInput(_Strict):
    """A subgraph input: the value wired into it goes to every inner port in ``to``."""

    name: str = Field(pattern=_PORT_PATTERN)
    to: list[str] = Field(min_length=1)

    @field_validator("to")
    @classmethod
    def _endpoints(cls, value: list[str]) -> list[str]:
        for endpoint in value:
            if not re.match(_ENDPOINT_PATTERN, endpoint):
                raise ValueError(f"'{endpoint}' is not node_id.port")
        return value


class BoundaryOutput(_Strict):
    """A subgraph output: the value of the inner port ``from``."""

    name: str = Field(pattern=_PORT_PATTERN)
    source: str = Field(alias="from", pattern=_ENDPOINT_PATTERN)


class Boundary(_Strict):
    """The ports of a graph used as a subgraph (a component): named, typed by inner ports."""

    inputs: list[BoundaryInput] = Field(default_factory=list)
    outputs: list[BoundaryOutput] = Field(default_factory=list)


class ComponentLink(_Strict):
    """The component file an instance follows: its path (relative to the graph's folder, or
    absolute) and the content hash of the version the instance holds."""

    path: str = Field(min_length=1, max_length=1000)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class SubgraphOrigin(_Strict):
    """Where the collapsed nodes and wires sat in the document, so Expand restores it exactly
    (indices into the expanded document's ``nodes`` and ``edges``)."""

    nodes: list[int] = Field(default_factory=list)
    edges: list[int] = Field(default_factory=list)


class SubgraphSpec(_Strict):
    """A subgraph node's contents: the inner graph (its ``boundary`` names the node's ports),
    the component it is linked to (None: detached) and where its nodes came from."""

    graph: GraphDocument
    link: ComponentLink | None = None
    origin: SubgraphOrigin | None = None


class GraphMetadata(_Strict):
    name: str = "untitled"
    description: str = ""


class RewireSpec(_Strict):
    """Feed input ``to`` from ``from`` (replacing the edge from ``instead_of``, or all)."""

    source: str = Field(alias="from", pattern=_ENDPOINT_PATTERN)
    target: str = Field(alias="to", pattern=_ENDPOINT_PATTERN)
    instead_of: str | None = Field(None, pattern=_ENDPOINT_PATTERN)


class VariantSpec(_Strict):
    """A named variant of this graph: param overrides, node type swaps, re-wired inputs and
    nodes turned off or on (``bypass``)."""

    name: str = Field(pattern=_ID_PATTERN)
    description: str = ""
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    swap: dict[str, str] = Field(default_factory=dict)
    rewire: list[RewireSpec] = Field(default_factory=list)
    bypass: dict[str, bool] = Field(default_factory=dict)


class GraphDocument(_Strict):
    # frozen: an edit makes a new document (``model_copy(update=...)``, ``GraphEditor.replace``)
    # so the editor's undo snapshots stay what they were (no docstring: it would enter the schema)
    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    metadata: GraphMetadata = Field(default_factory=GraphMetadata)
    nodes: list[NodeSpec] = Field(default_factory=list)
    edges: list[EdgeSpec] = Field(default_factory=list)
    layout: Layout | None = None
    boundary: Boundary | None = None  # a component's ports (a graph used as a subgraph)
    # the file it was loaded from (never saved in it): relative paths resolve against its folder
    _source_path: Path | None = PrivateAttr(default=None)
    # memos of derived values (a document is never changed in place): content hash, ...
    _memo: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def source_path(self) -> Path | None:
        return self._source_path

    def __eq__(self, other: object) -> bool:
        """Equal contents (where a document was loaded from does not count)."""
        if not isinstance(other, GraphDocument):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]
    variants: list[VariantSpec] | None = None

    @field_validator("schema_version")
    @classmethod
    def _supported_version(cls, value: int) -> int:
        if value > SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is newer than this ModRAG Studio supports "
                f"({SCHEMA_VERSION}); upgrade ModRAG Studio to open this file"
            )
        if value < 1:
            raise ValueError("schema_version must be 1 or more")
        return value

    def node(self, node_id: str) -> NodeSpec:
        for spec in self.nodes:
            if spec.id == node_id:
                return spec
        raise KeyError(node_id)

    def node_ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def memo(self, key: str, make: Any) -> Any:
        """``make()`` computed once for this document (derived values: hashes, types)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def model_copy(self, *, update: dict[str, Any] | None = None,
                   deep: bool = False) -> GraphDocument:
        """A copy (``update`` applied) that keeps the source path but none of the memos."""
        copy = super().model_copy(update=update, deep=deep)
        copy._memo = {}
        return copy

    def without_layout(self) -> GraphDocument:
        return self.model_copy(update={"layout": None})


SubgraphSpec.model_rebuild()
NodeSpec.model_rebuild()
GraphDocument.model_rebuild()


def to_json_dict(doc: GraphDocument) -> dict[str, Any]:
    """The document as plain data in a stable key order (params sorted) for clean diffs."""
    data = doc.model_dump(mode="json", by_alias=True, exclude_none=True)
    for node, spec in zip(data["nodes"], doc.nodes, strict=True):
        node["params"] = _sorted(node["params"])
        if not node.get("bypass"):
            node.pop("bypass", None)
        if spec.subgraph is not None:
            node["subgraph"]["graph"] = to_json_dict(spec.subgraph.graph)
    for variant in data.get("variants") or []:
        if not variant.get("bypass"):  # files without bypasses stay readable by older versions
            variant.pop("bypass", None)
    return data


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def dumps(doc: GraphDocument) -> str:
    return json.dumps(to_json_dict(doc), indent=2, ensure_ascii=False) + "\n"


def loads(text: str | bytes, *, source: str = "<string>") -> GraphDocument:
    """Parse a document. Never imports or evaluates anything named in the text."""
    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            raise GraphLoadError(f"{source}: file is larger than {MAX_FILE_BYTES} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GraphLoadError(
                f"{source}: not UTF-8 text (byte {exc.start}): a graph file is UTF-8 JSON"
            ) from None
    if len(text) > MAX_FILE_BYTES:
        raise GraphLoadError(f"{source}: file is larger than {MAX_FILE_BYTES} bytes")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphLoadError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise GraphLoadError(f"{source}: JSON nested too deeply") from None
    return from_json_dict(data, source=source)


def from_json_dict(data: Any, *, source: str = "<data>") -> GraphDocument:
    if not isinstance(data, dict):
        raise GraphLoadError(f"{source}: a graph file must hold a JSON object at the top level")
    if (deep := _too_deep(data)) is not None:
        raise GraphLoadError(f"{source}: {deep}: nested more than {MAX_NESTING} levels deep "
                             "(a document this deep could not be saved again)")
    try:
        return GraphDocument.model_validate(data)
    except ValidationError as exc:
        raise GraphLoadError(f"{source}: {format_validation_error(exc)}") from None
    except RecursionError:
        raise GraphLoadError(f"{source}: JSON nested too deeply") from None


def _too_deep(data: Any) -> str | None:
    """The path of the first value nested deeper than ``MAX_NESTING``, or None."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_NESTING:
            shown = ".".join(path[:6])
            return f"{shown}..." if len(path) > 6 else shown
        if isinstance(value, dict):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, str(i))) for i, v in enumerate(value))
    return None


def format_validation_error(exc: ValidationError, limit: int = 8) -> str:
    """Pydantic errors as ``field.path: message`` lines."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(document)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def load(path: str | os.PathLike[str]) -> GraphDocument:
    """Read a graph file: a regular file of at most ``MAX_FILE_BYTES`` (a device, a FIFO or
    /dev/zero is refused before anything is read)."""
    from modrag_studio.engine.core.paths import NotRegularFile, open_regular

    path = Path(path)
    try:
        with open_regular(path) as fh:  # a FIFO is refused without waiting for a writer
            info = os.fstat(fh.fileno())
            if info.st_size > MAX_FILE_BYTES:
                raise GraphLoadError(f"{path}: file is larger than {MAX_FILE_BYTES} bytes")
            raw = fh.read(MAX_FILE_BYTES + 1)
    except NotRegularFile as exc:
        if path.is_dir():
            raise GraphLoadError(f"{path}: is a folder, not a graph file") from None
        raise GraphLoadError(f"{path}: not a regular file but {exc.kind} (a graph file is "
                             "UTF-8 JSON)") from None
    except IsADirectoryError:
        raise GraphLoadError(f"{path}: is a folder, not a graph file") from None
    except OSError as exc:
        raise GraphLoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    doc = loads(raw, source=str(path))
    doc._source_path = path.resolve()
    return doc


def save(doc: GraphDocument, path: str | os.PathLike[str]) -> None:
    """Write atomically: a temporary file in the same folder, fsync, then rename."""
    atomic_write_text(Path(path), dumps(doc))


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path``'s content atomically. A symlink is written through (its target is
    replaced, the link stays) and an existing file keeps its permission bits (a new file
    gets the usual ones, after the umask). The temporary copy (``.<name>.XXXXXXXX.tmp``
    beside it) is removed when the write fails; one left by a killed save goes at the next
    save of the same file (a copy still locked by a live writer stays)."""
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    remove_stale_temps(path)
    for attempt in (1, 2):
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            _hold(fd)  # while held, another save's clean-up leaves this copy alone
            os.fchmod(fd, mode)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
                os.replace(tmp, path)  # before closing: the lock covers the whole write
            return
        except FileNotFoundError:
            # another save took the copy for stale before it was locked: write it again
            Path(tmp).unlink(missing_ok=True)
            if attempt == 2:
                raise
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


STALE_TEMP_AGE_S = 600.0  # where no lock tells a live writer from a dead one


def _hold(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): age decides
        return
    fcntl.flock(fd, fcntl.LOCK_EX)  # a clean-up holds it for a moment at most


def remove_stale_temps(path: Path) -> list[Path]:
    """Remove the temporary copies of ``path`` that no live save holds (a killed save's);
    returns them."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"[A-Za-z0-9_]{6,}\.tmp")
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(path.parent) if pattern.fullmatch(n)]
    except OSError:
        return removed
    for name in names:
        candidate = path.parent / name
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or not _is_free(fd):
                continue
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _is_free(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:
        return time.time() - os.fstat(fd).st_mtime > STALE_TEMP_AGE_S
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a save under way holds it
    return True


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the graph document (``modrag schema``)."""
    schema = GraphDocument.model_json_schema(by_alias=True, mode="validation")
    if "$ref" in schema:  # recursive (a subgraph holds a document): the top level in full
        top = schema["$defs"][schema.pop("$ref").rsplit("/", 1)[-1]]
        schema = {**schema, **top}
    schema["$id"] = "urn:modrag-studio:graph:1"
    schema["title"] = "ModRAG Studio graph document"
    return schema
