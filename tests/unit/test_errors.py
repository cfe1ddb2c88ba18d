"""The one error shape."""

from __future__ import annotations

import orjson
import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field, ValidationError

from app.errors import GatewayError, install_error_handlers, validation_error
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
