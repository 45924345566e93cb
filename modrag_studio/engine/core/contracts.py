"""A node type's contract, checked when it is registered: its declared input ports and the
parameters of its ``run()`` agree in names and (where both are given) types.

A mistake then fails when the node library loads, with a message naming the node type and
the port, instead of in the middle of somebody's run.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import InputPort, check_types, type_name

_FIXED = ("self", "ctx", "params")


class NodeContractError(ModragError):
    """A node type's declaration contradicts its ``run()``."""


def contract_problems(node_type: type[NodeType]) -> list[str]:
    """Every disagreement between ``node_type``'s input ports and its ``run()`` signature."""
    run = node_type.run
    if run is NodeType.run:  # a declaration-only type (tests, stubs): nothing to compare
        return []
    try:
        signature = inspect.signature(run)
    except (TypeError, ValueError) as exc:
        return [f"run() has no readable signature ({exc})"]
    parameters = list(signature.parameters.values())
    names = [p.name for p in parameters]
    if names[: len(_FIXED)] != list(_FIXED):
        return [f"run() must start with (self, ctx, params), not ({', '.join(names[:3])})"]
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters)
    by_name = {p.name: p for p in parameters[len(_FIXED):]
               if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    problems = []
    declared = {port.name for port in node_type.inputs}
    for port in node_type.inputs:
        if port.name not in by_name and not takes_any:
            problems.append(f"input port '{port.name}' is not a parameter of run()")
    for name in by_name:
        if name not in declared:
            problems.append(f"run() parameter '{name}' is not a declared input port")
    problems.extend(_type_problems(node_type, by_name))
    return problems


def _type_problems(node_type: type[NodeType], parameters: dict[str, Any]) -> list[str]:
    try:
        hints = typing.get_type_hints(node_type.run)
    except Exception:  # annotations naming what the module cannot resolve: nothing to compare
        return []
    problems = []
    for port in node_type.inputs:
        if port.name in parameters and port.name in hints:
            expected = _received(port)
            annotation = hints[port.name]
            if not check_types(expected, annotation).ok:
                problems.append(f"input port '{port.name}' is {type_name(expected)} but run() "
                                f"annotates it as {type_name(annotation)}")
    return problems


def _received(port: InputPort) -> Any:
    """The type of the value ``run()`` gets for ``port`` (a list for ``multiple`` ports)."""
    return list[port.type] if port.multiple else port.type


def check_contract(node_type: type[NodeType]) -> None:
    """Raise NodeContractError naming the type, its class and every problem."""
    problems = contract_problems(node_type)
    if problems:
        where = f"{node_type.__module__}.{node_type.__qualname__}"
        listed = "; ".join(problems)
        raise NodeContractError(f"node type '{node_type.type_id}' ({where}): {listed}")
