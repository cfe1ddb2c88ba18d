"""EBNF for the JSON Schema value constraints that the grammars spell exactly: integer
bounds (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`) as digit ranges,
and the string `format`s `date`, `time`, `date-time`, `uuid` and `ipv4` (RFC 3339 /
RFC 4122 syntax; a date's day is 01-31 whatever the month)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from app.grammar_ebnf import MAX_DIGITS
from app.grammar_keywords import UnsupportedSchema

__all__ = ["FORMATS", "LARGEST", "integer_bounds", "integer_range"]

LARGEST: Final = 10**MAX_DIGITS - 1  # the grammars write at most MAX_DIGITS digits

_DATE = '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])'
_HOUR = '([01] [0-9] | "2" [0-3])'
_TIME = (
    f'{_HOUR} ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{{1,9}})? '
    f'("Z" | [+-] {_HOUR} ":" [0-5] [0-9])'
)
_HEX = "[0-9a-fA-F]"
_OCTET = '("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])'
# What goes between a string's quotes, per format.
FORMATS: Final[Mapping[str, str]] = {
    "date": _DATE,
    "time": _TIME,
    "date-time": f'{_DATE} "T" {_TIME}',
    "uuid": ' "-" '.join(f"{_HEX}{{{n}}}" for n in (8, 4, 4, 4, 12)),
    "ipv4": ' "." '.join([_OCTET] * 4),
}


def integer_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The inclusive integer range of an integer schema's bound keywords (None: open).

    Reads the numeric (2020-12) forms and draft 4's boolean `exclusiveMinimum` /
    `exclusiveMaximum` next to `minimum` / `maximum`.
    """
    low: int | None = None
    high: int | None = None
    for key, value in schema.items():
        if key not in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            continue
        if isinstance(value, bool):
            continue  # draft 4: read with minimum / maximum below
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise UnsupportedSchema(f"{key} must be a number")
        if key == "minimum":
            bound = math.ceil(value) + (1 if schema.get("exclusiveMinimum") is True else 0)
        elif key == "exclusiveMinimum":
            bound = math.floor(value) + 1
        elif key == "maximum":
            bound = math.floor(value) - (1 if schema.get("exclusiveMaximum") is True else 0)
        else:
            bound = math.ceil(value) - 1
        if key.endswith("inimum"):
            low = bound if low is None else max(low, bound)
        else:
            high = bound if high is None else min(high, bound)
    return low, high


def integer_range(low: int | None, high: int | None) -> str:
    """An EBNF expression for the integers in [low, high] (None: as far as the grammars'
    digits go), written as JSON writes them (no leading zeros, no `-0`)."""
    low = -LARGEST if low is None else max(low, -LARGEST)
    high = LARGEST if high is None else min(high, LARGEST)
    if low > high:
        raise UnsupportedSchema(f"no integer between {low} and {high}")
    options = []
    if high >= 0:
        options += _naturals(max(low, 0), high)
    if low < 0:
        negatives = _naturals(max(-high, 1), -low)
        options.append(f'"-" {_group(negatives)}')
    return _group(options)


def _group(options: list[str]) -> str:
    return options[0] if len(options) == 1 else "(" + " | ".join(options) + ")"


def _naturals(low: int, high: int) -> list[str]:
    """Alternatives for the naturals in [low, high], one digit count at a time."""
    options = []
    for digits in range(len(str(low)), len(str(high)) + 1):
        first = max(low, 10 ** (digits - 1) if digits > 1 else 0)
        last = min(high, 10**digits - 1)
        options += _same_length(str(first), str(last))
    return options


def _same_length(low: str, high: str) -> list[str]:
    """Alternatives for the digit strings of one length between `low` and `high`."""
    if len(low) == 1:
        return [_digit(int(low), int(high))]
    if low[0] == high[0]:
        return [f'"{low[0]}" {_group(_same_length(low[1:], high[1:]))}']
    rest = len(low) - 1
    options = []
    start, end = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:
        options.append(f'"{low[0]}" {_group(_same_length(low[1:], "9" * rest))}')
        start += 1
    tail = []
    if high[1:] != "9" * rest:
        tail.append(f'"{high[0]}" {_group(_same_length("0" * rest, high[1:]))}')
        end -= 1
    if start <= end:
        options.append(f"{_digit(start, end)} [0-9]{{{rest}}}")
    return options + tail


def _digit(low: int, high: int) -> str:
    return f'"{low}"' if low == high else f"[{low}-{high}]"
