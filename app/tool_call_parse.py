"""Parse the ``<tool_call>`` blocks of a complete answer into content and `ToolCall`s.

A whole answer is read by the streaming parser (`app.tool_call_stream`) in one piece, so
a whole and a streamed answer made of the same text give the same content and calls, even
when `max_tokens` cut a call short (the rule is in `app.tool_calls`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.tool_call_stream import ToolCallStream
from app.tool_call_types import ToolCall, ToolCallDelta, new_call_id

__all__ = ["join_deltas", "parse_tool_calls"]


def parse_tool_calls(
    text: str, new_id: Callable[[], str] = new_call_id
) -> tuple[str, list[ToolCall]]:
    """``(content, calls)`` from a complete answer."""
    parser = ToolCallStream(new_id)
    content, deltas = parser.feed(text)
    rest, more = parser.finish()
    return content + rest, join_deltas([*deltas, *more])


def join_deltas(deltas: Sequence[ToolCallDelta]) -> list[ToolCall]:
    """The whole calls that a sequence of streamed deltas adds up to, in index order."""
    heads: dict[int, ToolCallDelta] = {}
    arguments: dict[int, list[str]] = {}
    for delta in deltas:
        if delta.id is not None:
            heads[delta.index] = delta
        arguments.setdefault(delta.index, []).append(delta.arguments)
    return [
        ToolCall(head.id or "", head.name or "", "".join(arguments[index]))
        for index, head in sorted(heads.items())
    ]
