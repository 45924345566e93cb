"""Where ModRAG Studio keeps its caches and default data (overridable by environment)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

#: Names of graph inputs and ports that say the value is a file or folder (``corpus``,
#: ``path``, ``*_dir``): graph inputs have no Params type to declare it.
PATH_WORDS = re.compile(r"(^|_)(path|paths|file|files|folder|dir|directory|corpus|source|root|"
                        r"dataset|template_file|dictionary)($|_)", re.IGNORECASE)


@dataclass(frozen=True)
class PathParam:
    """Marks a node param as naming a file or folder: ``Annotated[str, PathParam("folder")]``.

    Cache keys, the trust list and the properties panel (a Browse button) read it from the
    node's Params type; the JSON schema says ``"x-path": kind``.
    """

    kind: Literal["file", "folder", "any"] = "any"

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["x-path"] = self.kind
        return schema


AnyPath = Annotated[str, PathParam("any")]  # a file or a folder
FilePath = Annotated[str, PathParam("file")]
FolderPath = Annotated[str, PathParam("folder")]
OptionalFilePath = Annotated[str | None, PathParam("file")]


def path_params(params_model: Any) -> dict[str, str]:
    """Param name -> "file", "folder" or "any" for the params ``params_model`` declares as
    paths."""
    fields = getattr(params_model, "model_fields", None) or {}
    return {name: marker.kind for name, field in fields.items()
            for marker in field.metadata if isinstance(marker, PathParam)}

_run_work_dir: ContextVar[Path | None] = ContextVar("modrag_run_work_dir", default=None)


def cache_home() -> Path:
    """Node result cache: ``$MODRAG_CACHE_DIR`` or ``~/.cache/modrag-studio``."""
    env = os.environ.get("MODRAG_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "modrag-studio"


def model_dir() -> Path:
    """Where models converted or assembled on first use are kept: ``$MODRAG_MODEL_DIR`` or
    ``<cache dir>/models``."""
    env = os.environ.get("MODRAG_MODEL_DIR")
    return Path(env) if env else cache_home() / "models"


def data_home() -> Path:
    """Folder for indexes and other node data: ``$MODRAG_DATA_DIR`` or ``~/.local/share``."""
    env = os.environ.get("MODRAG_DATA_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "modrag-studio"


def work_home() -> Path:
    """The work folder of the run in progress on this thread (``data_home()`` outside runs).

    It is the folder nodes get as ``ctx.work_dir``; ``NodeType.fingerprint`` has no context
    and uses this to look at the same on-disk state.
    """
    return _run_work_dir.get() or data_home()


@contextmanager
def using_work_dir(path: Path) -> Iterator[None]:
    """Make ``work_home()`` return ``path`` on this thread for the duration of a run."""
    token = _run_work_dir.set(path)
    try:
        yield
    finally:
        _run_work_dir.reset(token)


# Relative paths in a graph (a corpus folder, a template file, a store folder) are relative
# to the graph file's folder, so a graph runs the same from any working directory.
_graph_folder: ContextVar[Path | None] = ContextVar("modrag_graph_folder", default=None)


def graph_folder() -> Path:
    """The folder relative paths of the run in progress resolve against (the working
    directory outside runs and for graphs that were never saved)."""
    return _graph_folder.get() or Path.cwd()


def resolve_path(value: str | os.PathLike[str]) -> Path:
    """``value`` with ``~`` expanded; a relative path is joined to ``graph_folder()``."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else graph_folder() / path


@contextmanager
def using_graph_folder(path: Path | None) -> Iterator[None]:
    """Make ``graph_folder()`` return ``path`` (absolute) on this thread during a run."""
    token = _graph_folder.set(Path(path).resolve() if path is not None else None)
    try:
        yield
    finally:
        _graph_folder.reset(token)


def absolute_if_exists(value: str) -> str:
    """A command-line value that names an existing path relative to the working directory,
    made absolute (so it keeps meaning what the shell meant once the run resolves relative
    paths against the graph's folder); any other value unchanged."""
    if not value or "\n" in value or len(value) > 4096:
        return value
    path = Path(value).expanduser()
    try:
        exists = not path.is_absolute() and path.exists()
    except OSError:
        return value
    return str(path.resolve()) if exists else value


def existing_path_key(value: Any, base: Path | None = None, *,
                      must_exist: bool = True) -> str | None:
    """The one spelling of a file or folder named by ``value`` (``./corpus``, ``corpus``,
    ``corpus/`` and the absolute path all give the resolved absolute path); relative paths
    resolve against ``base`` (default ``graph_folder()``). None when ``value`` is not text
    naming a path, or (``must_exist``) names nothing that exists."""
    if not isinstance(value, str) or not value.strip() or "\n" in value or len(value) > 4096:
        return None
    path = Path(value).expanduser()
    try:
        path = path if path.is_absolute() else (base or graph_folder()) / path
        return str(path.resolve()) if not must_exist or path.exists() else None
    except (OSError, RuntimeError, ValueError):  # unreadable, too long, a symlink loop
        return None


def with_path_keys(values: Mapping[str, Any], names: Any, base: Path | None = None, *,
                   must_exist: bool = True) -> dict[str, Any]:
    """``values`` with each entry in ``names`` that names a path (an existing one when
    ``must_exist``) written as its resolved absolute path; other entries unchanged."""
    out = dict(values)
    for name, value in values.items():
        if name in names and (key := existing_path_key(value, base,
                                                       must_exist=must_exist)) is not None:
            out[name] = key
    return out


def with_path_param_keys(params: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The path params ``names`` (see :func:`path_params`) written one way, for cache keys: a
    node reads the same files however the path is spelled. A path that does not exist yet (a
    store folder the node creates) is keyed the same before and after it is created."""
    return with_path_keys(params, set(names), must_exist=False)


def tidy_path(path: str) -> str:
    """``a/./b/`` and ``a//b`` written as ``a/b`` (``..`` kept: through a symlink it need not
    undo the step before it)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    tidy = ("/" if path.startswith("/") else "") + "/".join(parts)
    return tidy or "."


def graph_base_dir(doc: Any, base_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """Where relative paths of a graph resolve: ``base_dir``, else the folder of the file the
    graph was loaded from (None for a never-saved graph: the working directory then). Runs,
    the trust list and validation all ask this one function."""
    if base_dir is not None:
        return Path(base_dir)
    source = getattr(doc, "source_path", None)
    return Path(source).parent if source is not None else None



class NotRegularFile(OSError):
    """A FIFO, a device, a socket or a folder where a file is read (refused before reading,
    so a FIFO never blocks the reader); ``kind`` says which ("a FIFO")."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, refused with NotRegularFile unless it is a
    regular file. It is opened without blocking (a FIFO with no writer would wait forever)
    and checked on the opened descriptor, so it cannot be swapped after the check."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise NotRegularFile(path, kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def env_limit(name: str, default: float, unit: str, *, minimum: float = 0.0,
              maximum: float = 1e9, hint: str = "") -> float:
    """A finite number from ``minimum`` to ``maximum`` from ``$name`` (``default`` when unset
    or empty); InvalidSetting naming the variable for anything else (``inf``, ``nan``, ``-1``,
    ``1e308``, whose bytes or seconds overflow, ``lots``)."""
    import math

    from modrag_studio.engine.core.errors import InvalidSetting

    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise InvalidSetting(f"{name}={raw!r} is not a valid limit: give a finite number of "
                             f"{unit} from {minimum:g} to {maximum:g} (unset: {default:g})"
                             + (f"; {hint}" if hint else ""))
    return value
