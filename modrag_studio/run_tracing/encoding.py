"""OTLP trace requests (``ExportTraceServiceRequest``) written in protobuf's wire format
directly, for the export thread: the SDK's encoder builds a message object per attribute, in
Python, about 70 microseconds a span, while the export thread holds the interpreter's lock
and the next run waits for it. Here a span costs a few microseconds, and the attributes of a
cached visit, which ``SpanBuilder`` shares between the spans of the same cache key
(``RecordedSpan.shared_attributes``), are encoded once and their bytes reused.

The request parses to the same message as the SDK's ``encode_spans`` (tested field by
field). A span with events, links or dropped counts (rare: a failed visit) is encoded by the
SDK's encoder; resources and scopes too, once each.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

#: Encoded shared attribute sets kept (each holds its mapping, so ids stay unique).
MEMO_SIZE = 8192

_pack_double = struct.Struct("<d").pack
_pack_fixed64 = struct.Struct("<Q").pack
#: The OTLP enum values (``Span.SpanKind``; the API's ``SpanKind`` counts from 0).
_KIND = {SpanKind.INTERNAL: 1, SpanKind.SERVER: 2, SpanKind.CLIENT: 3, SpanKind.PRODUCER: 4,
         SpanKind.CONSUMER: 5}
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200  # SpanFlags


#: A resource and scope with their encoded fields: (resource, scope, (the resource field, its
#: schema URL field), the scope's fields).
_Heads = tuple[Any, Any, tuple[bytes, bytes], bytes]


class RecordedSpan(ReadableSpan):
    """A finished span that may name the attribute mapping it shares with other spans
    (``shared_attributes``, the same object each time): its encoding is then reused."""

    def __init__(self, *args: Any, shared_attributes: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shared_attributes = shared_attributes


def _first_equal(value: Any, first_equal: dict[int, Any], by_value: dict[Any, Any]) -> Any:
    """The first object of the request equal to ``value`` (the SDK groups spans by equal
    resources and scopes, not by the same objects)."""
    known = first_equal.get(id(value))
    if known is None:
        known = first_equal[id(value)] = by_value.setdefault(value, value)
    return known


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 in two's complement: ten bytes
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag byte(s), the length, the payload."""
    return tag + _varint(len(payload)) + payload


