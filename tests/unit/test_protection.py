"""API keys, admission control, request ids and the drain bookkeeping, without the engine."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from app.admission import AdmissionMiddleware, admission_metrics
from app.auth import OPEN_PATHS, ApiKeyMiddleware, bearer_token, key_matches, load_keys
from app.errors import install_error_handlers
from app.lifecycle import Lifecycle
from app.metrics import gateway_metrics
from app.observe import ObserveMiddleware
from app.request_id import RequestIdFilter, current_request_id, pick_request_id
from app.shared_pending import SharedPending


def test_load_keys_from_setting_and_file(tmp_path: Path) -> None:
    key_file = tmp_path / "keys"
    key_file.write_text("# comment\nfile-key\n\nsecond\n")
    assert load_keys(" a , b,,a", str(key_file)) == (b"a", b"b", b"file-key", b"second")
    assert load_keys("", None) == ()


def test_key_matching_and_bearer_parsing() -> None:
    assert key_matches(b"b", (b"a", b"b"))
    assert not key_matches(b"c", (b"a", b"b"))
    assert not key_matches(b"", (b"a",))
    assert bearer_token([(b"authorization", b"Bearer  tok ")]) == b"tok"
    assert bearer_token([(b"authorization", b"Basic xyz")]) is None
    assert bearer_token([]) is None


def make_app(lifecycle: Lifecycle, keys: tuple[bytes, ...] = ()) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/v1/chat/completions")
    async def chat() -> dict[str, str]:
        return {"ok": "yes"}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    app.add_middleware(
        AdmissionMiddleware, lifecycle=lifecycle, metrics=admission_metrics(CollectorRegistry())
    )
    if keys:
        app.add_middleware(ApiKeyMiddleware, keys=keys, open_paths=OPEN_PATHS)
    app.add_middleware(
        ObserveMiddleware, metrics=gateway_metrics(CollectorRegistry()), routes=["/health"]
    )
    return app


def test_api_key_required_except_on_open_paths() -> None:
    client = TestClient(make_app(Lifecycle(max_pending=4), keys=(b"k1", b"k2")))
    r = client.post("/v1/chat/completions")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert r.headers["www-authenticate"] == "Bearer"
    assert (
        client.post("/v1/chat/completions", headers={"Authorization": "Bearer bad"}).status_code
        == 401
    )
    assert (
        client.post("/v1/chat/completions", headers={"Authorization": "Bearer k2"}).status_code
        == 200
    )
    assert client.get("/health").status_code == 200


@pytest.mark.parametrize(
    ("state", "code"),
    [({"engine_dead": True}, "engine_dead"), ({"draining": True}, "server_shutting_down")],
)
def test_admission_rejects_when_not_serving(state: dict[str, bool], code: str) -> None:
    lifecycle = Lifecycle(max_pending=4, **state)
    r = TestClient(make_app(lifecycle)).post("/v1/chat/completions")
    assert r.status_code == 503
    assert r.json()["error"]["code"] == code
    assert "retry-after" in r.headers
    assert lifecycle.in_flight == 0


def test_admission_limit_and_release() -> None:
    lifecycle = Lifecycle(max_pending=1)
    assert lifecycle.admit() is None
    assert lifecycle.admit() == "overloaded"
    lifecycle.release()
    assert lifecycle.admit() is None
    lifecycle.release()
    r = TestClient(make_app(lifecycle)).post("/v1/chat/completions")
    assert r.status_code == 200 and lifecycle.in_flight == 0


def test_workers_share_one_admission_limit() -> None:
    """Two HTTP workers' lifecycles with one shared count: `max_pending` bounds both
    together (counted per worker, four workers let in four times the limit)."""
    shared = SharedPending()
    first = Lifecycle(max_pending=2, shared=shared)
    second = Lifecycle(max_pending=2, shared=shared)
    assert first.admit() is None and second.admit() is None
    assert first.admit() == "overloaded" and second.admit() == "overloaded"
    assert (first.in_flight, second.in_flight, shared.value) == (1, 1, 2)
    second.release()
    assert first.admit() is None
    assert (first.in_flight, second.in_flight, shared.value) == (2, 0, 2)


def test_drain_waits_for_in_flight_then_reports_leftovers() -> None:
    async def scenario() -> tuple[int, int]:
        lifecycle = Lifecycle(max_pending=4)
        lifecycle.admit()
        asyncio.get_running_loop().call_later(0.05, lifecycle.release)
        finished = await lifecycle.drain(2.0)
        lifecycle.draining = False
        lifecycle.admit()
        stuck = await lifecycle.drain(0.05)
        return finished, stuck

    assert asyncio.run(scenario()) == (0, 1)


def test_request_id_kept_when_sane_else_generated() -> None:
    assert pick_request_id([(b"x-request-id", b"abc-123")]) == "abc-123"
    made = pick_request_id([(b"x-request-id", b"bad id with spaces")])
    assert made != "bad id with spaces" and len(made) == 32
    client = TestClient(make_app(Lifecycle(max_pending=4)))
    assert client.get("/health", headers={"X-Request-Id": "r-1"}).headers["x-request-id"] == "r-1"


def test_log_records_carry_the_request_id() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    token = current_request_id.set("req-9")
    try:
        RequestIdFilter().filter(record)
    finally:
        current_request_id.reset(token)
    assert record.request_id == "req-9"  # type: ignore[attr-defined]


def test_cors_from_settings() -> None:
    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(cors_allow_origins="https://ui.example", api_key="k"))
    client = TestClient(app)  # no lifespan: the middleware answers preflights alone
    preflight = client.options(
        "/v1/chat/completions",
        headers={
            "Origin": "https://ui.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://ui.example"
    other = client.options(
        "/v1/chat/completions",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in other.headers
    assert (
        "access-control-allow-origin"
        not in TestClient(create_app(Settings()))
        .options(
            "/v1/models",
            headers={"Origin": "https://ui.example", "Access-Control-Request-Method": "GET"},
        )
        .headers
    )
