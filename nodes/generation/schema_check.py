"""JSON Schema checking: ``jsonschema`` when installed, else a small built-in subset.

The subset covers ``type``, ``properties``, ``required``, ``additionalProperties: false``,
``items``, ``enum``, ``const``, ``minLength``/``maxLength``, ``minimum``/``maximum`` and
``minItems``/``maxItems``, which is what answer schemas use.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),),
}


def schema_errors(data: Any, schema: dict[str, Any], limit: int = 5) -> list[str]:
    """Readable problems (``$.path: message``), empty when ``data`` satisfies ``schema``."""
    try:
        import jsonschema
    except ImportError:
        return _check(data, schema, "$")[:limit]
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"the JSON schema itself is invalid: {exc.message}") from None
    errors = sorted(validator_cls(schema).iter_errors(data), key=lambda e: list(e.path))
    return [f"{_path(e.absolute_path)}: {e.message}" for e in errors[:limit]]


def _path(parts: Any) -> str:
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _type_ok(value: Any, expected: str | list[str]) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        kinds = _TYPES.get(name, (object,))
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, kinds):
            return True
    return False


def _check(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if "type" in schema and not _type_ok(value, schema["type"]):
        return [f"{path}: expected {schema['type']}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {schema['const']!r}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: longer than {schema['maxLength']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: more than {schema['maximum']}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}: '{name}' is a required property")
        properties = schema.get("properties", {})
        for name, item in value.items():
            if name in properties:
                problems.extend(_check(item, properties[name], f"{path}.{name}"))
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: additional property '{name}' is not allowed")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                problems.extend(_check(item, schema["items"], f"{path}[{i}]"))
    return problems