def _any_value(value: Any) -> bytes:
    """An ``AnyValue``'s payload, typed as the SDK types it (bool before int; a present
    oneof member is written even when it holds its type's default)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode("utf-8"))
    if isinstance(value, int):
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any_value(v)) for v in value))
    if isinstance(value, Mapping):
        return _field(b"\x32", b"".join(_field(b"\x0a", _key_value(str(k), v))
                                        for k, v in value.items()))
    raise TypeError(f"invalid attribute value type {type(value).__name__}")


def _key_value(key: str, value: Any) -> bytes:
    encoded = key.encode("utf-8")
    return (_field(b"\x0a", encoded) if encoded else b"") + _field(b"\x12", _any_value(value))


def encode_attributes(attributes: Mapping[str, Any], tag: bytes = b"\x4a") -> bytes:
    """The repeated ``KeyValue`` fields (``tag``: 9, a span's attributes) of ``attributes``;
    a value of a type OTLP has no form for is left out, as the SDK leaves it."""
    parts = []
    for key, value in attributes.items():
        try:
            parts.append(_field(tag, _key_value(key, value)))
        except TypeError:
            continue
    return b"".join(parts)


class SpanEncoder:
    """Encodes batches of finished spans as one OTLP request; keeps the encoding of shared
    attribute sets, resources and scopes between batches (one encoder per export thread)."""

    def __init__(self) -> None:
        self._attributes: dict[int, tuple[Mapping[str, Any], bytes]] = {}
        self._groups: dict[tuple[int, int], _Heads] = {}

    def request(self, spans: Sequence[ReadableSpan]) -> bytes:
        """The serialized ``ExportTraceServiceRequest`` of ``spans``, grouped by resource
        and instrumentation scope in the order they first come (as the SDK groups them)."""
        heads: dict[tuple[int, int], _Heads] = {}
        groups: dict[tuple[int, int], list[bytes]] = {}
        first_equal: dict[int, Any] = {}  # id of a resource or scope -> the equal one first seen
        by_value: dict[Any, Any] = {}  # (hashing a Resource dumps its attributes: once each)
        for span in spans:
            key = tuple(id(_first_equal(part, first_equal, by_value))
                        for part in (span.resource, span.instrumentation_scope))
            if key not in heads:
                heads[key] = self._heads(span, key)
            groups.setdefault(key, []).append(_field(b"\x12", self._span(span)))
        by_resource: dict[int, tuple[tuple[bytes, bytes], list[bytes]]] = {}
        for key, encoded in groups.items():
            resource_head, scope_head = heads[key][2], heads[key][3]
            by_resource.setdefault(key[0], (resource_head, []))[1].append(
                _field(b"\x12", scope_head + b"".join(encoded)))
        return b"".join(_field(b"\x0a", resource + b"".join(scopes) + schema)
                        for (resource, schema), scopes in by_resource.values())

    def _heads(self, span: ReadableSpan, key: tuple[int, int]) -> _Heads:
        """The kept encoding of the span's resource and scope (made anew when the objects
        at those ids are others)."""
        known = self._groups.get(key)
        if (known is None or known[0] != span.resource
                or known[1] != span.instrumentation_scope):
            if len(self._groups) >= 64:
                self._groups.clear()
            known = self._groups[key] = self._group_heads(span)
        return known

    def _group_heads(self, span: ReadableSpan) -> _Heads:
        """The resource's and scope's own fields, encoded by the SDK once per pair."""
        made = encode_spans([span]).resource_spans[0]
        scope_spans = made.scope_spans[0]
        resource = _field(b"\x0a", made.resource.SerializeToString()) if made.HasField(
            "resource") else b""
        schema = _field(b"\x1a", made.schema_url.encode()) if made.schema_url else b""
        scope = _field(b"\x0a", scope_spans.scope.SerializeToString()) if scope_spans.HasField(
            "scope") else b""
        if scope_spans.schema_url:
            scope += _field(b"\x1a", scope_spans.schema_url.encode())
        return span.resource, span.instrumentation_scope, (resource, schema), scope

    def _span(self, span: ReadableSpan) -> bytes:
        if (span.events or span.links or span.dropped_attributes or span.dropped_events
                or span.dropped_links):
            return encode_spans([span]).resource_spans[0].scope_spans[0].spans[
                0].SerializeToString()
        context, parent, status = span.get_span_context(), span.parent, span.status
        parts = [b"\x0a\x10", context.trace_id.to_bytes(16, "big"),
                 b"\x12\x08", context.span_id.to_bytes(8, "big")]
        if context.trace_state:
            parts.append(_field(b"\x1a", ",".join(
                f"{k}={v}" for k, v in context.trace_state.items()).encode("utf-8")))
        if parent is not None:
            parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
        parts.append(_field(b"\x2a", span.name.encode("utf-8")))
        parts += (b"\x30", _varint(_KIND[span.kind]))
        if span.start_time:
            parts += (b"\x39", _pack_fixed64(span.start_time))
        if span.end_time:
            parts += (b"\x41", _pack_fixed64(span.end_time))
        parts.append(self._span_attributes(span))
        status_body = (_field(b"\x12", status.description.encode("utf-8"))
                       if status.description else b"")
        if status.status_code.value:
            status_body += b"\x18" + _varint(status.status_code.value)
        parts.append(_field(b"\x7a", status_body))
        flags = _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)
        parts += (b"\x85\x01", flags.to_bytes(4, "little"))
        return b"".join(parts)

    def _span_attributes(self, span: ReadableSpan) -> bytes:
        shared = getattr(span, "shared_attributes", None)
        if shared is None:
            return encode_attributes(span.attributes)
        known = self._attributes.get(id(shared))
        if known is not None and known[0] is shared:
            return known[1]
        encoded = encode_attributes(shared)
        if len(self._attributes) >= MEMO_SIZE:
            self._attributes.clear()
        self._attributes[id(shared)] = (shared, encoded)
        return encoded
