"""Structured outputs through the real engine: the content parses and matches the schema."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsonschema
import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.integration.conftest import LiveGateway
from tests.openapi_schema import validate_schema

ASK = [{"role": "user", "content": "Describe a person."}]
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 150}


class Pet(BaseModel):
    kind: str = Field(max_length=8)
    legs: int


class Person(BaseModel):
    """A person and their pets."""

    name: str = Field(max_length=10)
    age: int
    pets: list[Pet] = Field(max_length=2)
    nickname: str | None = Field(default=None, max_length=6)


PERSON_SCHEMA = Person.model_json_schema()


def chat(gateway: LiveGateway, **payload: Any) -> dict[str, Any]:
    body = {"model": gateway.model, "messages": ASK, **GREEDY, **payload}
    r = httpx.post(gateway.v1 + "/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    validate_schema("CreateChatCompletionResponse", result)
    return result


def content(result: dict[str, Any]) -> str:
    choice = result["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    text: str = choice["message"]["content"]
    return text


def test_sdk_parse_with_a_pydantic_model(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.parse(
        model=gateway.model, messages=ASK, response_format=Person, **GREEDY
    )
    parsed = resp.choices[0].message.parsed
    assert isinstance(parsed, Person)
    assert len(parsed.name) <= 10 and len(parsed.pets) <= 2


def test_json_schema_response_format(gateway: LiveGateway) -> None:
    result = chat(
        gateway,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True},
        },
    )
    jsonschema.validate(json.loads(content(result)), PERSON_SCHEMA)


def test_json_object_response_format(gateway: LiveGateway) -> None:
    # json_object bounds nothing (an untrained model may write one key until max_tokens):
    # every answer is written as an object, and every one that finishes parses as one.
    for prompt in ("Describe a person.", "hi", "Reply in JSON."):
        for extra in ({}, {"frequency_penalty": 1.0}):
            result = chat(
                gateway,
                messages=[{"role": "user", "content": prompt}],
                response_format={"type": "json_object"},
                **extra,
            )
            choice = result["choices"][0]
            text = choice["message"]["content"]
            assert text.startswith("{")
            if choice["finish_reason"] == "stop":
                assert isinstance(json.loads(text), dict)
            else:
                assert choice["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("extra", "check"),
    [
        ({"guided_json": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}}, "json"),
        ({"guided_regex": "(yes|no)-[0-9]{2}"}, r"(yes|no)-[0-9]{2}"),
        ({"guided_choice": ["red", "green", "blue"]}, r"red|green|blue"),
        ({"guided_grammar": 'root ::= "x" ("y" | "z")'}, r"x[yz]"),
        ({"structured_outputs": {"regex": "[a-c]{3}"}}, r"[a-c]{3}"),
        ({"structured_outputs": {"choice": ["up", "down"]}}, r"up|down"),
        ({"structured_outputs": {"json": {"enum": [1, "two"]}}}, "json"),
    ],
)
def test_vllm_extras(client: openai.OpenAI, gateway: LiveGateway, extra: Any, check: str) -> None:
    resp = client.chat.completions.create(
        model=gateway.model, messages=ASK, extra_body=extra, **GREEDY
    )
    text = resp.choices[0].message.content or ""
    assert resp.choices[0].finish_reason == "stop"
    if check == "json":
        schema = extra.get("guided_json") or extra["structured_outputs"]["json"]
        jsonschema.validate(json.loads(text), schema)
    else:
        assert re.fullmatch(check, text), text


def test_schema_outside_the_compact_subset_still_works(gateway: LiveGateway) -> None:
    schema = {"type": "string", "pattern": "^[ab]{2,4}$"}
    result = chat(gateway, guided_json=schema)
    jsonschema.validate(json.loads(content(result)), schema)


def test_streamed_structured_output(gateway: LiveGateway) -> None:
    body = {
        "model": gateway.model,
        "messages": ASK,
        "stream": True,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "p", "schema": PERSON_SCHEMA},
        },
        **GREEDY,
    }
    text = ""
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=body, timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                validate_schema("CreateChatCompletionStreamResponse", chunk)
                text += chunk["choices"][0]["delta"].get("content") or ""
    jsonschema.validate(json.loads(text), PERSON_SCHEMA)


def test_constrained_answers_skip_thinking_unless_asked(gateway: LiveGateway) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON_SCHEMA}}
    quiet = chat(gateway, response_format=fmt)
    assert "reasoning_content" not in quiet["choices"][0]["message"]
    jsonschema.validate(json.loads(content(quiet)), PERSON_SCHEMA)
    thoughtful = chat(
        gateway, response_format=fmt, enable_thinking=True, max_reasoning_tokens=8, max_tokens=250
    )
    message = thoughtful["choices"][0]["message"]
    assert "reasoning_content" in message  # thought first, unconstrained ...
    jsonschema.validate(json.loads(content(thoughtful)), PERSON_SCHEMA)  # ... then answered


def test_langchain_with_structured_output(gateway: LiveGateway) -> None:
    model = ChatOpenAI(
        model=gateway.model,
        base_url=gateway.v1,
        api_key="EMPTY",
        temperature=0,
        max_tokens=600,
        max_retries=0,
    )
    for method in ("json_schema", "function_calling"):
        result = model.with_structured_output(Person, method=method).invoke("Describe a person.")
        assert isinstance(result, Person), method


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format.json_schema",
        ),
        ({"response_format": {"type": "yaml"}}, "response_format.type"),
        ({"structured_outputs": {"regex": "a", "choice": ["a"]}}, "structured_outputs"),
        ({"guided_choice": []}, "guided_choice"),
        ({"n": 2, "enable_thinking": True, "guided_regex": "a"}, "n"),
    ],
)
def test_bad_constraints_are_400(gateway: LiveGateway, payload: dict[str, Any], param: str) -> None:
    r = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"model": gateway.model, "messages": ASK, **payload},
        timeout=30,
    )
    assert r.status_code == 400
    validate_schema("ErrorResponse", r.json())
    assert r.json()["error"]["param"] == param


REFUSED_BY_THE_ENGINE = [
    (
        "/chat/completions",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "nope"}},
            }
        },
        "response_format",
    ),
    ("/chat/completions", {"guided_regex": "(("}, "guided_regex"),
    ("/completions", {"structured_outputs": {"grammar": "root ::= foo"}}, "structured_outputs"),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("route", "payload", "param"), REFUSED_BY_THE_ENGINE)
def test_a_grammar_the_engine_refuses_is_a_400_naming_its_field(
    gateway: LiveGateway, route: str, payload: dict[str, Any], param: str, stream: bool
) -> None:
    """Constraints the gateway passes on that vLLM's grammar backend refuses: a 400 whose
    `param` is the request field, streamed or not (refused before any output, a stream
    answers with the status too, not a 200 holding only an error frame)."""
    prompt = {"messages": ASK} if route == "/chat/completions" else {"prompt": "A person:"}
    body = {"model": gateway.model, "max_tokens": 5, "stream": stream, **prompt, **payload}
    r = httpx.post(gateway.v1 + route, json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/json"
    error = r.json()["error"]
    assert (error["param"], error["code"]) == (param, "invalid_request")
    assert error["message"].startswith("The engine rejected the request: ")
    validate_schema("ErrorResponse", r.json())  # last: it skips where the document is absent


def test_the_sdk_sees_a_refused_streamed_grammar_as_bad_request(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    schema = {"name": "x", "schema": {"type": "nope"}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=gateway.model,
            messages=ASK,  # type: ignore[arg-type]
            max_tokens=5,
            stream=True,
            response_format={"type": "json_schema", "json_schema": schema},  # type: ignore[typeddict-item]
        )
    assert caught.value.status_code == 400
    assert caught.value.param == "response_format"  # type: ignore[attr-defined]
