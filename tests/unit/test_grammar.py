"""app.grammar: the EBNF it builds, checked against xgrammar (vLLM's backend) when present."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.grammar import (
    ToolSpec,
    UnsupportedSchema,
    json_object_grammar,
    json_schema_grammar,
    tool_call_grammar,
)
from app.grammar_ebnf import json_literal, literal

xgr = pytest.importorskip("xgrammar")
try:
    from xgrammar.testing import _is_grammar_accept_string as _accepts
except ImportError:  # pragma: no cover - xgrammar without its testing helpers
    _accepts = None


def accepts(grammar: str, text: str) -> bool:
    if _accepts is None:
        pytest.skip("xgrammar.testing is not available")
    return bool(_accepts(grammar, text))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
        "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def test_literal_escapes() -> None:
    assert literal('a"b\\c\nd\te') == '"a\\"b\\\\c\\nd\\te"'
    assert literal("\x01") == '"\\u0001"'
    assert literal("中") == '"中"'
    assert json_literal({"a": [1, "x"]}) == literal('{"a": [1, "x"]}')


def test_grammars_compile() -> None:
    for grammar in (
        json_object_grammar(),
        json_schema_grammar(PERSON),
        json_schema_grammar({}),
        tool_call_grammar([ToolSpec("f", PERSON), ToolSpec("g")], max_calls=3),
    ):
        xgr.Grammar.from_ebnf(grammar)


@pytest.mark.parametrize(
    "value",
    [
        {"name": "bob", "age": 3},
        {"name": "", "age": 0, "tags": ["a", "b"], "score": 1.5},
        {"name": 'a"\\', "age": 12, "score": None},
        {"name": "x", "age": 1, "tags": ["b"], "score": -2e-5},
    ],
)
def test_schema_grammar_accepts_valid_documents(value: dict[str, Any]) -> None:
    assert accepts(json_schema_grammar(PERSON), dumps(value))


@pytest.mark.parametrize(
    "text",
    [
        '{"name":"bob","age":3}',  # other whitespace
        '{"name": "bob",  "age": 3}',
        '{"name": "toolong", "age": 3}',  # maxLength
        '{"age": 3}',  # required
        '{"name": "a", "age": -1}',  # minimum 0
        '{"name": "a", "age": 1, "tags": []}',  # minItems
        '{"name": "a", "age": 1, "tags": ["a", "b", "a"]}',  # maxItems
        '{"name": "a", "age": 1, "tags": ["c"]}',  # enum
        '{"age": 1, "name": "a"}',  # schema order
        '{"name": "a", "age": 1, "other": 1}',  # additionalProperties
        '{"name": "a", "age": 1.5}',  # integer
    ],
)
def test_schema_grammar_rejects(text: str) -> None:
    assert not accepts(json_schema_grammar(PERSON), text)


def test_optional_properties_any_subset_in_order() -> None:
    schema = {"type": "object", "properties": {k: {"type": "boolean"} for k in "abc"}}
    grammar = json_schema_grammar(schema)
    for keys in ("", "a", "b", "c", "ab", "ac", "bc", "abc"):
        assert accepts(grammar, dumps(dict.fromkeys(keys, True))), keys
    assert not accepts(grammar, '{, "a": true}')
    assert not accepts(grammar, '{"b": true, "a": true}')


def test_refs_and_recursion() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    grammar = json_schema_grammar(schema)
    assert accepts(grammar, dumps({"kids": [{}, {"kids": [{"kids": []}]}]}))
    assert not accepts(grammar, dumps({"kids": [1]}))


def test_pydantic_model_schema() -> None:
    from pydantic import BaseModel, Field

    class Pet(BaseModel):
        kind: str = Field(max_length=8)

    class Owner(BaseModel):
        name: str = Field(max_length=10)
        pets: list[Pet] = Field(max_length=2)
        nickname: str | None = None

    grammar = json_schema_grammar(Owner.model_json_schema())
    value = Owner(name="ann", pets=[Pet(kind="cat")], nickname=None)
    assert accepts(grammar, dumps(value.model_dump()))


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a+$"},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "date", "maxLength": 4},
        {"type": "number", "maximum": 5},
        {"type": "number", "exclusiveMinimum": 0},
        {"allOf": [{"type": "string"}, {"maxLength": 3}]},
        {"type": "object", "properties": {"a": {}}, "required": ["b"]},
        {"type": "array", "uniqueItems": True},
        {"$ref": "#/$defs/Missing"},
        {"not": {"type": "null"}},
        False,
    ],
)
def test_unsupported_keywords_raise(schema: Any) -> None:
    with pytest.raises(UnsupportedSchema):
        json_schema_grammar(schema)


def test_annotations_are_ignored() -> None:
    schema = {"title": "T", "description": "d", "type": "string", "default": "x", "examples": []}
    assert accepts(json_schema_grammar(schema), '"hi"')


def test_numbers_are_bounded() -> None:
    grammar = json_schema_grammar({"type": "number"})
    assert accepts(grammar, "-12.5e10")
    assert not accepts(grammar, "1" * 17)
    assert not accepts(grammar, "1e100")  # a three-digit exponent could overflow a double
    assert not accepts(grammar, "01")


def test_json_object_grammar() -> None:
    grammar = json_object_grammar()
    assert accepts(grammar, dumps({"a": [1, {"b": None}], "c": "é", "d": True}))
    assert accepts(grammar, "{}")
    assert not accepts(grammar, "[]")
    assert not accepts(grammar, '"x"')


WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 10}, "unit": {"enum": ["c", "f"]}},
    "required": ["city"],
}


def call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_tool_call_grammar_forces_qwen3_calls() -> None:
    grammar = tool_call_grammar([ToolSpec("get_weather", WEATHER), ToolSpec("now")], max_calls=2)
    one = call("get_weather", {"city": "Paris", "unit": "c"})
    assert accepts(grammar, one)
    assert accepts(grammar, call("now", {}))
    assert accepts(grammar, one + "\n" + call("now", {}))
    assert not accepts(grammar, "")  # at least one call
    assert not accepts(grammar, "Sure! " + one)
    assert not accepts(grammar, "\n".join([one] * 3))  # at most max_calls
    assert not accepts(grammar, call("other", {}))
    assert not accepts(grammar, call("get_weather", {"unit": "c"}))  # required city
    assert not accepts(grammar, call("now", {"x": 1}))  # no parameters: {}


def test_integer_bounds_and_formats_are_spelled_exactly() -> None:
    small = json_schema_grammar({"type": "integer", "minimum": -3, "exclusiveMaximum": 6})
    assert [n for n in range(-20, 20) if accepts(small, str(n))] == list(range(-3, 6))
    assert not accepts(small, "-0") and not accepts(small, "05")
    date = json_schema_grammar({"type": "string", "format": "date"})
    assert accepts(date, '"2024-02-29"')
    assert not accepts(date, '"2024-13-01"') and not accepts(date, '"tomorrow"')
    when = json_schema_grammar({"type": "string", "format": "date-time"})
    assert accepts(when, '"2024-02-29T23:59:60Z"') is False  # seconds 00-59
    assert accepts(when, '"2024-02-29T23:59:59.25+05:30"')


def test_tool_with_unsupported_keywords_keeps_the_rest_of_its_schema() -> None:
    """The keywords the grammar can't spell are dropped, one by one, never the schema:
    before, one `pattern` or `format` made the arguments any JSON object (`{}` for a
    function with a required parameter)."""
    odd = {"type": "object", "properties": {"q": {"type": "string", "pattern": "x+"}}}
    dated = {
        "type": "object",
        "properties": {"a": {"type": "string", "format": "date"}},
        "required": ["a"],
    }
    grammar = tool_call_grammar([ToolSpec("search", odd), ToolSpec("w", WEATHER)])
    assert accepts(grammar, call("search", {"q": "anything"}))  # pattern dropped
    assert not accepts(grammar, call("search", {"anything": [1, 2]}))
    assert not accepts(grammar, call("search", {"q": 1}))
    assert accepts(grammar, call("w", {"city": "Rome"}))
    assert not accepts(grammar, call("w", {"town": "Rome"}))
    grammar = tool_call_grammar([ToolSpec("f", dated)])
    assert accepts(grammar, call("f", {"a": "2024-01-31"}))
    assert not accepts(grammar, call("f", {}))  # required `a`
    assert not accepts(grammar, call("f", {"a": "soon"}))


@pytest.mark.parametrize(
    ("parameters", "good", "bad"),
    [
        ({"type": "integer", "maximum": 5}, [5, -7, 0], [6, 12, {"": 1}]),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}},
            [{"n": 5}, {}],
            [{"n": 6}, {"": 1}],
        ),
        (
            {"type": "object",
             "properties": {"x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
            [{"x": 0.5}, {"x": 3}],  # the maximum is dropped, the sign kept
            [{"x": -1}, {"y": 1}],
        ),
        (
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 2},
            [["a", "b"], ["a", "a"]],
            [[1], ["a", "b", "c"]],
        ),
        (
            {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 1,
             "required": ["a", "b"]},
            [{"a": 1, "b": [None]}],  # b has no schema: any value, still required
            [{"a": 1}, {}],
        ),
        (
            {"allOf": [{"type": "object", "properties": {"a": {"type": "boolean"}},
                        "required": ["a"]},
                       {"properties": {"b": {"type": "null"}}}]},
            [{"a": True}, {"a": False, "b": None}],
            [{"b": None}, {"a": 1}],
        ),
        (
            {"$defs": {"D": {"type": "string", "format": "uuid"}},
             "type": "object", "properties": {"d": {"$ref": "#/$defs/D", "description": "x",
                                                    "pattern": "."}}, "required": ["d"]},
            [{"d": "123e4567-e89b-12d3-a456-426614174000"}],
            [{"d": "x"}, {}],
        ),
        (
            {"type": "object", "properties": {"v": {"not": {"type": "null"}, "type": "string"},
                                              "w": {"type": "string", "format": "email"}}},
            [{"v": "x", "w": "me@x.org"}, {"w": "not an email"}],
            [{"v": 1}, {"w": None}],
        ),
    ],
)  # fmt: skip
def test_loosened_tool_schemas(parameters: Any, good: list[Any], bad: list[Any]) -> None:
    grammar = tool_call_grammar([ToolSpec("f", parameters)])
    for value in good:
        assert accepts(grammar, call("f", value)), value
    for value in bad:
        assert not accepts(grammar, call("f", value)), value


def test_tool_call_grammar_needs_tools() -> None:
    with pytest.raises(ValueError):
        tool_call_grammar([])
