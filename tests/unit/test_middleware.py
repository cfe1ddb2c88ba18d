"""Path tolerance, body limit, request metrics and request ids, on a bare app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from app.errors import install_error_handlers
from app.metrics import gateway_metrics
from app.middleware import BodyLimitMiddleware, PathMiddleware, normalize_path
from app.observe import ObserveMiddleware


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", "/v1/chat/completions"),
        ("/v1/chat/completions/", "/v1/chat/completions"),
        ("//v1/chat/completions", "/v1/chat/completions"),
        ("/v1//chat///completions//", "/v1/chat/completions"),
        ("/", "/"),
        # a model id is data: its own slashes are kept as sent (the SDK sends `/` as %2F)
        ("/v1/models//root/Qwen3-0.6B/", "/v1/models//root/Qwen3-0.6B/"),
        ("//v1//models/Qwen/Qwen3-0.6B", "/v1/models/Qwen/Qwen3-0.6B"),
        ("/v1/models/", "/v1/models"),
        ("//v1/models", "/v1/models"),
    ],
)
def test_normalize_path(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


class Prompt(BaseModel):
    prompt: str


def make_client() -> tuple[TestClient, CollectorRegistry]:
    registry = CollectorRegistry()
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, int]:
        return {"size": len(await request.body())}

    @app.post("/v1/completions")
    async def parsed(body: Prompt) -> dict[str, int]:  # FastAPI reads and parses the body
        return {"size": len(body.prompt)}

    app.add_middleware(BodyLimitMiddleware, max_bytes=100)
    app.add_middleware(
        ObserveMiddleware,
        metrics=gateway_metrics(registry),
        routes=["/v1/chat/completions", "/v1/models/{model}"],
    )
    app.add_middleware(PathMiddleware)
    return TestClient(app), registry


@pytest.mark.parametrize("path", ["/v1/chat/completions/", "//v1/chat/completions"])
def test_tolerant_paths_reach_the_route(path: str) -> None:
    client, _ = make_client()
    r = client.post("http://testserver" + path, content=b"abc", follow_redirects=False)
    assert r.status_code == 200
    assert r.json() == {"size": 3}


def test_body_over_limit_is_413() -> None:
    client, _ = make_client()
    r = client.post("/v1/chat/completions", content=b"x" * 101)
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize("encoding", ["gzip", "br", " Deflate "])
def test_a_compressed_body_is_415_naming_the_encoding(encoding: str) -> None:
    client, _ = make_client()
    r = client.post(
        "/v1/chat/completions", content=b"\x1f\x8b...", headers={"content-encoding": encoding}
    )
    assert r.status_code == 415, r.text
    error = r.json()["error"]
    assert error["code"] == "unsupported_content_encoding"
    assert encoding.strip() in error["message"] and error["type"] == "invalid_request_error"
    plain = client.post(
        "/v1/chat/completions", content=b"abc", headers={"content-encoding": "identity"}
    )
    assert plain.status_code == 200


def chunks(total: int) -> Iterator[bytes]:
    """A body sent chunked (no Content-Length): JSON of `total` bytes, 10 at a time."""
    body = b'{"prompt": "' + b"x" * (total - 14) + b'"}'
    assert len(body) == total
    for start in range(0, total, 10):
        yield body[start : start + 10]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_chunked_body_over_limit_is_413(path: str) -> None:
    """Counted as it streams in, also when FastAPI parses it into a model (which turned
    the limit's error into its own 400 "There was an error parsing the body")."""
    client, _ = make_client()
    r = client.post(path, content=chunks(101), headers={"content-type": "application/json"})
    assert "content-length" not in r.request.headers
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "request_too_large"
    ok = client.post(path, content=chunks(100), headers={"content-type": "application/json"})
    assert ok.status_code == 200, ok.text


def test_requests_counted_by_route_and_status() -> None:
    client, registry = make_client()
    client.post("/v1/chat/completions", content=b"x")
    client.get("/elsewhere")
    ok = registry.get_sample_value(
        "gateway_requests_total",
        {"route": "/v1/chat/completions", "method": "POST", "status": "200"},
    )
    other = registry.get_sample_value(
        "gateway_requests_total", {"route": "other", "method": "GET", "status": "404"}
    )
    assert ok == 1 and other == 1


def test_a_templated_route_is_one_label_whatever_the_id() -> None:
    """`/v1/models/{model}` counts every model id under one label (no label per id)."""
    client, registry = make_client()
    for path in ("/v1/models/qwen", "/v1/models//root/Qwen3-0.6B", "/v1/models"):
        client.get(path)
    templated = registry.get_sample_value(
        "gateway_requests_total", {"route": "/v1/models/{model}", "method": "GET", "status": "404"}
    )
    other = registry.get_sample_value(
        "gateway_requests_total", {"route": "other", "method": "GET", "status": "404"}
    )
    assert templated == 2 and other == 1
