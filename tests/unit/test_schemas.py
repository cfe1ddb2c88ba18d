"""Request wire schemas: an explicit null for a field OpenAI marks nullable is accepted
and means the field's default (app/schemas/base.py).

The nullable fields are read from OpenAI's OpenAPI document (skipped when it is absent),
so a field the document makes nullable later is covered without editing this file.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from app.schemas.chat import ChatCompletionRequest, StreamOptions
from app.schemas.completions import CompletionRequest
from tests.openapi_schema import load_openapi, requires_openapi

HI = [{"role": "user", "content": "hi"}]
# OpenAI's request schema -> (our model, the smallest body it takes)
REQUESTS: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "CreateChatCompletionRequest": (ChatCompletionRequest, {"messages": HI}),
    "CreateCompletionRequest": (CompletionRequest, {"prompt": "hi"}),
}
# Nullable in the document but required here, with why: refused with a clear 400.
REFUSED = {
    # OpenAI lists `prompt` as required *and* nullable (defaulting to GPT's
    # "<|endoftext|>"); a completion of no prompt is not something to guess for Qwen3.
    ("CreateCompletionRequest", "prompt"),
}
_PREFIX = "#/components/schemas/"


def _resolve(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].removeprefix(_PREFIX)]
    return schema


def _nullable(schema: dict[str, Any], doc: dict[str, Any]) -> bool:
    """`nullable: true` (3.0), `type: "null"` or a `[..., "null"]` type list (3.1), or a
    `$ref` / `anyOf` / `oneOf` that reaches one of those."""
    schema = _resolve(schema, doc)
    kind = schema.get("type")
    if schema.get("nullable") is True or kind == "null":
        return True
    if isinstance(kind, list) and "null" in kind:
        return True
    branches = [*schema.get("anyOf", []), *schema.get("oneOf", [])]
    return any(_nullable(branch, doc) for branch in branches)


def _properties(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """A schema's properties, its `allOf` parents' included."""
    schema = doc["components"]["schemas"][name]
    out: dict[str, Any] = {}
    for part in schema.get("allOf", []):
        if "$ref" in part:
            out |= _properties(part["$ref"].removeprefix(_PREFIX), doc)
        else:
            out |= part.get("properties", {})
    return out | schema.get("properties", {})


def _nullable_fields() -> list[tuple[str, str]]:
    doc = load_openapi()
    if doc is None:
        return []
    return [
        (name, prop)
        for name in REQUESTS
        for prop, schema in sorted(_properties(name, doc).items())
        if _nullable(schema, doc)
    ]


NULLABLE = _nullable_fields()


@requires_openapi
def test_the_document_marks_the_reported_fields_nullable() -> None:
    """The walk finds what the bug report named (so an empty walk can't pass silently)."""
    for prop in ("logprobs", "stream", "n", "temperature", "stop", "stream_options"):
        assert ("CreateChatCompletionRequest", prop) in NULLABLE
    for prop in ("echo", "stream", "n", "max_tokens", "logprobs"):
        assert ("CreateCompletionRequest", prop) in NULLABLE


@requires_openapi
@pytest.mark.parametrize(("schema", "prop"), [pytest.param(*p, id="/".join(p)) for p in NULLABLE])
def test_null_means_the_default(schema: str, prop: str) -> None:
    model, body = REQUESTS[schema]
    if (schema, prop) in REFUSED:
        with pytest.raises(ValidationError):
            model.model_validate(body | {prop: None})
        return
    parsed = model.model_validate(body | {prop: None})
    plain = model.model_validate(body)
    if prop in type(parsed).model_fields:  # fields we don't read are ignored either way
        assert getattr(parsed, prop) == getattr(plain, prop)
        assert prop not in parsed.model_fields_set or getattr(parsed, prop) is None


@pytest.mark.parametrize(
    ("model", "body", "field", "default"),
    [
        (ChatCompletionRequest, {"messages": HI}, "stream", False),
        (ChatCompletionRequest, {"messages": HI}, "n", 1),
        (ChatCompletionRequest, {"messages": HI}, "logprobs", False),
        (ChatCompletionRequest, {"messages": HI}, "min_tokens", 0),
        (CompletionRequest, {"prompt": "hi"}, "echo", False),
        (CompletionRequest, {"prompt": "hi"}, "max_tokens", 16),
        (StreamOptions, {}, "include_usage", False),
    ],
)
def test_null_for_a_valued_default(
    model: type[BaseModel], body: dict[str, Any], field: str, default: object
) -> None:
    """Without the document too: the fields whose default is a value, not None."""
    parsed = model.model_validate(body | {field: None})
    assert getattr(parsed, field) == default
    assert field not in parsed.model_fields_set


def test_null_for_a_required_field_is_still_refused() -> None:
    with pytest.raises(ValidationError):
        ChatCompletionRequest.model_validate({"messages": None})


def test_a_wrong_type_is_still_refused() -> None:
    with pytest.raises(ValidationError):
        ChatCompletionRequest.model_validate({"messages": HI, "stream": "sometimes"})


@pytest.mark.parametrize(
    ("model", "body", "loc"),
    [
        (
            ChatCompletionRequest,
            '{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
            ("temperature",),
        ),
        (
            ChatCompletionRequest,
            '{"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": NaN}}',
            ("logit_bias", "1"),
        ),
        (
            ChatCompletionRequest,
            '{"messages": [{"role": "user", "content": "x"}], "presence_penalty": -Infinity}',
            ("presence_penalty",),
        ),
        (CompletionRequest, '{"prompt": "x", "top_p": NaN}', ("top_p",)),
    ],
)
def test_nan_and_infinity_are_refused_as_not_finite(
    model: type[BaseModel], body: str, loc: tuple[str, ...]
) -> None:
    """JSON's `NaN` parses; it is refused as not finite, not as past a bound it misses."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(body)
    error = caught.value.errors()[0]
    assert error["loc"] == loc
    assert error["msg"] == "Input should be a finite number"
