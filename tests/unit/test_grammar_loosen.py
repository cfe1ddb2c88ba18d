"""app.grammar_loosen: what a forced tool call keeps of a schema the grammar can't spell."""

from __future__ import annotations

from typing import Any

import pytest

from app.grammar_loosen import loosen


@pytest.mark.parametrize(
    ("schema", "loose"),
    [
        ({"type": "string", "pattern": "a+", "title": "t"}, {"type": "string", "title": "t"}),
        ({"type": "string", "format": "email", "maxLength": 9}, {"type": "string", "maxLength": 9}),
        ({"type": "string", "format": "date", "maxLength": 9},
         {"type": "string", "format": "date"}),
        ({"type": "integer", "maximum": 5}, {"type": "integer", "maximum": 5}),
        ({"type": "integer", "minimum": 5, "maximum": 1}, {"type": "integer"}),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, {"type": "number", "minimum": 0}),
        ({"type": "number", "minimum": -1}, {"type": "number"}),
        ({"type": "array", "items": [{}], "minItems": 2, "maxItems": 1},
         {"type": "array", "minItems": 2}),
        ({"$ref": "#/$defs/A", "description": "d", "pattern": "x"}, {"$ref": "#/$defs/A"}),
        ({"type": "object", "anyOf": [{"required": ["a"]}]}, {"type": "object"}),
        ({"not": {}, "uniqueItems": True, "minProperties": 1}, {}),
        (
            {"type": "object", "properties": {"a": {}}, "required": ["a", "b", "a"]},
            {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
        ),
        (
            {"allOf": [{"properties": {"a": {}}, "required": ["a"]}, {"properties": {"b": {}}}]},
            {"properties": {"a": {}, "b": {}}, "required": ["a"]},
        ),
        (False, True),
        ({"type": "weird", "enum": []}, {}),
    ],
)  # fmt: skip
def test_loosen(schema: Any, loose: Any) -> None:
    assert loosen(schema) == loose
