from __future__ import annotations

import pytest

from app.text import INVISIBLE_CHARS, find_unencodable, strip_invisible

EXPECTED_INVISIBLE = {
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u180e",
    "\u2061",
    "\u2062",
    "\u2063",
    "\u2064",
    "\u200e",
    "\u200f",
}


def test_invisible_set_is_exactly_the_spec() -> None:
    assert INVISIBLE_CHARS == EXPECTED_INVISIBLE
    assert isinstance(INVISIBLE_CHARS, frozenset)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("hello", "hello"),
        ("he\u200bllo", "hello"),
        ("\ufeffBOM at start", "BOM at start"),
        ("soft\u00adhyphen", "softhyphen"),
        ("\u202eevil\u202c", "evil"),
        ("\u2066iso\u2069", "iso"),
        ("a\u2061b\u2062c\u2063d\u2064e", "abcde"),
        ("\u200eLRM\u200fRLM", "LRMRLM"),
        ("mongolian\u180esep", "mongoliansep"),
        ("word\u2060joiner", "wordjoiner"),
        ("zw\u200cnj", "zwnj"),
        ("你好\u200b世界", "你好世界"),
        ("".join(sorted(EXPECTED_INVISIBLE)), ""),
        # U+200D is removed even inside emoji ZWJ sequences (by spec).
        ("👨\u200d👩\u200d👧", "👨👩👧"),
    ],
)
def test_strip_invisible(text: str, expected: str) -> None:
    assert strip_invisible(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii\t\n",
        "你好，世界！",
        "emoji 😀👍🏽 flags 🇯🇵",
        "e\u0301 combining accent",
        "variation ❤\ufe0f selector",
        "nbsp\u00a0and ideographic\u3000space",
        "Ａｒａｂｉｃ مرحبا עברית",
    ],
)
def test_visible_text_is_returned_as_is(text: str) -> None:
    # Fast path: the very same object when nothing needs removing.
    assert strip_invisible(text) is text


def test_each_invisible_char_is_removed_individually() -> None:
    for ch in EXPECTED_INVISIBLE:
        assert strip_invisible(f"x{ch}y{ch}") == "xy", hex(ord(ch))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("ascii", None),
        ("你好😀", None),
        ("\ud800", 0),
        ("ab\udfff", 2),
        ("好\udc00x\ud800", 1),
        ("😀\ud83d", 1),  # index counts code points, not UTF-16 units
        ("\ud83d\ude00", 0),  # a "pair" of surrogate code points is still unencodable
    ],
)
def test_find_unencodable(text: str, expected: int | None) -> None:
    assert find_unencodable(text) == expected
