"""Where a JSON schema names a type that JSON Schema doesn't have (`"type": "str"`).

A forced tool call's grammar (`app.grammar_tool_calls`) is compiled leniently, so such a
schema would not fail there: the arguments would take any JSON value instead. Found
first, it is a 400 that points at the place, as OpenAI's API and vLLM's grammar backend
refuse it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

JSON_TYPES: Final = ("object", "array", "string", "integer", "number", "boolean", "null")

_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions")
_ONE: Final = ("items", "additionalProperties", "not", "contains")
_LISTS: Final = ("items", "prefixItems", "anyOf", "oneOf", "allOf")


def unknown_type(schema: Any, path: str = "") -> tuple[str, Any] | None:
    """The first `type` in `schema` (and its subschemas) that names no JSON Schema type:
    its path (`.properties.city.type`) and value; None where every one is known."""
    if not isinstance(schema, Mapping):
        return None
    if "type" in schema:
        kind = schema["type"]
        names = kind if isinstance(kind, list) else [kind]
        if not names or any(name not in JSON_TYPES for name in names):
            return f"{path}.type", kind
    children: list[tuple[str, Any]] = []
    for key in _MAPS:
        if isinstance(schema.get(key), Mapping):
            children += [(f"{path}.{key}.{name}", sub) for name, sub in schema[key].items()]
    for key in _ONE:
        if isinstance(schema.get(key), Mapping):
            children.append((f"{path}.{key}", schema[key]))
    for key in _LISTS:
        if isinstance(schema.get(key), list):
            children += [(f"{path}.{key}[{i}]", sub) for i, sub in enumerate(schema[key])]
    for where, sub in children:
        found = unknown_type(sub, where)
        if found is not None:
            return found
    return None
