"""Schemathesis against the gateway's own OpenAPI schema, with the real engine: no 5xx."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.integration.conftest import LiveGateway


def bounded(body: object) -> object:
    """Keep generated requests cheap: few choices, few tokens (the engine is real)."""
    if isinstance(body, dict):
        if isinstance(body.get("n"), int) and body["n"] > 2:
            body["n"] = 2
        for key in ("max_tokens", "max_completion_tokens", "max_reasoning_tokens"):
            if isinstance(body.get(key), int) and body[key] > 16:
                body[key] = 16
        if isinstance(body.get("min_tokens"), int) and body["min_tokens"] > 16:
            body["min_tokens"] = 16
    return body


def check(case: Any) -> None:
    if case.body is not None:
        case.body = bounded(case.body)
    response = case.call(timeout=60)
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    if case.method.upper() == "HEAD":  # the GET's status and headers, never a body
        assert response.text == "", (case.path, response.text[:500])
        return
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error["code"], str)


def test_no_server_errors(gateway: LiveGateway) -> None:
    schema = schemathesis.openapi.from_url(gateway.base_url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert any(op.path == "/v1/chat/completions" for op in operations)
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=40 if operation.method.upper() == "POST" else 5,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            check(case)

        run()
