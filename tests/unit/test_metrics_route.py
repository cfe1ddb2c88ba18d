"""`/metrics`'s encoding choice and body (the route itself is tested live)."""

from __future__ import annotations

import gzip

import pytest
from prometheus_client.parser import text_string_to_metric_families

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


def test_exposition_gzipped_is_the_same_text() -> None:
    plain = exposition(False)
    packed = exposition(True)
    assert packed[:2] == b"\x1f\x8b" and len(packed) < len(plain)
    assert gzip.decompress(packed) == plain
    assert any(True for _ in text_string_to_metric_families(plain.decode()))
