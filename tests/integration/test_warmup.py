"""The start-up warm-up on the real engine: it ran, whole, before the gateway started
serving."""

from __future__ import annotations

from tests.integration.conftest import LiveGateway


def test_gateway_warmed_up_before_it_served(gateway: LiveGateway) -> None:
    log = gateway.log.read_text(errors="replace")
    assert "warm-up failed" not in log
    assert "warm-up: 34 requests in batches of 1/16/17" in log
    # uvicorn reports start-up complete when the lifespan has yielded: after the warm-up
    assert log.index("warm-up: 34 requests") < log.index("Application startup complete")
