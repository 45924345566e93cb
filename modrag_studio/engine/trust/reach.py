"""What a graph file reaches outside itself: files it reads outside its folder, hosts it
contacts that are not this machine and environment variables it reads (API keys). Like VS
Code's workspace trust or Jupyter's notebook trust, a graph that is not the user's own is shown
with this list before its first run; hosts are contacted only once approved
(``$MODRAG_APPROVED_HOSTS`` or the approved-hosts file).

Nothing here contacts a host or reads the files or variables named; params are read as plain
data.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.compose.variant_apply import apply_variant, base_of
from modrag_studio.engine.core.document import GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.formatting import shown
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.paths import (
    PATH_WORDS,
    graph_base_dir,
    path_params,
    tidy_path,
    with_path_keys,
)
from modrag_studio.engine.core.registry import NodeRegistry

APPROVED_ENV = "MODRAG_APPROVED_HOSTS"
_HOST_PARAM = re.compile(r"^(host|base_url|url|endpoint|server)$")
_ENV_PARAM = re.compile(r"(^|_)(env|env_var|environment_variable)$")
_LOCAL_BACKENDS = ("persistent", "embedded")


@dataclass
class Reach:
    """Files read outside the graph's folder, non-loopback hosts and environment variables
    read, each with its place."""

    files: list[tuple[str, str]] = field(default_factory=list)  # (where, absolute path)
    hosts: list[tuple[str, str]] = field(default_factory=list)  # (where, host)
    env_vars: list[tuple[str, str]] = field(default_factory=list)  # (where, variable name)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (where, what it changes)
    sends: list[tuple[str, str, str]] = field(default_factory=list)  # (where, variable, host)

    @property
    def empty(self) -> bool:
        return not (self.files or self.hosts or self.env_vars or self.writes or self.sends)

    def lines(self) -> list[str]:
        """One line per entry; what the graph's file holds (paths, hosts, names) is shown with
        its control and bidirectional characters escaped, so it cannot rewrite the list."""
        return ([f"reads {shown(path)}  ({shown(where)})" for where, path in self.files]
                + [f"contacts {shown(host)}  ({shown(where)})" for where, host in self.hosts]
                + [f"reads environment variable {shown(name)}  ({shown(where)})"
                   for where, name in self.env_vars]
                + [f"sends ${shown(name)} to {shown(host)}  ({shown(where)})"
                   for where, name, host in self.sends]
                + [f"{shown(what)}  ({shown(where)})" for where, what in self.writes])

    def add(self, other: Reach, label: str = "") -> None:
        """``other``'s entries not listed yet, their places prefixed with ``label``."""
        for name in ("files", "hosts", "env_vars", "writes", "sends"):
            mine = getattr(self, name)
            known = {entry[1:] for entry in mine} if label else set(mine)
            for entry in getattr(other, name):
                if (entry[1:] if label else entry) not in known:
                    mine.append((label + entry[0], *entry[1:]) if label else entry)
                    known.add(entry[1:] if label else entry)


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_of(value: str) -> str:
    """The host name in ``value`` (``http://h:1234/x``, ``h:1234`` or ``h``), lower-case."""
    value = value.strip()
    if "://" not in value:
        value = "//" + value
    try:
        return (urlsplit(value).hostname or "").lower()
    except ValueError:
        return value.lower()


def _param_values(spec: NodeSpec, registry: NodeRegistry) -> dict[str, Any]:
    """The node's params with defaults filled in (raw params when they do not validate)."""
    if spec.type not in registry:
        return dict(spec.params)
    try:
        return registry.get(spec.type).Params.model_validate(spec.params).model_dump(mode="json")
    except Exception:
        return dict(spec.params)


def _walk(value: Any, name: str) -> Iterable[tuple[str, str]]:
    """(param name, text) for every text in a param value, nested ones included."""
    if isinstance(value, str):
        yield name, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, name)


