from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from app.reasoning import THINK_CLOSE, THINK_OPEN, ReasoningStream, split_reasoning

MAX_HELD = len("\n" + THINK_CLOSE) - 1  # "\n" plus a proper prefix of "</think>"


def test_tags() -> None:
    assert THINK_OPEN == "<think>"
    assert THINK_CLOSE == "</think>"


@pytest.mark.parametrize(
    ("text", "in_reasoning", "expected"),
    [
        # Qwen3's usual shape.
        (
            "<think>\nLet me think.\n</think>\n\nThe answer.",
            False,
            ("Let me think.", "The answer."),
        ),
        # whitespace before <think> is content (a stream sends it at once)
        ("  \n<think>\nR\n</think>\n\nA", False, ("R", "  \nA")),
        ("\n<think>\nhalf", False, ("half", "\n")),
        # Only one leading/trailing "\n" is trimmed from reasoning.
        ("<think>\n\nR\n\n</think>A", False, ("\nR\n", "A")),
        ("<think>R</think>A", False, ("R", "A")),
        # All leading newlines of the content are stripped, nothing else.
        ("<think>R</think>\n\n\n  A\n", False, ("R", "  A\n")),
        # Empty think block: reasoning "" (not None), content after separator.
        ("<think>\n\n</think>\n\nHello", False, ("", "Hello")),
        ("<think>\n\n</think>\n\n", False, ("", "")),
        ("<think></think>", False, ("", "")),
        ("<think>\n</think>", False, ("", "")),
        # Truncated: never closed.
        ("<think>\nhalf a thought", False, ("half a thought", "")),
        ("<think>\nhalf a thought\n", False, ("half a thought", "")),
        ("<think>", False, ("", "")),
        ("<think>\nR\n</thi", False, ("R\n</thi", "")),
        # No think block.
        ("Hello world", False, (None, "Hello world")),
        ("\n\nHello", False, (None, "\n\nHello")),
        ("", False, (None, "")),
        ("<thinking>x", False, (None, "<thinking>x")),
        ("a <think>b", False, (None, "a <think>b")),
        # Opening tag omitted by the model.
        ("reasoning</think>\n\nanswer", False, ("reasoning", "answer")),
        ("\nreasoning\n</think>\n\nanswer", False, ("reasoning", "answer")),
        ("x <think>y</think>z", False, ("x <think>y", "z")),
        # Only the first </think> closes; later ones are content.
        ("<think>a</think>b</think>c", False, ("a", "b</think>c")),
        # A nested <think> inside reasoning is just text.
        ("<think><think>a</think>b", False, ("<think>a", "b")),
        # in_reasoning: the prompt already opened <think>.
        ("\nR\n</think>\n\nA", True, ("R", "A")),
        ("R", True, ("R", "")),
        ("", True, ("", "")),
        ("</think>A", True, ("", "A")),
        ("<think>R</think>A", True, ("<think>R", "A")),  # literal: no re-opening
    ],
)
def test_split_reasoning(text: str, in_reasoning: bool, expected: tuple[str | None, str]) -> None:
    assert split_reasoning(text, in_reasoning=in_reasoning) == expected


# --------------------------------------------------------------------------- streaming


def _stream_expected(text: str, in_reasoning: bool) -> tuple[str, str]:
    """What a stream must produce: split_reasoning, except the documented case."""
    if not in_reasoning and not text.lstrip().startswith(THINK_OPEN) and THINK_CLOSE in text:
        return "", text  # stream cannot retroactively turn content into reasoning
    reasoning, content = split_reasoning(text, in_reasoning=in_reasoning)
    return reasoning or "", content


def _run(pieces: Sequence[str], in_reasoning: bool) -> tuple[str, str]:
    stream = ReasoningStream(in_reasoning=in_reasoning)
    reasoning: list[str] = []
    content: list[str] = []
    for piece in pieces:
        r, c = stream.feed(piece)
        reasoning.append(r)
        content.append(c)
        assert len(stream._held) <= MAX_HELD
    r, c = stream.finish()
    reasoning.append(r)
    content.append(c)
    assert stream.finish() == ("", "")  # idempotent
    return "".join(reasoning), "".join(content)


def _split_at(text: str, cuts: Sequence[int]) -> list[str]:
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


CORPUS = [
    "<think>\nLet me think.\n</think>\n\nThe answer.",
    "  \n<think>\nR\n</think>\n\nA",
    "<think>\n\nR\n\n</think>A",
    "<think>\n\n</think>\n\nHello",
    "<think>\n\n</think>\n\n",
    "<think></think>",
    "<think>\nhalf\n",
    "<think>\nR\n</thi",
    "<think>a<b</t</th\n</think\n</think>\n\n<think>x</think>",
    "<think>\n\n\n</think>\n\n\n",
    "Hello <think> world",
    "\n\n <thi",
    "<thinking>",
    "   ",
    "",
    "<",
    "你好<think>\n想\n</think>\n\n答",
    "<think>\n想一想😀\n</think>\n\n答案😀",
]


@pytest.mark.parametrize("in_reasoning", [False, True])
@pytest.mark.parametrize("text", CORPUS)
def test_stream_every_one_and_two_cut_split(text: str, in_reasoning: bool) -> None:
    expected = _stream_expected(text, in_reasoning)
    positions = range(len(text) + 1)
    for cuts in itertools.chain(
        [()], itertools.combinations(positions, 1), itertools.combinations(positions, 2)
    ):
        assert _run(_split_at(text, cuts), in_reasoning) == expected, cuts


