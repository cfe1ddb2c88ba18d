"""The JSON Schema subset the grammar compiler reads: keywords per type, annotations it
ignores, and `UnsupportedSchema` for everything else."""

from __future__ import annotations

__all__ = [
    "ALL_TYPE_KEYS",
    "ANNOTATIONS",
    "ARRAY_KEYS",
    "COMBINATORS",
    "INTEGER_KEYS",
    "NUMBER_KEYS",
    "OBJECT_KEYS",
    "STRING_KEYS",
    "TYPE_KEYS",
    "UnsupportedSchema",
]

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "deprecated",
        "readOnly",
        "writeOnly",
        "strict",
        "discriminator",
    }
)
OBJECT_KEYS = frozenset({"properties", "required", "additionalProperties"})
ARRAY_KEYS = frozenset({"items", "minItems", "maxItems"})
STRING_KEYS = frozenset({"minLength", "maxLength", "format"})
INTEGER_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
NUMBER_KEYS = frozenset({"minimum"})  # 0 only (see app.grammar_schema)
TYPE_KEYS = {
    "object": OBJECT_KEYS,
    "array": ARRAY_KEYS,
    "string": STRING_KEYS,
    "integer": INTEGER_KEYS,
    "number": NUMBER_KEYS,
    "boolean": frozenset(),
    "null": frozenset(),
}
ALL_TYPE_KEYS = frozenset().union(*TYPE_KEYS.values())
COMBINATORS = frozenset({"anyOf", "oneOf", "allOf"})


class UnsupportedSchema(ValueError):
    """The schema uses a keyword outside the supported subset."""
