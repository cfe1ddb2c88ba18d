"""Path tolerance, body limit, request metrics and request ids, on a bare app."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from app.errors import GatewayError, install_error_handlers
from app.metrics import COMMON_ERROR_CODES, NORMALIZATION_KINDS, TURN_SOURCES, gateway_metrics
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

    @app.get("/stream-error")
    async def stream_error() -> StreamingResponse:
        async def frames() -> AsyncIterator[bytes]:
            yield b"data: {}\n\n"
            yield b"data: " + GatewayError("gone", status=500, code="engine_error").to_bytes()

        return StreamingResponse(frames(), media_type="text/event-stream")

    @app.get("/crash")
    async def crash() -> None:
        raise RuntimeError("bug")

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


def test_errors_counted_by_code_whole_streamed_and_unexpected() -> None:
    """gateway_errors_total{code}: every error body sent, a stream's error frame and the
    500 of an unexpected exception included (the counter existed but counted nothing)."""
    client, registry = make_client()
    client.post("/v1/chat/completions", content=b"x" * 101)  # 413 from a middleware
    client.post("/v1/completions", content=b"{}", headers={"content-type": "application/json"})
    client.get("/nowhere")
    assert client.get("/stream-error").status_code == 200
    crashing = TestClient(client.app, raise_server_exceptions=False)
    assert crashing.get("/crash").status_code == 500
    client.post("/v1/chat/completions", content=b"fine")

    def count(code: str) -> float | None:
        return registry.get_sample_value("gateway_errors_total", {"code": code})

    assert count("request_too_large") == 1
    assert count("invalid_request") == 1  # the missing `prompt`
    assert count("not_found") == 1
    assert count("engine_error") == 1
    assert count("internal_error") == 1
    total = sum(
        s.value
        for metric in registry.collect()
        if metric.name == "gateway_errors"
        for s in metric.samples
        if s.name == "gateway_errors_total"
    )
    assert total == 5


def test_common_error_codes_and_normalization_kinds_start_at_zero() -> None:
    registry = CollectorRegistry()
    gateway_metrics(registry)
    for code in COMMON_ERROR_CODES:
        assert registry.get_sample_value("gateway_errors_total", {"code": code}) == 0
    for kind in NORMALIZATION_KINDS:
        assert registry.get_sample_value("gateway_normalizations_total", {"kind": kind}) == 0
    for source in TURN_SOURCES:
        assert (
            registry.get_sample_value("gateway_prompt_turn_tokens_total", {"source": source}) == 0
        )


def test_turn_tokens_are_counted_by_source() -> None:
    registry = CollectorRegistry()
    metrics = gateway_metrics(registry)
    metrics.count_turn_tokens(40, 3)
    metrics.count_turn_tokens(0, 5)
    got = {
        s: registry.get_sample_value("gateway_prompt_turn_tokens_total", {"source": s})
        for s in TURN_SOURCES
    }
    assert got == {"remembered": 40, "encoded": 8}


def test_every_normalization_kind_the_code_counts_is_listed() -> None:
    """The kinds counted in app/chat/normalize.py and app/completions/prepare.py are the
    ones exported at 0 from the start (a new kind must be added to the list)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "app"
    chat = (root / "chat" / "normalize.py").read_text()
    completions = (root / "completions" / "prepare.py").read_text()
    counted = set(re.findall(r'fired\.append\("(\w+)"\)', chat))
    counted |= set(re.findall(r'\("(\w+)", (?:stripped|bool\(defaults\))\)', completions))
    assert len(counted) >= 7 and counted <= set(NORMALIZATION_KINDS), counted
