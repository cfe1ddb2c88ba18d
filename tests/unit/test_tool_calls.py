"""app.tool_calls: whole-answer parsing and the streaming parser, which must agree."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator

import pytest

from app.tool_call_body import is_cut_call, split_call
from app.tool_call_stream import merge_deltas
from app.tool_calls import (
    ToolCallDelta,
    ToolCallStream,
    new_call_id,
    parse_tool_calls,
)


def ids() -> Iterator[str]:
    return (f"call_{i}" for i in itertools.count())


def parse(text: str) -> tuple[str, list[tuple[str, str]]]:
    counter = ids()
    content, calls = parse_tool_calls(text, lambda: next(counter))
    return content, [(c.name, c.arguments) for c in calls]


def stream(pieces: list[str]) -> tuple[str, list[tuple[str, str]], list[ToolCallDelta]]:
    counter = ids()
    parser = ToolCallStream(lambda: next(counter))
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    for piece in pieces:
        text, new = parser.feed(piece)
        content.append(text)
        deltas += new
    text, new = parser.finish()
    content.append(text)
    deltas += new
    calls: dict[int, list[str]] = {}
    for delta in deltas:
        entry = calls.setdefault(delta.index, ["", ""])
        if delta.name is not None:
            entry[0] = delta.name
        entry[1] += delta.arguments
    return "".join(content), [(n, a) for _, (n, a) in sorted(calls.items())], deltas


def block(name: str, arguments: object, key: str = "arguments") -> str:
    return f"<tool_call>\n{json.dumps({'name': name, key: arguments})}\n</tool_call>"


WEATHER = block("get_weather", {"city": "Paris", "days": [1, {"x": "}]"}]})
CASES = {
    "one call": (WEATHER, ("", [("get_weather", '{"city": "Paris", "days": [1, {"x": "}]"}]}')])),
    "text then calls": (
        "Let me check.\n" + WEATHER + "\n" + block("now", {}),
        (
            "Let me check.",
            [("get_weather", '{"city": "Paris", "days": [1, {"x": "}]"}]}'), ("now", "{}")],
        ),
    ),
    "text after": (block("a", {"q": 1}) + "\n\nDone.", ("Done.", [("a", '{"q": 1}')])),
    "parameters key": (block("p", {"k": "v"}, "parameters"), ("", [("p", '{"k": "v"}')])),
    "name second": (
        '<tool_call>\n{"arguments": {"x": 1}, "name": "z"}\n</tool_call>',
        ("", [("z", '{"x": 1}')]),
    ),
    "string arguments": (
        '<tool_call>\n{"name": "s", "arguments": "{\\"q\\": 1}"}\n</tool_call>',
        ("", [("s", '{"q": 1}')]),
    ),
    "compact json": (
        '<tool_call>{"name":"c","arguments":{"a":[1,2]}}</tool_call>',
        ("", [("c", '{"a":[1,2]}')]),
    ),
    "unicode": (
        block("u", {"城市": "北京"}),
        ("", [("u", '{"\\u57ce\\u5e02": "\\u5317\\u4eac"}')]),
    ),
    "not json stays content": (
        "Hi <tool_call>nope</tool_call> there",
        ("Hi<tool_call>nope</tool_call> there", []),
    ),
    "no calls": ("Just text.\n", ("Just text.\n", [])),
    "partial tag": ("a <tool", ("a <tool", [])),
    "unclosed but complete": (
        '<tool_call>\n{"name": "u", "arguments": {"a": 1}}',
        ("", [("u", '{"a": 1}')]),
    ),
    "no arguments": ('<tool_call>\n{"name": "n"}\n</tool_call>', ("", [("n", "{}")])),
    # Cut off by max_tokens: one rule for whole and streamed answers (see app.tool_calls).
    "closing tag cut": (
        '<tool_call>\n{"name": "f", "arguments": {"a": 12}}\n</tool_c',
        ("", [("f", '{"a": 12}')]),
    ),
    "outer brace cut": (
        '<tool_call>\n{"name": "f", "arguments": {"a": 12}',
        ("", [("f", '{"a": 12}')]),
    ),
    "arguments cut": (
        'Sure.\n<tool_call>\n{"name": "f", "arguments": {"a": [1, "x',
        ("Sure.", [("f", '{"a": [1, "x')]),
    ),
    "second call cut": (
        block("f", {}) + '\n<tool_call>\n{"name": "f", "arguments": {',
        ("", [("f", "{}"), ("f", "{")]),
    ),
    "cut before the arguments": ('Hi\n<tool_call>\n{"name": "f", "argu', ("Hi", [])),
    "cut after the tag": ("Hi <tool_call>\n", ("Hi", [])),
    "string arguments cut": ('<tool_call>\n{"name": "s", "arguments": "{\\"q', ("", [])),
    "closed early": (
        '<tool_call>\n{"name": "f", "arguments": {"a": 1</tool_call> ok',
        ("ok", [("f", '{"a": 1')]),
    ),
    "unclosed prose stays": ("Use <tool_call> tags", ("Use<tool_call> tags", [])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_parse_tool_calls(name: str) -> None:
    text, expected = CASES[name]
    assert parse(text) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_stream_agrees_with_parse_for_every_split(name: str) -> None:
    text, expected = CASES[name]
    rng = random.Random(name)
    splits = [[text], list(text)]  # whole, and one character at a time
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 6))))
        splits.append([text[i:j] for i, j in itertools.pairwise([0, *cuts, len(text)])])
    for pieces in splits:
        content, calls, _ = stream(pieces)
        assert (content, calls) == expected, pieces


def test_stream_deltas_are_openai_shaped() -> None:
    pieces = ["Sure", '.\n<tool_call>\n{"name": "get_weather", ', '"arguments": {"ci', 'ty": "Pa']
    pieces += ['ris"}}\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>']
    content, calls, deltas = stream(pieces)
    assert content == "Sure."
    assert calls == [("get_weather", '{"city": "Paris"}'), ("now", "{}")]
    first = deltas[0].wire()
    assert first == {
        "index": 0,
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"ci'},
    }
    assert deltas[1].wire() == {"index": 0, "function": {"arguments": 'ty": "Pa'}}
    assert [d.index for d in deltas] == [0, 0, 0, 1]
    assert deltas[-1].id == "call_1"


def test_truncated_arguments_come_back_as_far_as_they_went() -> None:
    text = '<tool_call>\n{"name": "u", "arguments": {"a": '
    content, calls, _ = stream([text])
    assert (content, calls) == ("", [("u", '{"a": ')])
    assert parse(text) == (content, calls)  # whole answers: the same call, no raw markup


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_every_cut_of_a_forced_answer_parses_alike(size: int) -> None:
    """`max_tokens` may end a grammar-forced answer anywhere: for each prefix, the whole
    answer and the stream (fed in `size`-character tokens) give the same content and calls,
    and no `<tool_call>` block reaches the content (a partial opening tag at the very end
    stays text: it may be prose, as in "a <tool")."""
    answer = block("f", {"a": 12, "b": ["x", {"c": None}]}) + "\n" + block("g", {})
    for end in range(len(answer) + 1):
        text = answer[:end]
        whole = parse(text)
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        content, calls, _ = stream(pieces)
        assert (content, calls) == whole, text
        assert "<tool_call>" not in content, text


def test_called_flag() -> None:
    parser = ToolCallStream()
    parser.feed("hello")
    assert not parser.called
    parser.feed('<tool_call>{"name": "x", "arguments": {}}</tool_call>')
    assert parser.called


def test_merge_deltas() -> None:
    head = ToolCallDelta(0, "", "call_a", "f")
    merged = merge_deltas(
        [head, ToolCallDelta(0, "{"), ToolCallDelta(0, "}"), ToolCallDelta(1, "", "b", "g")]
    )
    assert merged == [ToolCallDelta(0, "{}", "call_a", "f"), ToolCallDelta(1, "", "b", "g")]


def test_split_call() -> None:
    assert split_call('{"name": "f", "arguments": {"a": 1}}') == ("f", '{"a": 1}')
    assert split_call('{"name": 1}') is None
    assert split_call("[1]") is None
    assert split_call("nope") is None


def test_is_cut_call() -> None:
    assert is_cut_call("") and is_cut_call("\n") and is_cut_call('\n{"na')
    assert not is_cut_call(" tags to call tools")


def test_new_call_id() -> None:
    first, second = new_call_id(), new_call_id()
    assert first.startswith("call_") and len(first) == 29
    assert first != second
