"""Exceptions that carry the node, port or field they are about."""

from __future__ import annotations


class ModragError(Exception):
    """Base class of every error this package raises on purpose."""


class RunCancelled(ModragError):
    """Raised inside a node when its run's cancel token is set."""


class GraphLoadError(ModragError):
    """A graph file could not be read or parsed; the message names the place."""


class UnknownNodeType(ModragError):
    def __init__(self, type_id: str, suggestions: list[str] | None = None,
                 load_errors: list[str] | None = None) -> None:
        self.type_id = type_id
        self.suggestions = suggestions or []
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        if load_errors:  # the type may live in a node module that could not be imported
            shown = "; ".join(load_errors[:3]) + (" ..." if len(load_errors) > 3 else "")
            hint += f" (node modules that failed to import: {shown})"
        super().__init__(f"unknown node type '{type_id}'{hint}")


class ConnectionRefused(ModragError):
    """A connection between two ports was refused; the message says why and what would fit."""


class GraphInvalid(ModragError):
    def __init__(self, problems: list) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"the graph has {len(problems)} problem(s):\n{lines}")


class NodeConfigError(ModragError):
    """A node was configured in a way it cannot run with (a missing model, a bad path)."""


class MissingRunInput(NodeConfigError):
    """A graph input the run was not given and that has no default. The message says what
    is missing; how to give it is the front end's to say (run bar, ``--input``, request)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"graph input '{name}' was not given and has no default")


class InvalidSetting(ModragError):
    """An environment setting (``MODRAG_CACHE_DISK_MB=inf``) that cannot be used; the message
    names the variable and what it accepts."""
