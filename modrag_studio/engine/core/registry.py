"""Node types resolved by id. A graph file names types; it never names code to import."""

from __future__ import annotations

import difflib
import logging
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points

from modrag_studio.engine.core.contracts import check_contract
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType

ENTRY_POINT_GROUP = "modrag_studio.nodes"
log = logging.getLogger(__name__)


class NodeRegistry:
    """A mapping from type id (and former ids, through aliases) to node type classes."""

    def __init__(self) -> None:
        self._types: dict[str, type[NodeType]] = {}
        self._aliases: dict[str, str] = {}
        self._instances: dict[str, NodeType] = {}
        self._lock = threading.Lock()
        self.load_errors: list[str] = []

    def register(self, node_type: type[NodeType]) -> type[NodeType]:
        """Register a node type class (usable as a decorator).

        Raises NodeContractError when its input ports and ``run()`` disagree.
        """
        type_id = node_type.type_id
        check_contract(node_type)
        existing = self._types.get(type_id)
        if existing is not None and existing is not node_type:
            raise ValueError(f"node type id '{type_id}' is already registered by {existing!r}")
        self._types[type_id] = node_type
        for alias in node_type.aliases:
            self._aliases[alias] = type_id
        return node_type

    def resolve_id(self, type_id: str) -> str:
        """The current id for ``type_id`` (following renames); raises for unknown ids."""
        if type_id in self._types:
            return type_id
        if type_id in self._aliases:
            return self._aliases[type_id]
        close = difflib.get_close_matches(type_id, list(self._types), n=3, cutoff=0.6)
        raise UnknownNodeType(type_id, close, self.load_errors)

    def renamed(self, type_id: str) -> str | None:
        """The new id when ``type_id`` is a former name of a type, else None."""
        return self._aliases.get(type_id) if type_id not in self._types else None

    def get(self, type_id: str) -> type[NodeType]:
        return self._types[self.resolve_id(type_id)]

    def instance(self, type_id: str) -> NodeType:
        """A shared instance of the type (node instances hold no per-run state)."""
        resolved = self.resolve_id(type_id)
        with self._lock:
            if resolved not in self._instances:
                self._instances[resolved] = self._types[resolved]()
            return self._instances[resolved]

    def type_ids(self, where: Callable[[type[NodeType]], bool]) -> frozenset[str]:
        """The ids (and former ids) of the types for which ``where`` holds: a capability
        query, e.g. ``registry.type_ids(where=lambda t: t.store_role == "vector")``."""
        found = {t for t, node_type in self._types.items() if where(node_type)}
        return frozenset(found | {a for a, t in self._aliases.items() if t in found})

    def __contains__(self, type_id: str) -> bool:
        return type_id in self._types or type_id in self._aliases

    def __iter__(self) -> Iterator[type[NodeType]]:
        return iter(sorted(self._types.values(), key=lambda t: (t.category, t.type_id)))

    def __len__(self) -> int:
        return len(self._types)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Let installed node packages register their types (``register(registry)`` callables)."""
        for ep in entry_points(group=group):
            try:
                register_fn: Callable[[NodeRegistry], None] = ep.load()
                register_fn(self)
            except Exception as exc:  # a broken plug-in must not stop the app
                message = f"node package '{ep.name}' ({ep.value}) failed to load: {exc}"
                self.load_errors.append(message)
                log.warning(message)
