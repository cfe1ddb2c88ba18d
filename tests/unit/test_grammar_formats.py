"""app.grammar_formats: integer ranges and string formats, checked against xgrammar."""

from __future__ import annotations

import pytest

from app.grammar_formats import FORMATS, LARGEST, integer_bounds, integer_range
from app.grammar_keywords import UnsupportedSchema

pytest.importorskip("xgrammar")
accepts = pytest.importorskip("xgrammar.testing")._is_grammar_accept_string


@pytest.mark.parametrize(
    ("low", "high"),
    [(0, 5), (1, None), (None, 5), (-3, 4), (-17, 243), (7, 7), (-100, -5), (95, 1234)],
)
def test_integer_range_is_exact(low: int | None, high: int | None) -> None:
    grammar = f"root ::= {integer_range(low, high)}\n"
    edges = {e + d for e in (low, high) if e is not None for d in (-1, 0, 1)}
    for n in sorted({*range(-130, 130), *edges, 999, 1000, -999, -1000, 5000}):
        inside = (low is None or n >= low) and (high is None or n <= high)
        assert bool(accepts(grammar, str(n))) == inside, n
    assert not accepts(grammar, "-0") and not accepts(grammar, "007")


def test_open_ranges_stop_at_the_grammars_digits() -> None:
    grammar = f"root ::= {integer_range(None, None)}\n"
    assert accepts(grammar, str(LARGEST)) and accepts(grammar, str(-LARGEST))
    assert not accepts(grammar, str(LARGEST + 1))


def test_integer_bounds() -> None:
    assert integer_bounds({"minimum": 1.5, "maximum": 9}) == (2, 9)
    assert integer_bounds({"exclusiveMinimum": 0, "exclusiveMaximum": 10}) == (1, 9)
    assert integer_bounds({"minimum": 0, "exclusiveMinimum": True, "maximum": 3}) == (1, 3)
    assert integer_bounds({"minimum": 2, "exclusiveMinimum": 5}) == (6, None)
    with pytest.raises(UnsupportedSchema):
        integer_bounds({"maximum": "5"})
    with pytest.raises(UnsupportedSchema):
        integer_range(3, 2)


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("date", "1999-12-31", "1999-1-31"),
        ("time", "08:00:00Z", "8:00"),
        ("date-time", "2024-01-01T00:00:00-03:00", "2024-01-01 00:00:00"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("ipv4", "10.0.255.1", "10.0.256.1"),
    ],
)
def test_formats(name: str, good: str, bad: str) -> None:
    grammar = f'root ::= "\\"" {FORMATS[name]} "\\""\n'
    assert accepts(grammar, f'"{good}"')
    assert not accepts(grammar, f'"{bad}"')
