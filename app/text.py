"""Text hygiene helpers: invisible-character stripping and surrogate detection."""

from __future__ import annotations

import functools

__all__ = ["INVISIBLE_CHARS", "find_unencodable", "strip_invisible"]

INVISIBLE_CHARS: frozenset[str] = frozenset(
    {
        "\u00ad",  # SOFT HYPHEN
        "\u180e",  # MONGOLIAN VOWEL SEPARATOR
        "\u200b",  # ZERO WIDTH SPACE
        "\u200c",  # ZERO WIDTH NON-JOINER
        "\u200d",  # ZERO WIDTH JOINER
        "\u200e",  # LEFT-TO-RIGHT MARK
        "\u200f",  # RIGHT-TO-LEFT MARK
        "\u202a",  # LEFT-TO-RIGHT EMBEDDING
        "\u202b",  # RIGHT-TO-LEFT EMBEDDING
        "\u202c",  # POP DIRECTIONAL FORMATTING
        "\u202d",  # LEFT-TO-RIGHT OVERRIDE
        "\u202e",  # RIGHT-TO-LEFT OVERRIDE
        "\u2060",  # WORD JOINER
        "\u2061",  # FUNCTION APPLICATION
        "\u2062",  # INVISIBLE TIMES
        "\u2063",  # INVISIBLE SEPARATOR
        "\u2064",  # INVISIBLE PLUS
        "\u2066",  # LEFT-TO-RIGHT ISOLATE
        "\u2067",  # RIGHT-TO-LEFT ISOLATE
        "\u2068",  # FIRST STRONG ISOLATE
        "\u2069",  # POP DIRECTIONAL ISOLATE
        "\ufeff",  # ZERO WIDTH NO-BREAK SPACE / BOM
    }
)


@functools.cache
def _translate_table() -> dict[int, None]:
    return {ord(ch): None for ch in INVISIBLE_CHARS}


@functools.cache
def _invisible_tuple() -> tuple[str, ...]:
    return tuple(sorted(INVISIBLE_CHARS))


def strip_invisible(text: str) -> str:
    """Return ``text`` without any character in :data:`INVISIBLE_CHARS`.

    Every other character (CJK, emoji, combining marks, variation selectors,
    ordinary whitespace) is kept.  Note that U+200D ZERO WIDTH JOINER is removed
    as well, by spec, so emoji ZWJ sequences such as "👨\u200d👩\u200d👧" degrade
    into their component emoji ("👨👩👧").

    When nothing needs removing, the very same object is returned (ASCII text
    and text without invisible characters are detected without copying).
    """
    # All invisible chars are non-ASCII; for other text a handful of C-level
    # substring scans is far cheaper than a translate() that copies.
    if text.isascii() or not any(ch in text for ch in _invisible_tuple()):
        return text
    return text.translate(_translate_table())


def find_unencodable(text: str) -> int | None:
    """Return the index of the first surrogate code point (U+D800–U+DFFF), or None.

    A Python ``str`` holds code points, not UTF-16 code units, so any surrogate
    in it is "lone" (a valid pair would have been decoded into one astral code
    point) and cannot be encoded as UTF-8.
    """
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # The strict UTF-8 encoder fails only on surrogates; exc.start is the
        # first offending index.
        return exc.start
    return None