def _resolve(value: str, base: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return Path(os.path.realpath(path if path.is_absolute() else base / path))


def reach(doc: GraphDocument, registry: NodeRegistry, graph_path: str | Path | None = None,
          *, base: Path | None = None) -> Reach:
    """What ``doc`` reads outside the folder of ``graph_path`` and which non-loopback hosts
    it names: its base graph, every stored variant as it would run (a variant that cannot be
    applied never runs), and the component files its subgraphs link to. Relative paths
    resolve as they do when the graph runs (``graph_base_dir``): against ``base``, else the
    graph file's folder, else the working directory."""
    folder = Path(os.path.realpath(Path(graph_path).parent)) if graph_path else None
    base = base or graph_base_dir(doc, folder) or Path.cwd()
    found = _graph_reach(base_of(doc) if doc.variants else doc, registry, base, folder)
    for where, link in _links(doc.nodes):
        _add_file(found, where, link, base, folder)
    for variant in doc.variants or []:
        try:
            applied = apply_variant(doc, variant, registry)
        except ModragError:
            continue
        found.add(_graph_reach(applied, registry, base, folder), f"variant '{variant.name}': ")
    return found


def _links(nodes: list[NodeSpec], prefix: str = "") -> Iterable[tuple[str, str]]:
    """(place, path) of every component link, in subgraphs nested at any depth."""
    for spec in nodes:
        if spec.subgraph is None:
            continue
        if spec.subgraph.link is not None:
            yield f"{prefix}{spec.id}.subgraph.link", spec.subgraph.link.path
        yield from _links(spec.subgraph.graph.nodes, f"{prefix}{spec.id}/")


def _graph_reach(doc: GraphDocument, registry: NodeRegistry, base: Path,
                 folder: Path | None) -> Reach:
    """What one runnable graph (no variants block) reaches."""
    doc = expand(doc).doc  # what subgraphs reach is what their inner nodes reach
    found = Reach()
    path_inputs = path_like_inputs(doc, registry)
    interface = graph_interface(doc, registry)
    for port in interface.inputs:
        if port.default and port.name in path_inputs:
            _add_file(found, f"{port.node_id} default of input '{port.name}'", port.default,
                      base, folder)
    for spec in doc.nodes:
        port = interface.port_of(spec.id)
        if port is not None and port.role == "input":
            continue
        params = _param_values(spec, registry)
        remote_backend = params.get("backend") not in _LOCAL_BACKENDS
        for name, var, host in _env_reads(spec, registry, params, remote_backend):
            found.env_vars.append((f"{spec.id}.{name}", var))
            if host:
                found.sends.append((f"{spec.id}.{name}", var, host))
        found.writes += [(f"{spec.id}.{name}", what) for name, what in _store_writes(
            spec, registry, lambda text: _outside(_resolve(text, base), folder))]
        declared = path_params(registry.get(spec.type).Params) if spec.type in registry else {}
        for name, text in _walk(params, ""):
            if not text.strip():
                continue
            where = f"{spec.id}.{name}"
            if _HOST_PARAM.match(name) or text.startswith(("http://", "https://")):
                host = host_of(text)
                if host and remote_backend and not is_loopback_host(host):
                    found.hosts.append((where, host))
            elif name in declared:
                _add_file(found, where, text, base, folder)
    return found


def _env_reads(spec: NodeSpec, registry: NodeRegistry, params: dict[str, Any],
               remote_backend: bool) -> list[tuple[str, str, str]]:
    """(param, variable, host it is sent to or "") for the environment variables the node
    would read: the node type's own ``env_reads(params)`` when it has one (pairs, or triples
    naming the host the value goes to), else every non-empty param named like
    ``api_key_env`` / ``env_var`` on a node that is not on a local backend."""
    node_type = registry.get(spec.type) if spec.type in registry else None
    if node_type is not None:
        reads = None
        with contextlib.suppress(Exception):  # invalid params: fall back to the names
            validated = node_type.Params.model_validate(spec.params)
            reads = registry.instance(spec.type).env_reads(validated)
        if reads is not None:
            return [(str(read[0]), str(read[1]), str(read[2]) if len(read) > 2 else "")
                    for read in reads]
    if not remote_backend:
        return []
    return [(name, value.strip(), "") for name, value in params.items()
            if _ENV_PARAM.search(name) and isinstance(value, str) and value.strip()]


def _store_writes(spec: NodeSpec, registry: NodeRegistry,
                  outside: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(param, text) of what a store node changes outside the graph's folder (its type's
    ``store_writes(params, outside)``); none for other types or invalid params."""
    node_type = registry.get(spec.type) if spec.type in registry else None
    if node_type is None:
        return []
    with contextlib.suppress(Exception):
        validated = node_type.Params.model_validate(spec.params)
        return list(registry.instance(spec.type).store_writes(validated, outside))
    return []


def _outside(resolved: Path, folder: Path | None) -> bool:
    return folder is None or (resolved != folder and folder not in resolved.parents)


def _add_file(found: Reach, where: str, value: str, base: Path, folder: Path | None) -> None:
    resolved = _resolve(value, base)
    if _outside(resolved, folder):
        found.files.append((where, str(resolved)))


def path_like_inputs(doc: GraphDocument, registry: NodeRegistry) -> set[str]:
    """Names of the graph inputs whose value may end up used as a file or folder path."""
    doc = expand(doc).doc
    downstream: dict[str, list[tuple[str, str]]] = {}
    for edge in doc.edges:
        downstream.setdefault(edge.source_node, []).append((edge.target_node, edge.target_port))
    found: set[str] = set()
    for port in graph_interface(doc, registry).inputs:
        name = port.name
        if PATH_WORDS.search(name):
            found.add(name)
            continue
        seen, stack = {port.node_id}, [port.node_id]
        while stack and name not in found:
            for target, port in downstream.get(stack.pop(), []):
                if PATH_WORDS.search(port):
                    found.add(name)
                    break
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
    return found


def normalise_path_inputs(doc: GraphDocument, inputs: dict[str, Any],
                          registry: NodeRegistry) -> dict[str, Any]:
    """``inputs`` with path-like values written one way (``a/./b/`` and ``a//b`` -> ``a/b``),
    so one folder is one cache key whatever its spelling. ``..`` is kept: through a symlink
    it need not undo the step before it."""
    paths = path_like_inputs(doc, registry)
    return {name: tidy_path(value) if name in paths and isinstance(value, str) and value
            else value for name, value in inputs.items()}


def absolute_path_inputs(doc: GraphDocument, inputs: dict[str, Any], base: Path | None,
                         registry: NodeRegistry) -> dict[str, Any]:
    """``inputs`` with path-like values naming an existing file or folder made absolute
    (relative ones against the graph's folder ``base``, else the working directory), so
    ``./corpus``, ``corpus`` and ``/abs/corpus`` are one cache key."""
    paths = path_like_inputs(doc, registry) if inputs else set()
    return with_path_keys(inputs, paths, base.resolve() if base is not None else Path.cwd())


# approved hosts ------------------------------------------------------------------------------
def config_dir() -> Path:
    """``$MODRAG_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/modrag`` (``~/.config/modrag``)."""
    if os.environ.get("MODRAG_CONFIG_DIR"):
        return Path(os.environ["MODRAG_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "modrag"


def approved_hosts() -> set[str]:
    hosts = {h.strip().lower() for h in os.environ.get(APPROVED_ENV, "").split(",") if h.strip()}
    with contextlib.suppress(OSError):
        text = (config_dir() / "approved_hosts").read_text(encoding="utf-8")
        hosts |= {line.strip().lower() for line in text.splitlines() if line.strip()}
    return hosts


def approve_host(host: str) -> None:
    path = config_dir() / "approved_hosts"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(host.strip().lower() + "\n")


def unapproved_hosts(spec: NodeSpec, registry: NodeRegistry) -> list[str]:
    """Non-loopback hosts one node would contact that the user has not approved."""
    single = GraphDocument(nodes=[spec])
    approved = approved_hosts()
    return sorted({h for _, h in reach(single, registry).hosts if h not in approved})


# trusted graph files -------------------------------------------------------------------------
def _trust_file() -> Path:
    return config_dir() / "trusted_graphs.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_trusted(path: str | Path) -> bool:
    """True for a graph file the user saved, ran or approved here, unchanged since."""
    path = Path(os.path.realpath(path))
    try:
        record = json.loads(_trust_file().read_text(encoding="utf-8"))
        return record.get(str(path)) == _digest(path)
    except (OSError, ValueError, AttributeError):
        return False


def trust(path: str | Path) -> None:
    """Remember ``path`` (with its current content) as the user's own."""
    import fcntl

    from modrag_studio.engine.core.document import atomic_write_text

    path = Path(os.path.realpath(path))
    target = _trust_file()
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        # one writer at a time (two studios or commands approving at once keep both entries);
        # the file itself is replaced atomically, through a temporary copy of its own
        with open(target.with_name(target.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                record = json.loads(target.read_text(encoding="utf-8"))
                record = record if isinstance(record, dict) else {}
            except (OSError, ValueError):
                record = {}
            record[str(path)] = _digest(path)
            atomic_write_text(target, json.dumps(record, indent=1))
