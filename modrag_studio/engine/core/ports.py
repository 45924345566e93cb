"""Typed ports and the one function that decides whether two ports may be connected."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.core.datatypes import ChatMessage, Query


@dataclass(frozen=True)
class InputPort:
    """An input socket. ``multiple`` ports take several edges and receive a list of values."""

    name: str
    type: Any = Any
    required: bool = True
    multiple: bool = False
    description: str = ""


@dataclass(frozen=True)
class OutputPort:
    name: str
    type: Any = Any
    description: str = ""


@dataclass(frozen=True)
class Compatibility:
    ok: bool
    reason: str = ""
    coercion: Callable[[Any], Any] | None = field(default=None, compare=False)


# Conversions applied on an edge when the source type is not the target type but a user
# would expect the wire to work (a plain question string into a node that takes a Query).
def chat_history(text: str) -> list[ChatMessage]:
    """A chat history given as text (a graph input): a JSON list of ``{"role", "content"}``
    messages, or ``role: content`` lines (a line without a role continues the message above);
    empty text is no history. ValueError naming the message that is wrong."""
    import json

    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            items = json.loads(text)
            return [ChatMessage(role=item["role"], content=str(item["content"]))
                    for item in items]
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"chat history: not a list of {{role, content}} messages ({exc})"
                             ) from None
    messages: list[ChatMessage] = []
    for line in text.splitlines():
        role, colon, content = line.partition(":")
        if colon and role.strip().lower() in ("user", "assistant", "system"):
            messages.append(ChatMessage(role=role.strip().lower(),  # type: ignore[arg-type]
                                        content=content.strip()))
        elif messages:
            last = messages[-1]
            messages[-1] = ChatMessage(role=last.role, content=f"{last.content}\n{line}")
        else:
            raise ValueError(f"chat history: the first line names no role (user:, "
                             f"assistant:): {line[:60]!r}")
    return messages


_COERCIONS: dict[tuple[Any, Any], Callable[[Any], Any]] = {
    (str, Query): lambda text: Query(text=text, original=text),
    (Query, str): lambda query: query.text,
    (str, list[ChatMessage]): chat_history,  # a graph input "history" into prompt.build
}


def type_name(tp: Any) -> str:
    """A short readable name such as ``list[ScoredChunk]`` for messages and port colours."""
    if tp is Any:
        return "Any"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        args = ", ".join(type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(tp, "__name__", str(tp))


def _list_item(tp: Any) -> Any | None:
    if typing.get_origin(tp) is list:
        args = typing.get_args(tp)
        return args[0] if args else Any
    if tp is list:
        return Any
    return None


def _union_members(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


def _is_subtype(source: Any, target: Any) -> bool:
    return isinstance(source, type) and isinstance(target, type) and issubclass(source, target)


def check_types(source: Any, target: Any) -> Compatibility:
    """Decide whether a value of type ``source`` may flow into a port of type ``target``.

    Accepted: ``Any`` on either side, the same type, a subtype, ``list[A]`` into ``list[B]``
    when ``A`` fits ``B``, a single ``A`` into ``list[B]`` (wrapped), a member of a union,
    and the registered coercions (for example ``str`` into ``Query``).
    """
    if source is Any or target is Any or source == target or _is_subtype(source, target):
        return Compatibility(True)
    if (members := _union_members(target)) is not None:
        for member in members:
            result = check_types(source, member)
            if result.ok:
                return result
    if (members := _union_members(source)) is not None:
        results = [check_types(m, target) for m in members]
        if all(r.ok for r in results):
            return Compatibility(True)
    if (convert := _COERCIONS.get((source, target))) is not None:
        return Compatibility(True, coercion=convert)
    source_item, target_item = _list_item(source), _list_item(target)
    if source_item is not None and target_item is not None:
        inner = check_types(source_item, target_item)
        if inner.ok:
            if inner.coercion is None:
                return Compatibility(True)
            convert_item = inner.coercion
            return Compatibility(True, coercion=lambda values: [convert_item(v) for v in values])
    if source_item is None and target_item is not None:
        inner = check_types(source, target_item)
        if inner.ok:
            convert_one = inner.coercion or (lambda v: v)
            return Compatibility(True, coercion=lambda value: [convert_one(value)])
    return Compatibility(False, f"{type_name(source)} cannot flow into {type_name(target)}")
