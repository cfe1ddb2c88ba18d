"""Loosen a JSON schema to what the grammar compiler spells, for forced tool calls.

A forced call must be written whatever its schema says, and there is no fallback to
vLLM's own JSON-schema support inside the `<tool_call>` wrapper. So instead of giving up
on the whole schema, `loosen` drops only what the grammar cannot express (`pattern`, an
unknown `format`, bounds on non-integers, `uniqueItems`, `minProperties`, `not`, ...)
and keeps the rest: object shape, property names, `required`, types, enums, nesting.
The result accepts every value the schema accepts, and maybe more.

`loosen` rewrites one level; `SchemaCompiler` calls it again on each subschema it
reaches (and, lenient, replaces a subschema it still can't compile with any value of its
type).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from app.grammar_formats import FORMATS, integer_bounds, integer_range
from app.grammar_keywords import (
    ALL_TYPE_KEYS,
    ANNOTATIONS,
    COMBINATORS,
    INTEGER_KEYS,
    TYPE_KEYS,
    UnsupportedSchema,
)

__all__ = ["loosen"]

_STRUCTURE: Final = frozenset({"type", "$ref", "nullable", "const", "enum"})
_KNOWN: Final = ANNOTATIONS | ALL_TYPE_KEYS | COMBINATORS | _STRUCTURE


def loosen(schema: Any) -> Any:
    """`schema` with its top-level keywords cut to what the compiler can spell."""
    if schema is False:
        return True  # nothing is valid: any value, rather than no call at all
    if not isinstance(schema, Mapping):
        return schema
    out = {key: value for key, value in schema.items() if key in _KNOWN}
    if "$ref" in out:
        return {"$ref": out["$ref"]}
    if "allOf" in out:
        out = _merge_all_of(out)
    beside = set(out) - ANNOTATIONS - COMBINATORS - {"nullable"}
    if beside and any(key in out for key in COMBINATORS):  # keep the schema's own shape
        out = {key: value for key, value in out.items() if key not in COMBINATORS}
    for key in ("enum", *COMBINATORS):
        if key in out and not (isinstance(out[key], list) and out[key]):
            del out[key]
    types = _types(out)
    if types is None:
        out.pop("type", None)
        types = set()
    _loosen_string(out)
    _loosen_numbers(out, types)
    _loosen_object(out)
    _loosen_array(out)
    return out


def _types(schema: dict[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if kind is None:
        return set()
    names = [kind] if isinstance(kind, str) else kind
    if not isinstance(names, list) or not names or not all(n in TYPE_KEYS for n in names):
        return None
    return set(names)


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Several `allOf` parts as one schema: properties joined, required names added."""
    parts = schema["allOf"]
    if not isinstance(parts, list) or len(parts) < 2:
        return schema
    if not all(isinstance(part, Mapping) for part in parts):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return dict(loosen(merged))


def _loosen_string(schema: dict[str, Any]) -> None:
    if "format" not in schema:
        _drop_bad_ints(schema, "minLength", "maxLength")
        return
    if schema["format"] in FORMATS:
        schema.pop("minLength", None)  # the format fixes the spelling
        schema.pop("maxLength", None)
    else:
        del schema["format"]
        _drop_bad_ints(schema, "minLength", "maxLength")


def _loosen_numbers(schema: dict[str, Any], types: set[str]) -> None:
    """Integer bounds are kept when they make a range; a `number` keeps only `minimum: 0`
    (when its lower bound is at least 0)."""
    bounds = {key: schema.pop(key) for key in INTEGER_KEYS if key in schema}
    if not bounds:
        return
    if "number" in types:
        low = [v for k, v in bounds.items() if k.endswith("inimum") and not isinstance(v, bool)]
        if any(isinstance(v, int | float) and v >= 0 for v in low):
            schema["minimum"] = 0
        return
    try:
        integer_range(*integer_bounds(bounds))
    except UnsupportedSchema:
        return
    schema.update(bounds)


def _loosen_object(schema: dict[str, Any]) -> None:
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        del schema["properties"]
        properties = None
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(n, str) for n in required)
    ):
        del schema["required"]
        required = None
    if required:
        # A required name without a schema: a property that takes any value.
        missing: dict[str, Any] = {
            name: {} for name in dict.fromkeys(required) if name not in (properties or {})
        }
        if missing:
            schema["properties"] = {**(properties or {}), **missing}
        schema["required"] = list(dict.fromkeys(required))


def _loosen_array(schema: dict[str, Any]) -> None:
    if isinstance(schema.get("items"), list):  # tuple-style items: any items
        del schema["items"]
    _drop_bad_ints(schema, "minItems", "maxItems")
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if high is not None and high < low:
        del schema["maxItems"]


def _drop_bad_ints(schema: dict[str, Any], *keys: str) -> None:
    for key in keys:
        value = schema.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            del schema[key]
