"""`/metrics`'s encoding choice and body (the route itself is tested live)."""

from __future__ import annotations

import gzip

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from app.routes import metrics as metrics_route
from app.routes.metrics import accepts_gzip, exposition


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", False),
        ("identity", False),
        ("gzip", True),
        ("GZIP", True),
        ("gzip, deflate, br", True),  # httpx, browsers
        ("deflate, gzip;q=0.5", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0", False),
        ("*", True),
        ("*;q=0", False),
        ("gzip;q=0, *", False),  # named beats the wildcard
        ("br, *;q=0.1", True),
        ("gzip;q=oops", False),
        ("x-gzip", False),
    ],
)
def test_accepts_gzip(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected


def test_exposition_gzipped_is_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # a registry of its own: the default one's process metrics (CPU seconds, memory)
    # change between two renderings
    registry = CollectorRegistry()
    Counter("gateway_test_total", "a test counter", ["kind"], registry=registry).labels("a").inc(3)
    monkeypatch.setattr(metrics_route, "scrape_registry", lambda: registry)
    plain = exposition(False)
    packed = exposition(True)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == plain
    families = {f.name: f for f in text_string_to_metric_families(plain.decode())}
    assert families["gateway_test"].samples[0].value == 3.0
