"""The one error shape."""

from __future__ import annotations

import orjson
import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field, ValidationError

from app.errors import GatewayError, install_error_handlers, not_found_message, validation_error
from app.schemas.chat import ChatCompletionRequest
from app.schemas.completions import CompletionRequest


class Body(BaseModel):
    count: int = Field(ge=1)


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/echo")
    async def echo(body: Body) -> dict[str, int]:
        return {"count": body.count}

    @app.get("/fail")
    async def fail() -> None:
        raise GatewayError("nope", status=404, code="model_not_found", param="model")

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret traceback detail")

    return app


@pytest.fixture
def client() -> TestClient:
    return TestClient(make_app(), raise_server_exceptions=False)


def assert_shape(body: dict[str, object]) -> dict[str, object]:
    error = body["error"]
    assert isinstance(error, dict)
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["code"], str)
    return error


def test_gateway_error_body() -> None:
    err = GatewayError("bad", param="x")
    assert orjson.loads(err.to_bytes()) == {
        "error": {
            "message": "bad",
            "type": "invalid_request_error",
            "param": "x",
            "code": "invalid_request",
        }
    }


def test_validation_is_400_not_422(client: TestClient) -> None:
    r = client.post("/echo", json={"count": 0})
    assert r.status_code == 400
    error = assert_shape(r.json())
    assert error["param"] == "count"


def test_invalid_json_is_400(client: TestClient) -> None:
    r = client.post("/echo", content=b"{oops", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert assert_shape(r.json())["code"] == "invalid_json"


@pytest.mark.parametrize(
    ("headers", "content", "says"),
    [
        (
            {"content-type": "application/x-www-form-urlencoded"},
            b'{"count": 1}',
            "sent as application/x-www-form-urlencoded (what curl -d sends without -H",
        ),
        ({"content-type": "text/plain; charset=utf-8"}, b'{"count": 1}', "sent as text/plain;"),
        ({}, b'{"count": 1}', "The request has no Content-Type;"),
        ({"content-type": "application/json"}, b"[1, 2]", "must be a JSON object ({...})"),
    ],
)
def test_a_body_not_read_as_an_object_says_why(
    client: TestClient, headers: dict[str, str], content: bytes, says: str
) -> None:
    r = client.post("/echo", content=content, headers=headers)
    assert r.status_code == 400
    error = assert_shape(r.json())
    assert says in str(error["message"]), error
    assert error["code"] == "invalid_request" and error["param"] is None


def test_json_nested_too_deeply_is_invalid_json(client: TestClient) -> None:
    """FastAPI's own "There was an error parsing the body" (a RecursionError inside)."""
    deep = b'{"count": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = client.post("/echo", content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400
    error = assert_shape(r.json())
    assert error["code"] == "invalid_json" and "nested too deeply" in str(error["message"])


def test_a_body_that_is_not_utf8_is_invalid_encoding(client: TestClient) -> None:
    """Not FastAPI's vague "There was an error parsing the body" (a UnicodeDecodeError)."""
    body = b'{"count": "\xff\xfe"}'
    r = client.post("/echo", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    error = assert_shape(r.json())
    assert error["code"] == "invalid_encoding"
    assert "UTF-8" in str(error["message"]) and "0xff" in str(error["message"])


def test_gateway_error_status_and_code(client: TestClient) -> None:
    r = client.get("/fail")
    assert r.status_code == 404
    assert assert_shape(r.json())["code"] == "model_not_found"


def test_unknown_route_and_method(client: TestClient) -> None:
    assert assert_shape(client.get("/missing").json())["code"] == "not_found"
    r = client.get("/echo")
    assert r.status_code == 405
    assert_shape(r.json())


def test_unexpected_error_is_500_without_details(client: TestClient) -> None:
    r = client.get("/boom")
    assert r.status_code == 500
    error = assert_shape(r.json())
    assert "secret" not in str(error["message"])


def test_a_non_text_content_part_gets_one_clear_error() -> None:
    """An image part is named with its index and type, not as pydantic's failed union
    branches ("content.str: ...; content.list[TextPart][0].type: ...")."""
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]
    with pytest.raises(ValidationError) as caught:
        ChatCompletionRequest.model_validate({"messages": [{"role": "user", "content": parts}]})
    errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    error = validation_error(RequestValidationError(errors))
    assert error.status == 400 and error.param == "messages[0].content"
    assert "part 1 has type 'image_url'" in error.message and "text only" in error.message
    assert "list[TextPart]" not in error.message and ";" not in error.message


@pytest.mark.parametrize("schema", [ChatCompletionRequest, CompletionRequest])
@pytest.mark.parametrize("stop", ["", ["end", ""]])
def test_an_empty_stop_string_is_named_as_the_stop_field(
    schema: type[BaseModel], stop: object
) -> None:
    """vLLM refuses it too, but after the request is read and with no param; here it is a
    400 naming `stop`, in both endpoints' schemas."""
    body = {"messages": [{"role": "user", "content": "hi"}], "prompt": "hi", "stop": stop}
    with pytest.raises(ValidationError) as caught:
        schema.model_validate(body)
    errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    error = validation_error(RequestValidationError(errors))
    assert error.status == 400 and error.param == "stop"
    assert "must not be empty" in error.message
    assert schema.model_validate({**body, "stop": ["end", "\n"]}).stop == ["end", "\n"]


def chat_error(body: dict[str, object]) -> GatewayError:
    with pytest.raises(ValidationError) as caught:  # as FastAPI validates a body
        ChatCompletionRequest.model_validate(body, from_attributes=True)
    errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    return validation_error(RequestValidationError(errors))


@pytest.mark.parametrize(
    ("field", "value", "param", "message"),
    [
        # the list branch got further: its error, not "should be a valid string"
        ("content", [{"type": "text"}], "messages[0].content[0].text", "Field required"),
        # no branch got in: both, under one name without pydantic's type tags
        ("content", 5, "messages[0].content",
         "Input should be a valid string, or input should be a valid list"),
        ("stop", 5, "stop", "Input should be a valid string, or input should be a valid list"),
        # the two object branches (a named function, allowed_tools) fail alike: said once
        ("tool_choice", "maybe", "tool_choice", "Input should be 'none', 'auto' or 'required', "
         "or input should be a valid dictionary or object to extract fields from"),
    ],
)  # fmt: skip
def test_a_union_error_names_the_field_not_its_branches(
    field: str, value: object, param: str, message: str
) -> None:
    message_ = {"role": "user", "content": value if field == "content" else "hi"}
    body: dict[str, object] = {"messages": [message_]}
    if field != "content":
        body[field] = value
    error = chat_error(body)
    assert error.param == param
    assert error.message.startswith(f"Invalid request: {param}: {message}"), error.message
    for tag in ("list[", ".str", "TextPart]", "literal["):
        assert tag not in error.message and tag not in str(error.param)
    assert error.message.count(f"{param}:") == 1
    assert error.message.count("should be a valid dictionary") <= 1


def test_not_found_names_what_to_use_for_openai_endpoints_not_served() -> None:
    assert not_found_message("GET", "/v1/nothing") == "No route for GET /v1/nothing."
    responses = not_found_message("POST", "/v1/responses")
    assert responses.startswith("No route for POST /v1/responses; the Responses API")
    assert "/v1/chat/completions" in responses and responses.endswith(".")
    assert "Responses API" in not_found_message("GET", "/v1/responses/resp_1/input_items")
    assert "embeddings" in not_found_message("POST", "/v1/embeddings/")
    assert not_found_message("POST", "/v1/responsesx") == "No route for POST /v1/responsesx."
