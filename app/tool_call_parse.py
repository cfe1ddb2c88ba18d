"""Parse the ``<tool_call>`` blocks of a complete answer into content and `ToolCall`s.

`split_call` reads one call's JSON body; the streaming parser (`app.tool_call_stream`)
uses it, `CALL_HEADER` and `WHITESPACE` too, so both agree on what a call is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from app.tool_call_tags import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from app.tool_call_types import ToolCall, new_call_id

__all__ = ["CALL_HEADER", "WHITESPACE", "parse_tool_calls", "split_call"]

CALL_HEADER = re.compile(
    r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*', re.DOTALL
)
WHITESPACE = " \t\r\n"


def split_call(body: str) -> tuple[str, str] | None:
    """``(name, arguments_json)`` of a call's JSON body, or None if it isn't one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    key = "arguments" if "arguments" in data else "parameters"
    value = data.get(key, {})
    if isinstance(value, str):  # some models send the arguments as a JSON string
        return data["name"], value
    header = CALL_HEADER.match(body)
    if header is not None:
        raw = body[header.end() :].rstrip(WHITESPACE)
        if raw.endswith("}"):
            raw = raw[:-1].rstrip(WHITESPACE)
            try:
                if json.loads(raw) == value:
                    return data["name"], raw
            except ValueError:
                pass
    return data["name"], json.dumps(value, ensure_ascii=False)


def parse_tool_calls(
    text: str, new_id: Callable[[], str] = new_call_id
) -> tuple[str, list[ToolCall]]:
    """``(content, calls)`` from a complete answer."""
    calls: list[ToolCall] = []
    parts: list[str] = []
    pos = 0
    strip_next = False
    while True:
        start = text.find(TOOL_CALL_OPEN, pos)
        if start == -1:
            break
        body_start = start + len(TOOL_CALL_OPEN)
        end = text.find(TOOL_CALL_CLOSE, body_start)
        body = text[body_start:] if end == -1 else text[body_start:end]
        after = len(text) if end == -1 else end + len(TOOL_CALL_CLOSE)
        parts.append(_lstrip(text[pos:start], strip_next).rstrip(WHITESPACE))
        found = split_call(body)
        if found is None:
            parts.append(text[start:after])
        else:
            calls.append(ToolCall(new_id(), found[0], found[1]))
        strip_next = found is not None
        pos = after
    parts.append(_lstrip(text[pos:], strip_next))
    return "".join(parts), calls


def _lstrip(text: str, strip: bool) -> str:
    return text.lstrip(WHITESPACE) if strip else text