@pytest.mark.parametrize("in_reasoning", [False, True])
@pytest.mark.parametrize("text", CORPUS)
def test_stream_char_by_char_with_empty_deltas(text: str, in_reasoning: bool) -> None:
    expected = _stream_expected(text, in_reasoning)
    pieces = [p for ch in text for p in (ch, "")]
    assert _run(["", *pieces], in_reasoning) == expected


FRAGMENTS = [
    THINK_OPEN,
    THINK_CLOSE,
    "\n",
    "\n\n",
    " ",
    "a",
    "好",
    "😀",
    "<",
    "</",
    "</th",
    "<thi",
    "think>",
    "ink>",
    ">",
    "/",
    "\t",
]


def _random_text(rng: random.Random) -> str:
    parts = rng.choices(FRAGMENTS, k=rng.randint(0, 12))
    if rng.random() < 0.5:
        parts.insert(0, rng.choice(["", " ", "\n"]) + THINK_OPEN)
    return "".join(parts)


@pytest.mark.parametrize("seed", range(20))
def test_stream_random_splits(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        text = _random_text(rng)
        in_reasoning = rng.random() < 0.3
        expected = _stream_expected(text, in_reasoning)
        n_cuts = rng.randint(0, len(text))
        cuts = [rng.randint(0, len(text)) for _ in range(n_cuts)]
        assert _run(_split_at(text, cuts), in_reasoning) == expected, (text, cuts)


def test_stream_property_with_hypothesis() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=500, deadline=None)  # type: ignore[untyped-decorator]
    @hypothesis.given(  # type: ignore[untyped-decorator]
        parts=st.lists(st.sampled_from(FRAGMENTS), max_size=15),
        cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=20),
        in_reasoning=st.booleans(),
    )
    def check(parts: list[str], cuts: list[int], in_reasoning: bool) -> None:
        text = "".join(parts)
        cuts = [min(c, len(text)) for c in cuts]
        assert _run(_split_at(text, cuts), in_reasoning) == _stream_expected(text, in_reasoning)

    check()


# Early emission: text comes out as soon as it cannot change meaning.


def test_plain_content_is_emitted_at_once() -> None:
    s = ReasoningStream()
    assert s.feed("Hello") == ("", "Hello")
    assert s.feed(" world</think>") == ("", " world</think>")
    assert s.finish() == ("", "")


def test_leading_whitespace_is_content_at_once() -> None:
    s = ReasoningStream()
    assert s.feed("\n ") == ("", "\n ")
    assert s.feed("Hi") == ("", "Hi")
    s = ReasoningStream()
    assert s.feed("\n") == ("", "\n")  # not held in case a <think> follows
    assert s.feed(" <thi") == ("", " ")
    assert s.feed("nk>\nR</think>\n\nA") == ("R", "A")
    assert s.finish() == ("", "")


def test_partial_open_tag_held_then_released() -> None:
    s = ReasoningStream()
    assert s.feed("<thi") == ("", "")
    assert s.feed("s is html") == ("", "<this is html")


def test_split_open_tag() -> None:
    s = ReasoningStream()
    assert s.feed("<thi") == ("", "")
    assert s.feed("nk>\nStep") == ("Step", "")


def test_reasoning_emitted_at_once_and_close_tag_split() -> None:
    s = ReasoningStream()
    assert s.feed("<think>\n") == ("", "")
    assert s.feed("one two") == ("one two", "")
    assert s.feed(" three\n</th") == (" three", "")  # holds "\n</th" only
    assert s.feed("ink>\n") == ("", "")
    assert s.feed("\nAnswer") == ("", "Answer")
    assert s.feed(" more\n\n") == ("", " more\n\n")
    assert s.finish() == ("", "")


def test_false_close_prefix_released() -> None:
    s = ReasoningStream(in_reasoning=True)
    assert s.feed("a </t") == ("a ", "")
    assert s.feed("able>") == ("</table>", "")


def test_newline_held_only_until_next_char() -> None:
    s = ReasoningStream(in_reasoning=True)
    assert s.feed("line1\n") == ("line1", "")
    assert s.feed("line2") == ("\nline2", "")


def test_truncated_reasoning_flushes_on_finish() -> None:
    s = ReasoningStream()
    assert s.feed("<think>\nabc\n</thin") == ("abc", "")
    assert s.finish() == ("\n</thin", "")


def test_unclosed_partial_open_tag_flushes_as_content() -> None:
    s = ReasoningStream()
    assert s.feed(" <think") == ("", " ")
    assert s.finish() == ("", "<think")


def test_missing_open_tag_is_streamed_as_content() -> None:
    # Documented divergence from split_reasoning: no retroactive reclassification.
    text = "reasoning</think>\n\nanswer"
    assert split_reasoning(text) == ("reasoning", "answer")
    s = ReasoningStream()
    assert s.feed(text) == ("", text)


def test_long_stream_holds_bounded_text() -> None:
    s = ReasoningStream()
    s.feed("<think>")
    emitted = 0
    for i in range(20000):
        r, c = s.feed("x\n" if i % 2 else "</")
        emitted += len(r)
        assert c == ""
        assert len(s._held) <= MAX_HELD
    assert emitted > 2 * 20000 - 10
