"""One access-log line per request, with the request id and the token counts."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from starlette.responses import JSONResponse, StreamingResponse

from app.access_log import Usage, record_engine_marks, record_mark, record_usage, usage_scope
from app.metrics import gateway_metrics
from app.observe import ObserveMiddleware


def make_app() -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> JSONResponse:
        record_usage(12, 5)
        return JSONResponse({"ok": True})

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        record_mark("prompt")

        async def frames() -> AsyncIterator[bytes]:
            record_mark("first_output")
            yield b"data: 1\n\n"
            record_usage(3, 2)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(frames(), media_type="text/event-stream")

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    app.add_middleware(
        ObserveMiddleware,
        metrics=gateway_metrics(CollectorRegistry()),
        routes=["/v1/chat/completions"],
        access_log=True,
    )
    return app


def access_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "app.access"]


def test_a_line_with_request_fields_and_tokens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="app.access")
    client = TestClient(make_app())
    response = client.post("/v1/chat/completions", headers={"X-Request-Id": "req-1"})
    assert response.status_code == 200
    [rec] = access_records(caplog)
    assert rec.request_id == "req-1"  # type: ignore[attr-defined]
    assert rec.method == "POST"  # type: ignore[attr-defined]
    assert rec.route == "/v1/chat/completions"  # type: ignore[attr-defined]
    assert rec.status == 200  # type: ignore[attr-defined]
    assert 0 <= rec.latency_s < 10  # type: ignore[attr-defined]
    assert (rec.prompt_tokens, rec.completion_tokens) == (12, 5)  # type: ignore[attr-defined]
    assert rec.getMessage().startswith("POST /v1/chat/completions 200 ")
    assert " tokens=12+5 first_byte=" in rec.getMessage()
    assert rec.prompt_ms is None and rec.first_output_ms is None  # type: ignore[attr-defined]
    assert 0 <= rec.first_byte_ms <= rec.latency_s * 1000  # type: ignore[attr-defined]


def test_streamed_responses_report_tokens_after_the_last_frame(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="app.access")
    client = TestClient(make_app())
    assert client.get("/stream").text.endswith("[DONE]\n\n")
    [rec] = access_records(caplog)
    assert (rec.prompt_tokens, rec.completion_tokens) == (3, 2)  # type: ignore[attr-defined]
    marks = [rec.prompt_ms, rec.first_output_ms, rec.first_byte_ms]  # type: ignore[attr-defined]
    assert 0 <= marks[0] <= marks[1] <= marks[2] <= rec.latency_s * 1000  # type: ignore[attr-defined]
    assert rec.getMessage().endswith(
        f"tokens=3+2 prompt={marks[0]:.1f}ms first_output={marks[1]:.1f}ms"
        f" first_byte={marks[2]:.1f}ms"
    )


def test_unknown_tokens_are_none_and_failures_are_500(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="app.access")
    client = TestClient(make_app(), raise_server_exceptions=False)
    assert client.get("/boom").status_code == 500
    assert client.get("/missing").status_code == 404
    boom, missing = access_records(caplog)
    assert boom.status == 500 and boom.prompt_tokens is None  # type: ignore[attr-defined]
    assert missing.status == 404 and missing.route == "/missing"  # type: ignore[attr-defined]
    assert len(boom.request_id) == 32  # type: ignore[attr-defined]  # generated


def test_record_usage_outside_a_request_is_a_no_op() -> None:
    record_usage(1, 2)


def test_a_mark_counts_the_first_time_and_not_outside_a_request() -> None:
    usage = Usage(start=100.0)
    usage.marks["prompt"] = 1.5
    usage.mark("prompt")
    assert usage.marks == {"prompt": 1.5}
    record_mark("prompt")  # no request: nothing to note, no error


@dataclass
class _Stats:
    """The fields of vLLM's RequestStateStats that the access log reads."""

    queued_ts: float
    scheduled_ts: float
    first_token_ts: float
    arrival_time: float = 0.0  # wall clock
    first_token_latency: float = 0.0  # since arrival_time; 0: no first token yet


def test_the_engines_timestamps_become_marks_since_the_request_arrived() -> None:
    start = time.perf_counter()
    usage = Usage(start=start)
    arrival = time.time()  # the request's arrival on the wall clock, as vLLM keeps it
    token = usage_scope.set(usage)
    try:
        record_engine_marks(_Stats(start + 0.002, start + 0.0105, 0.0))  # no first token yet
        record_engine_marks(_Stats(1.0, 1.0, start + 0.03, arrival, 0.032))  # first time counts
        record_engine_marks(None)  # vLLM without stats: nothing
    finally:
        usage_scope.reset(token)
    received = usage.marks.pop("received")
    assert usage.marks == pytest.approx({"queued": 2.0, "scheduled": 10.5, "first_token": 30.0})
    assert received == pytest.approx(32.0, abs=1.0)  # the two clocks read a moment apart
    record_engine_marks(_Stats(1.0, 2.0, 3.0))  # no request: nothing to note, no error
