"""The OpenAPI 3.0 -> JSON Schema 2020-12 converter of tests/openapi_schema.py and its
plumbing (document path, skip when absent): no real document needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.openapi_bodies import assert_invalid
from tests.openapi_schema import (
    ENV_VAR,
    convert_schema,
    load_openapi,
    openapi_path,
    requires_openapi,
    validate_schema,
)


def _check(schema: Any, instance: object) -> bool:
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **convert_schema(schema)}
    return bool(Draft202012Validator(root).is_valid(instance))


def test_nullable_on_plain_type() -> None:
    schema = {"type": "string", "nullable": True}
    assert convert_schema(schema) == {"type": ["string", "null"]}
    assert _check(schema, None) and _check(schema, "x") and not _check(schema, 1)
    assert not _check({"type": "string"}, None)


def test_nullable_with_enum_allows_null_but_not_other_values() -> None:
    schema = {"type": "string", "enum": ["stop", "length"], "nullable": True}
    assert _check(schema, None) and _check(schema, "stop")
    assert not _check(schema, "bogus")


def test_nullable_on_ref_and_composites_wraps_in_anyof() -> None:
    for schema in (
        {"$ref": "#/components/schemas/X", "nullable": True},
        {"allOf": [{"type": "integer"}], "nullable": True},
        {"oneOf": [{"type": "integer"}, {"type": "string"}], "nullable": True},
        {"anyOf": [{"type": "integer"}], "nullable": True},
        {"const": "x", "nullable": True},
        {"description": "untyped", "nullable": True},
    ):
        converted = convert_schema(schema)
        assert converted["anyOf"][1] == {"type": "null"}, schema
        assert "nullable" not in converted["anyOf"][0]
    assert convert_schema({"$ref": "#/components/schemas/X", "nullable": True})["anyOf"][0] == {
        "$ref": "#/$defs/X"
    }
    assert _check({"allOf": [{"type": "integer"}], "nullable": True}, None)
    assert not _check({"allOf": [{"type": "integer"}], "nullable": True}, "x")
    assert _check({"const": "x", "nullable": True}, None)


def test_nullable_false_dropped_and_nested_conversion() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "integer", "nullable": False},
            "nullable": {"type": "array", "items": {"type": "number", "nullable": True}},
        },
        "example": {"a": None, "nullable": True},
        "x-oaiMeta": {"nullable": True},
        "discriminator": {"propertyName": "a", "mapping": {"1": "#/components/schemas/Y"}},
    }
    converted = convert_schema(schema)
    assert converted["properties"]["a"] == {"type": "integer"}
    assert converted["properties"]["nullable"]["items"] == {"type": ["number", "null"]}
    # Annotations are copied verbatim, not treated as schemas.
    assert converted["example"] == {"a": None, "nullable": True}
    assert converted["x-oaiMeta"] == {"nullable": True}
    assert converted["discriminator"] == schema["discriminator"]
    assert _check(schema, {"a": 1, "nullable": [1.5, None]})
    assert not _check(schema, {"a": None})
    assert not _check(schema, {"nullable": []})


def test_boolean_exclusive_bounds() -> None:
    schema = {"type": "number", "minimum": 0, "maximum": 2, "exclusiveMinimum": True}
    assert convert_schema(schema) == {"type": "number", "maximum": 2, "exclusiveMinimum": 0}
    assert not _check(schema, 0) and _check(schema, 0.1) and _check(schema, 2)
    schema = {"type": "number", "maximum": 2, "exclusiveMaximum": False}
    assert convert_schema(schema) == {"type": "number", "maximum": 2}


def test_additional_properties_not_tightened() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert "additionalProperties" not in convert_schema(schema)
    assert _check(schema, {"a": "x", "extra": 1})
    strict = {**schema, "additionalProperties": False}
    assert not _check(strict, {"a": "x", "extra": 1})


def test_recursive_ref_points_at_component() -> None:
    schema = {
        "$recursiveAnchor": True,
        "type": "object",
        "properties": {"filters": {"type": "array", "items": {"$recursiveRef": "#"}}},
    }
    converted = convert_schema(schema, "Filter")
    assert "$recursiveAnchor" not in converted
    assert converted["properties"]["filters"]["items"] == {"$ref": "#/$defs/Filter"}


def _write_doc(path: Path) -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "Usage": {
                    "type": "object",
                    "required": ["total_tokens"],
                    "properties": {"total_tokens": {"type": "integer"}},
                },
                "Chunk": {
                    "type": "object",
                    "required": ["finish_reason", "usage"],
                    "properties": {
                        "finish_reason": {
                            "type": "string",
                            "enum": ["stop", "length"],
                            "nullable": True,
                        },
                        "usage": {"$ref": "#/components/schemas/Usage", "nullable": True},
                    },
                },
            }
        },
    }
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_env_override_and_synthetic_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc_path = tmp_path / "openapi.json"
    _write_doc(doc_path)
    monkeypatch.setenv(ENV_VAR, str(doc_path))
    assert openapi_path() == doc_path
    doc = load_openapi()
    assert doc is not None and doc["openapi"] == "3.1.0"
    assert load_openapi() is doc  # cached
    validate_schema("Chunk", {"finish_reason": None, "usage": None})
    validate_schema("Chunk", {"finish_reason": "stop", "usage": {"total_tokens": 3}})
    assert_invalid(
        "Chunk",
        {"finish_reason": "bogus", "usage": {}},
        "(2 error(s))",
        "$.finish_reason: 'bogus' is not one of ['stop', 'length', None]",
        "$.usage: {} is not valid under any of the given schemas",
        "anyOf branch 0: $.usage: 'total_tokens' is a required property",
    )
    assert_invalid("Chunk", {}, "'finish_reason' is a required property")


def test_missing_document_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope" / "openapi.json"
    monkeypatch.setenv(ENV_VAR, str(missing))
    assert openapi_path() == missing
    assert load_openapi() is None
    with pytest.raises(pytest.skip.Exception, match="OpenAI OpenAPI document not found at"):
        validate_schema("Chunk", {})


def test_default_path_is_next_to_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    repo_root = Path(__file__).resolve().parents[2]
    assert openapi_path() == repo_root.parent / "shared" / "openai-openapi" / "openapi.json"
    mark = requires_openapi.mark
    assert mark.name == "skipif"
    assert mark.kwargs["reason"].startswith("OpenAI OpenAPI document not found at ")
